"""HTML to text (shared with the EPUB reader) and the HTML document source.

The converter walks the tree without recursion, drops non-content elements (scripts, styles, navigation,
site headers/footers, cookie banners…), puts every block element on its own line, joins inline text with
spaces and collapses whitespace (except inside ``<pre>``). Headings become their own blocks so a page can be
cut into sections labelled ``"§ Heading"``.

Code stays code in the text: a ``<pre>`` block, or a block whose text is all inside ``<code>``, ``<kbd>``,
``<samp>`` or ``<tt>``, is flagged (``Block.code``) and written indented by CODE_INDENT (as html2text and pandoc
write code blocks as plain text), so no line of it starts at column 0, where plain-text headings are looked for
(answer/outline.py: a C ``#  define`` line reads as a Markdown heading).
"""

from __future__ import annotations

import codecs
import re
import warnings
from dataclasses import dataclass
from typing import Iterator

from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, NavigableString, Tag
from bs4.element import CData, PreformattedString, Script, Stylesheet, TemplateString

from infinipot_cli.errors import InputError
from infinipot_cli.documents.where import Where

from .base import Passage, Source, display_name, repair_ligatures, split_text
from .text import looks_binary

# Never text: dropped everywhere (web pages and EPUB chapters).
DROP_ALWAYS = frozenset(
    "script style noscript template svg head title iframe object embed canvas audio video map "
    "button select option textarea input nav".split()
)
# Page furniture on web pages (kept in EPUB chapters, where e.g. <aside> is a real sidebar of the book).
DROP_WEB = frozenset("header footer aside form dialog menu".split())
BOILERPLATE_ROLES = frozenset("navigation banner contentinfo complementary search menu menubar dialog alert".split())
BOILERPLATE_WORDS = frozenset(
    "cookie cookies consent gdpr banner sidebar menu menubar footer nav navbar navigation breadcrumb breadcrumbs "
    "advert advertisement skiplink helpbox toolbar pagination pager social sharing feedback".split()
)
# Elements never dropped for their class/id (a <body class="nav-open"> must not take the page with it).
_PROTECTED = frozenset("html body main article".split())
HEADINGS = {f"h{i}": i for i in range(1, 7)}
BLOCKS = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt fieldset figcaption "
    "figure footer form header hgroup hr html legend li main menu ol p pre section summary table tbody thead "
    "tfoot tr ul".split()
) | frozenset(HEADINGS)
CELLS = frozenset(("td", "th"))
CODE_INLINE = frozenset("code kbd samp tt".split())  # inline code: a block of nothing else is a code block
CODE_INDENT = "    "
_SKIP_STRINGS = (Script, Stylesheet, TemplateString)
_WS = re.compile(r"\s+")
_TOKEN_SPLIT = re.compile(r"[-_\s:.]+|(?<=[a-z])(?=[A-Z])")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:\-]+)""", re.IGNORECASE)
# WHATWG: these labels mean windows-1252 in browsers.
_AS_CP1252 = {"ascii", "us-ascii", "latin-1", "latin1", "iso-8859-1", "iso8859-1", "l1", "cp819", "windows-1252"}
_TITLE_CHARS = 80


@dataclass
class Block:
    """One line of converted text; ``heading`` is 1-6 for h1-h6, else 0; ``code``: the text of a ``<pre>``
    block, or of a block whose text is all inline code (``<code>``...), never a heading."""

    text: str
    heading: int = 0
    code: bool = False

    def as_text(self) -> str:
        """The block as a document's text shows it: a code block indented by CODE_INDENT, every line of it."""
        if not self.code:
            return self.text
        return "\n".join(CODE_INDENT + line if line.strip() else line for line in self.text.split("\n"))


def blocks_text(blocks: list[Block]) -> str:
    """Blocks as lines of text (code blocks indented: Block.as_text)."""
    return "\n".join(b.as_text() for b in blocks)


