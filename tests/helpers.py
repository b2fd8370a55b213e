"""Helpers that several test files share: a failed command's one line of stderr, a tiny model's engine run over made-up token ids, a decode-step model and
the cache of a forward over a context, and PDF / EPUB documents built in memory."""

from __future__ import annotations

import io

import torch
from ebooklib import epub
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject
from transformers import DynamicCache

from infinipot_cli.pot.engine import Engine
from infinipot_cli.runtime.loading import with_cache
from tiny_models import VOCAB, make_model

# ---- the command line ------------------------------------------------------------------------------

def one_line(r, code=2) -> str:
    """The stderr of a CliRunner result that failed with `code`: one line, no traceback, no rich panel."""
    err = r.stderr.strip()
    assert r.exit_code == code, (r.exit_code, r.output)
    assert "Traceback" not in err and len(err.splitlines()) == 1 and "╭" not in err, err
    return err


# ---- an engine over token ids -----------------------------------------------------------------------

HEADER = list(range(3, 9))        # a pinned "header"
CATALYST = [20, 21, 22, 23, 24]   # a catalyst prompt
PROMPT = [30, 31, 32, 33]


def doc_ids(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(10, VOCAB, (n,), generator=g).tolist()


class IdTok:
    """Stands in for a tokenizer: 'decodes' ids as numbers."""

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def run_engine(model, ids, cfg, pieces=(7, 29, 3, 50), events=None):
    eng = Engine(model, IdTok(), cfg, catalyst_ids=CATALYST, on_event=events)
    eng.pin(HEADER)
    i, k = 0, 0
    while i < len(ids):
        n = pieces[k % len(pieces)]
        eng.feed(ids[i:i + n], where=f"piece {k}")
        i, k = i + n, k + 1
    eng.finish()
    return eng


# ---- the decode step --------------------------------------------------------------------------------

def perturbed_model(arch: str):
    """A tiny model whose biases and norms are moved away from their init (zeros / ones) so a test sees them."""
    model = make_model(arch)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias") or "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def forward_cache(model, ids) -> DynamicCache:
    """The cache of the model's forward over ids."""
    cache = DynamicCache()
    with torch.no_grad():
        model.model(input_ids=torch.tensor([ids]), **with_cache(model.model, cache), use_cache=True)
    return cache


# ---- documents built in memory ----------------------------------------------------------------------

def make_pdf(pages: list[list[str]], *, labels: list[tuple[int, int, str, int]] | None = None,
             outline: list[tuple[str, int, int | None]] | None = None, encrypt: dict | None = None) -> bytes:
    """A PDF whose pages show the given lines in Helvetica (an empty list gives a page without text).

    labels: (first page, last page, style, start) ranges; outline: (title, page, parent index or None).
    """
    w = PdfWriter()
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for lines in pages:
        page = w.add_blank_page(width=300, height=400)
        if not lines:
            continue
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): w._add_object(font)})})
        body = b" ".join(b"(" + line.encode("cp1252") + b") Tj T*" for line in lines)
        stream = DecodedStreamObject()
        stream.set_data(b"BT /F1 10 Tf 12 TL 20 380 Td " + body + b" ET")
        page[NameObject("/Contents")] = w._add_object(stream)
    for first, last, style, start in labels or []:
        w.set_page_label(first, last, style=style, start=start)
    items: list = []
    for title, page_number, parent in outline or []:
        items.append(w.add_outline_item(title=title, page_number=page_number,
                                        parent=items[parent] if parent is not None else None))
    if encrypt:
        w.encrypt(**encrypt)
    out = io.BytesIO()
    w.write(out)
    return out.getvalue()


def make_epub(chapters: list[tuple[str, str, str | None]], *, nonlinear: tuple[str, str] | None = None,
              nav: bool = True) -> bytes:
    """An EPUB from (file name, body html, toc title or None = not in the TOC) chapters."""
    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title("Test Book")
    book.set_language("en")
    items = []
    toc = []
    for file_name, body, toc_title in chapters:
        item = epub.EpubHtml(title=toc_title or "x", file_name=file_name, lang="en")
        item.content = body
        book.add_item(item)
        items.append(item)
        if toc_title:
            toc.append(epub.Link(file_name, toc_title, file_name.split(".")[0]))
    spine: list = ["nav"] if nav else []
    spine += items
    if nonlinear:
        extra = epub.EpubHtml(title="Extra", file_name=nonlinear[0], lang="en")
        extra.content = nonlinear[1]
        extra.is_linear = False
        book.add_item(extra)
        spine.append(extra)
    book.toc = toc
    book.add_item(epub.EpubNcx())
    if nav:
        book.add_item(epub.EpubNav())
    book.spine = spine
    out = io.BytesIO()
    epub.write_epub(out, book, {"raise_exceptions": True})
    return out.getvalue()