def decode_html(data: bytes) -> str:
    """Decode HTML bytes: BOM, else ``<meta charset>`` / XML declaration, else UTF-8 with cp1252 fallback."""
    for bom, enc in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                     (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(enc, "replace")
    head = data[:4096]
    m = _XML_ENCODING.search(head) or _META_CHARSET.search(head)
    if m:
        label = m.group(1).decode("ascii", "replace").lower()
        label = "cp1252" if label in _AS_CP1252 else label
        try:
            codec = codecs.lookup(label).name
        except LookupError:
            codec = None
        if codec and not codec.startswith("utf-16") and not codec.startswith("utf-32"):
            try:
                return data.decode(codec)
            except UnicodeDecodeError:
                pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def parse_html(markup: str | bytes) -> BeautifulSoup:
    """Parse with the built-in ``html.parser`` (quietly: short inputs that look like file names are fine)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        return BeautifulSoup(markup, "html.parser")


def _tokens(tag: Tag) -> set[str]:
    values: list[str] = []
    cls = tag.get("class")
    if isinstance(cls, str):
        values.append(cls)
    elif cls:
        values.extend(cls)
    ident = tag.get("id")
    if isinstance(ident, str):
        values.append(ident)
    return {t.lower() for v in values for t in _TOKEN_SPLIT.split(v) if t}


def _is_hidden(tag: Tag) -> bool:
    if tag.has_attr("hidden") or str(tag.get("aria-hidden", "")).lower() == "true":
        return True
    style = str(tag.get("style", "")).replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


HEADING_MARKS = {"¶", "§", "#", "🔗", "\uf0c1"}


def _is_heading_mark(tag: Tag) -> bool:
    """A permalink mark beside a heading (Sphinx's "¶" headerlink, "#" or "§" anchors): not text."""
    if tag.name != "a" or not str(tag.get("href", "")).startswith("#"):
        return False
    return "headerlink" in _tokens(tag) or tag.get_text(strip=True) in HEADING_MARKS


def _drop(tag: Tag, web: bool) -> bool:
    """Whether ``tag`` (and everything inside it) is left out of the text."""
    name = tag.name
    if name in DROP_ALWAYS or _is_hidden(tag) or _is_heading_mark(tag):
        return True
    if not web:
        return False
    if name in DROP_WEB:
        # An <article>'s own header/footer is content (its title, byline); the site's is furniture.
        return not (name in ("header", "footer") and tag.find_parent(["article", "main", "section"]))
    if str(tag.get("role", "")).lower() in BOILERPLATE_ROLES:
        return True
    if name in _PROTECTED or not (_tokens(tag) & BOILERPLATE_WORDS):
        return False
    # A wrapper that merely mentions e.g. "sidebar" but holds the main content is kept.
    return tag.find(["main", "article", "h1"]) is None


def html_to_blocks(markup: str | bytes | Tag, *, web: bool = True) -> list[Block]:
    """Convert HTML (a page, or one element of a parsed page) to text blocks, one per block element; headings
    are flagged; a data table is one block per row (table_rows).

    ``web=True`` strips web-page furniture (nav, header, footer, aside, form, role=navigation, cookie/menu/
    sidebar… classes); ``web=False`` (EPUB chapters) only drops non-text elements and hidden ones.
    """
    soup = markup if isinstance(markup, Tag) else parse_html(markup)
    root: Tag = soup.body or soup
    blocks: list[Block] = []
    buf: list[str] = []
    pre = 0
    heading = 0
    code = 0      # inside inline code elements (CODE_INLINE)
    seen = [False, False]  # the buffer holds text outside code / inside code

    def flush() -> None:
        text = "".join(buf)
        buf.clear()
        prose, coded = seen
        seen[:] = [False, False]
        if pre:
            text = "\n".join(line.rstrip() for line in text.split("\n")).strip("\n")
        else:
            text = _WS.sub(" ", text).strip()
        if text.strip():
            blocks.append(Block(repair_ligatures(text), heading, not heading and (pre > 0 or (coded and not prose))))

    stack: list[tuple[Tag, Iterator]] = [(root, iter(list(root.contents)))]
    while stack:
        tag, children = stack[-1]
        child = next(children, None)
        if child is None:  # leaving ``tag``
            stack.pop()
            name = tag.name
            if name in BLOCKS:
                flush()
                if name in HEADINGS:
                    heading = 0
                elif name == "pre":
                    pre -= 1
            elif name in CODE_INLINE:
                code -= 1
            continue
        if isinstance(child, NavigableString):
            if isinstance(child, _SKIP_STRINGS) or (isinstance(child, PreformattedString) and not isinstance(child, CData)):
                continue
            text = str(child)
            if text.strip():
                seen[1 if code or pre else 0] = True
            buf.append(text)
            continue
        if not isinstance(child, Tag) or _drop(child, web):
            continue
        name = child.name
        if name == "table":
            rows = table_rows(child, web)
            if rows is not None:  # a data table: one line per row, each value with its column's name
                flush()
                blocks.extend(Block(repair_ligatures(r)) for r in rows)
                continue
        if name == "br":
            if pre:
                buf.append("\n")
            else:
                flush()
            continue
        if name in BLOCKS:
            flush()
            if name in HEADINGS:
                heading = HEADINGS[name]
            elif name == "pre":
                pre += 1
        elif name in CELLS and any(s.strip() for s in buf):
            buf.append(" | ")
        elif name in CODE_INLINE:
            code += 1
        stack.append((child, iter(list(child.contents))))
    flush()
    return blocks


# ---- tables ---------------------------------------------------------------------------------------------------
TABLE_CELL_CHARS = 300   # a table whose cells average more than this is layout, not data
_ROW_END = re.compile(r"[.!?:][\"')\]]*$")


def _cell_text(cell: Tag, web: bool) -> str:
    return " ".join(b.text for b in html_to_blocks(cell, web=web)).strip()


def _span(cell: Tag) -> int:
    try:
        return max(1, min(50, int(str(cell.get("colspan", "1")).strip() or 1)))
    except ValueError:
        return 1


def _own_rows(table: Tag) -> list[Tag]:
    """The table's rows, not those of a table inside it."""
    return [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]


def table_rows(table: Tag, web: bool = True) -> list[str] | None:
    """A data table as lines: one per row, each value named by its column's header ("Name: Puffin; Count: 412."),
    ending as a sentence, so a pot, its archive and the evidence hold a row whole; a table without a header row
    gives its cells joined by " | ". The caption, if any, comes first. None for a layout table (a table
    inside it, or long cells), which is read as ordinary blocks."""
    if table.find("table") is not None:
        return None
    rows: list[tuple[list[str], bool]] = []   # (cells, every cell a <th>)
    for tr in _own_rows(table):
        if _drop(tr, web):
            continue
        cells, all_th = [], True
        for cell in tr.find_all(["td", "th"], recursive=False):
            if _drop(cell, web):
                continue
            text = _cell_text(cell, web)
            all_th &= cell.name == "th" or (not text and tr.find_parent("thead") is not None)
            cells.extend([text] + [""] * (_span(cell) - 1))
        if any(cells):
            rows.append((cells, all_th or tr.find_parent("thead") is not None))
    if len(rows) < 2 or max(len(c) for c, _ in rows) < 2:
        return None
    lengths = [len(t) for c, _ in rows for t in c if t]
    if sum(lengths) > TABLE_CELL_CHARS * len(lengths):
        return None
    out = []
    caption = table.find("caption")
    if caption is not None and not _drop(caption, web):
        text = _cell_text(caption, web)
        if text:
            out.append(text)
    header: list[str] = []
    for cells, is_header in rows:
        if is_header:
            header = [_WS.sub(" ", h).strip().rstrip(":") for h in cells]
            continue
        if header:
            pairs = [f"{header[i]}: {v}" if i < len(header) and header[i] else v
                     for i, v in enumerate(cells) if v]
            line = "; ".join(p.rstrip(".;,") if k < len(pairs) - 1 else p for k, p in enumerate(pairs))
            out.append(line if _ROW_END.search(line) else line + ".")
        else:
            out.append(" | ".join(cells))
    return out


def short_title(text: str, limit: int = _TITLE_CHARS) -> str:
    """A heading shortened for a provenance label."""
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def blocks_to_sections(blocks: list[Block]) -> list[tuple[str, str]]:
    """Group blocks into ``(heading, text)`` sections; text before the first heading gets heading ``""``.

    A heading directly followed by another heading (e.g. h1 title then h2) is folded into the next section.
    """
    sections: list[tuple[str, list[str]]] = []
    title, lines, only_heading = "", [], False
    for b in blocks:
        if b.heading:
            if lines and not only_heading:
                sections.append((title, lines))
                lines = []
            title, only_heading = b.text, True
            lines.append(b.text)
        else:
            lines.append(b.as_text())
            only_heading = False
    if lines:
        sections.append((title, lines))
    return [(t, "\n".join(ls)) for t, ls in sections]


class HtmlSource(Source):
    """An HTML page (read whole: HTML needs a complete parse), yielded per heading section."""

    format = "html"

    def __init__(self, path: str, data: bytes, *, hash_file: str | None = None, content_hash: str | None = None) -> None:
        super().__init__(path, len(data))
        self._hash_file = hash_file
        self._hash = content_hash
        name = display_name(path)
        if not data.strip():
            raise InputError(f"{name} is empty")
        if not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and looks_binary(data[:65536]):
            raise InputError(f"{name} looks like binary data, not HTML")
        try:
            blocks = html_to_blocks(decode_html(data), web=True)
        except Exception as e:  # html.parser is lenient; this is a last resort
            raise InputError(f"{name}: could not parse the HTML ({type(e).__name__})") from None
        if not blocks:
            raise InputError(f"{name}: no readable text in this HTML page")
        self._sections = blocks_to_sections(blocks)

    def _passages(self) -> Iterator[Passage]:
        sections, self._sections = self._sections, []
        for k, (title, text) in enumerate(sections):
            where = Where(section=short_title(title)).label() if title else ""
            pieces = split_text(text)
            for j, piece in enumerate(pieces):
                yield Passage(piece, where, (k + j / len(pieces)) / len(sections), 1 / (len(sections) * len(pieces)))
