"""Key points a reader can check: one sentence per part of the document, in order, with where it came from.

A summary lists the document's main points part by part. The parts are the document's own (outline.py: PDF
outline, HTML sections, EPUB chapters, the headings of plain text); each gives the sentence most central to it:
the sentence whose content words best match the part's TF-IDF centroid (words frequent in this part and rare
in the others; centroid-based extractive summarisation, Radev et al. 2004). Candidates are the document as
read -- the pot and its archive hold every token read (archive.py) -- so a part whose text the pot evicted
still gets its point, and the pot stays bounded. Each point carries the reader's provenance (page, chapter,
section, exact line for text).

    document_key_points(engine, limit) -> [{"text", "where", "page"|"chapter"|"line"|"section", "position"}]

A man page (its first part is NAME, holding "name - what it is") starts with what the command is: the NAME line's
description is its first point. Every point is a whole sentence: one that begins in lower case where the text
before it ends no sentence is a piece of one ("should give you access to the complete manual." after "the
command  info sed") and no candidate, except an option's description, which comes with its option
("-s, --separate: consider files as separate ..."). A word broken over two lines by a hyphen is joined
("Mey-\nering" -> "Meyering"), unless the document writes it with the hyphen elsewhere ("command-line").

Fallback, when the document as read is not all held (an interrupted read, a per-head pot): the pot's own
choice. After a general read, the pot holds whole sentences of every stretch of the document (spread.py); the
summary prompt is forwarded once over the pot as the catalyst (CaP, §3.3.1; the pot is cropped back after)
and every kept sentence gets the mean of its tokens' scores: CaP and NuC (§3.3.2) as percentile ranks, mixed
with the pot's alpha as the selection mixes them. The document read is cut into `parts` equal stretches; each
gives its best `per_part` sentences (clean prose only: enough words, mostly letters), in document order, each
with where it came from (the reader's provenance: page, chapter or line).

    key_points(engine, prompt_ids) -> the same, from the pot
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter

import torch

from ..pot.engine import where_at
from ..pot.scoring.segments import unit_starts
from ..pot.spread import bins_of
from ..documents.where import Where, join, split

PARTS = 8          # stretches of an unstructured document the key points come from
MAX_POINTS = 40    # key points at most (more parts are merged into this many groups of consecutive parts)
SHORT = 30         # words: a longer candidate scores less in proportion
MAX_UNIT_TOKENS = 120  # a longer unit is no candidate (a table, a code block, a list run together)
PER_PART = 1       # key points per stretch at most
MIN_WORDS, MAX_WORDS = 6, 40


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """(N,) percentile ranks in [0, 1]."""
    n = x.numel()
    r = torch.empty(n, dtype=torch.float32)
    r[x.argsort()] = torch.arange(n, dtype=torch.float32)
    return r / max(1, n - 1)


def entry_scores(engine, prompt_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src, tok, score), each (N,), of the pot's document entries (head 0: the shared selection's entries)."""
    pot = engine.pot
    npin = pot.n_pinned
    src, tok = pot.src[0, 0, npin:].cpu(), pot.tok[0, 0, npin:].cpu()
    nov = pot.nov[0, 0, npin:].float().cpu()
    cap = torch.zeros_like(nov)
    cat, rows = engine.catalyst_for(prompt_ids)
    if rows and len(pot) + len(cat) <= (engine.cfg.size or 1 << 62):
        capt = engine.catalyst_capture(cat, rows)  # the catalyst's rows over the pot; its entries are cropped
        if capt.scores:
            # the layers the policy captures (the shared scorer's: from share_from of the depth on), mean over heads
            cap = torch.stack([capt.scores[l][:, npin:len(pot)].float().mean(0).cpu()
                               for l in sorted(capt.scores)]).mean(0)
    alpha = float(getattr(engine.cfg, "alpha", 0.5))
    return src, tok, (1 - alpha) * _ranks(cap) + alpha * _ranks(nov)


# A word broken at a line end by a hyphen (ASCII, U+2010 as groff writes it, or a soft hyphen), the next line
# going on in lower case.
_BROKEN = re.compile(r"([^\W\d_]+)([-\u2010\u00ad])[ \t]*\n[ \t]*([a-z]\w*)")
# An option line of a man page or --help: "-s, --separate", "-i[SUFFIX], --in-place[=SUFFIX]", "-l N, --width=N"
_OPTION_HEAD = re.compile(r"-{1,2}[\w?#@][^\s,]*(?:[ =][A-Za-z<\[][^\s,]*)?(?:,\s*-{1,2}[\w?#@][^\s,]*"
                          r"(?:[ =][A-Za-z<\[][^\s,]*)?)*")
# The NAME line of a man page: "sed - stream editor for ...", "gzip, gunzip, zcat - compress or expand files"
_NAME_LINE = re.compile(r"([\w.+:\[\]-]+(?:,\s*[\w.+:\[\]-]+)*)\s+(?:\\?-|\u2010|\u2013|\u2014)\s+(\S.*)")
_SENTENCE_END = re.compile(r"[.!?:\u3002\uff01\uff1f][\"')\]\u201d\u2019]*\s*$")


def join_hyphens(text: str, hyphenated=lambda word: False) -> str:
    """`text` with the words a line-end hyphen breaks joined ("Mey-\\n    ering" -> "Meyering"); a soft hyphen
    always, a hyphen unless `hyphenated(word)` (the document writes "command-line" whole elsewhere)."""
    def join(m: re.Match[str]) -> str:
        left, mark, right = m.groups()
        keep = mark != "\u00ad" and hyphenated(f"{left}-{right}")
        return f"{left}-{right}" if keep else left + right
    return _BROKEN.sub(join, text)


def _clean(text: str, hyphenated=lambda word: False) -> str | None:
    from ..pot.archive import clip_words, count_words

    text = " ".join(join_hyphens(text, hyphenated).split())
    n = count_words(text)
    if n < MIN_WORDS or re.search(r"\.{4,}|_{4,}|-{4,}", text):
        return None
    letters = sum(ch.isalpha() for ch in text)
    if letters < 0.6 * len(text.replace(" ", "")):
        return None
    if not text[:1].isalnum() and text[:1] not in "\"'(":
        text = text.lstrip("-*•·,;:) ")
        if not text:
            return None
    if not re.search(r"[.!?\u3002\uff01\uff1f\u061f\u06d4][\"')\u201d\u2019\u300d\u300f]*$", text):
        return None  # a piece of a sentence (the pot kept part of it): not a point a reader can check
    return clip_words(text, MAX_WORDS) if n > MAX_WORDS else text


def where_fields(label: str) -> dict:
    """{"page"|"chapter"|"line"?, "source"?, "section"?} from a provenance label (where.py): "p. 5 · 2 Parsing"
    (PDF: page label and outline title; a page label of digits is a number), "ch. 3 · Title" (EPUB),
    "line 120" (text), "§ Basic usage" (HTML); with several sources the source's name comes first
    ("a.pdf · p. 5")."""
    w = Where.parse(label)
    kind = w.kind()
    out: dict = {}
    if kind:
        value = getattr(w, kind)
        out[kind] = int(value) if isinstance(value, str) and value.isdigit() else value
    elif not w.section:
        # no location form and no heading (a source's name alone, or text no reader writes): as always read,
        # the first of several parts is the source and the rest the section, a single part the section
        parts = split(label)
        w = Where(source=parts[0] if len(parts) > 1 else "", section=join(*parts[len(parts) > 1:]))
    if w.source:
        out["source"] = w.source
    if w.section:
        out["section"] = w.section
    return out


def key_points(engine, prompt_ids: list[int], parts: int = PARTS, per_part: int = PER_PART) -> list[dict]:
    """The pot's best sentences, at most `per_part` from each of `parts` stretches of the document, in order."""
    if engine.tok is None or len(engine.pot) <= engine.pot.n_pinned:
        return []
    src, tok, score = entry_scores(engine, prompt_ids)
    keep = src >= 0
    src, tok, score = src[keep], tok[keep], score[keep]
    if src.numel() == 0:
        return []
    order = src.argsort()
    src, tok, score = src[order], tok[order], score[order]
    starts = unit_starts(src[None], tok[None], engine.boundaries)[0]
    seg = starts.long().cumsum(0) - 1  # (N,) sentence index
    n = int(seg[-1]) + 1
    mean = torch.zeros(n).scatter_add_(0, seg, score) / torch.bincount(seg, minlength=n).float()
    stretch = bins_of(src, max(engine.tokens_read, int(src.max()) + 1), parts)
    best: dict[int, list[tuple[float, int]]] = {}
    for i in mean.argsort(descending=True).tolist():
        members = (seg == i).nonzero().flatten()
        k = int(stretch[members[0]])
        if len(best.get(k, [])) >= per_part:
            continue
        text = _clean(engine.tok.decode(tok[members].tolist(), skip_special_tokens=True))
        if text is None:
            continue
        best.setdefault(k, []).append((float(mean[i]), int(members[0])))
    out = []
    for k in sorted(best):
        for _, first in sorted(best[k], key=lambda x: x[1]):
            members = (seg == seg[first]).nonzero().flatten()
            pos = int(src[first])
            label = where_at(engine.provenance, pos)
            fields = where_fields(label)
            text = _clean(engine.tok.decode(tok[members].tolist(), skip_special_tokens=True))
            out.append({"text": _drop_heading(text, fields.get("section")), "where": label, **fields,
                        "position": pos})
    return out


def _drop_heading(text: str, section: str | None) -> str:
    """A sentence that begins right after its section's heading ("Methods The team reached…", "2.4. The glob
    files The globs2 file is…": the heading with or without its number) without it: the heading is already in the
    point's location. A heading that is the sentence's own subject ("Methods are listed…") stays."""
    from ..pot.archive import count_words

    full = " ".join((section or "").split())
    for t in (full, re.sub(r"^[\d.]+\s+", "", full)):
        if t and text.startswith(t + " "):
            rest = text[len(t) + 1:].lstrip(" :")
            first = rest[:1]
            # a new sentence starts after the heading (a capital, or a letter of a script without case)
            if (len(rest) > 20 or count_words(rest) >= 5) and (first.isupper()
                                                               or (first.isalpha() and not first.islower())):
                return rest
    return text


def render(points: list[dict]) -> str:
    """The key points as the summary prints them: one line each, its source in brackets."""
    return "\n".join(f"- {p['text']}" + (f" [{p['where']}]" if p.get("where") else "") for p in points)


# ---- key points from the whole document as read ----------------------------------------------------------
def _sentences(engine) -> tuple[list[int], list[int], list[str]] | None:
    """(start position, length, text) of every sentence / paragraph unit of the document as read (the pot and
    its archive; cut at every source, page, chapter or section boundary), or None when some of it is held by
    neither."""
    n = engine.tokens_read
    return engine.derived("key-point sentences", n, lambda: _sentences_of(engine, n))


def _sentences_of(engine, n: int) -> tuple[list[int], list[int], list[str]] | None:
    from .evidence import decode_all, document_tokens, part_starts

    ids = document_tokens(engine, 0, n) if n > 0 else None
    out = None
    if ids is not None:
        tok = torch.tensor(ids, dtype=torch.long)
        starts = unit_starts(torch.arange(n)[None], tok[None], engine.boundaries)[0].clone()
        starts[0] = True
        starts[[p for p in part_starts(engine.provenance) if p < n]] = True  # no sentence spans two sources or parts
        first = starts.nonzero().flatten().tolist()
        bounds = first + [n]
        texts = decode_all(engine.tok, [ids[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
        out = (first, [b - a for a, b in zip(bounds[:-1], bounds[1:])], texts)
    return out


def _content_words(text: str) -> list[str]:
    from ..pot.archive import STOPWORDS, words

    from ..pot.archive import unspaced

    return [w for w in words(text) if (len(w) >= 3 or unspaced(w)) and w not in STOPWORDS and not w.isdigit()]


def _prose(text: str) -> float:
    """Share of the words that are plain words (letters, with trailing punctuation): 1.0 for prose, low for
    code, tables and option lists."""
    ws = text.split()
    return sum(_plain(w) for w in ws) / max(1, len(ws))


def _plain(word: str) -> bool:
    """A plain word: a Latin one capitalised at most ("The", not "ASN.1" or "--rcfile"), or a word of another
    script made of letters (a Chinese or Japanese clause with its commas counts as one)."""
    if word.isascii():
        return bool(re.fullmatch(r"[A-Za-z][a-z'’-]*[.,;:!?)]?", word))
    core = word.rstrip(".,;:!?)\u3002\uff01\uff1f\u061f\u06d4\u060c\u061b\u300d\u300f")
    return bool(core) and all(ch.isalpha() or ch in "'’-\uff0c\u3001\u300c\u300e" for ch in core) \
        and not any(ch.isupper() for ch in core[1:])


def document_key_points(engine, limit: int = MAX_POINTS, sources=()) -> list[dict] | None:
    """One key point per part of the document (at most `limit`), in document order; None when the document
    as read is not all held (the caller falls back to key_points())."""
    from ..pot.archive import count_words
    from .evidence import locate, where_label
    from .outline import Part, outline

    got = _sentences(engine)
    if not got:
        return None
    pos, lens, texts = got
    parts = outline(engine.provenance, pos, texts, limit)
    if not parts:  # unstructured: equal stretches
        n = engine.tokens_read
        parts = [Part(k * n // PARTS, "") for k in range(PARTS)]
    starts = [p.start for p in parts]
    part_of = [max(0, bisect.bisect_right(starts, p) - 1) for p in pos]
    hyphenated = _hyphenated(texts)
    bags = [Counter(_content_words(t)) for t in texts]
    tf: list[Counter] = [Counter() for _ in parts]
    for k, bag in zip(part_of, bags):
        tf[k].update(bag)
    df = Counter(w for c in tf for w in c)
    idf = {w: math.log((1 + len(parts)) / (1 + d)) for w, d in df.items()}  # a word of every part: 0
    totals = [sum(c.values()) or 1 for c in tf]
    cands: dict[int, list[tuple[float, int, str]]] = {}
    named = _man_name(parts, part_of, texts)
    for i, (k, bag) in enumerate(zip(part_of, bags)):
        if lens[i] > MAX_UNIT_TOKENS or not bag:
            continue
        text = _clean(texts[i], hyphenated)
        if text is None:
            continue
        text = _drop_heading(text, parts[k].title)
        if text[:1].islower():  # a piece of a sentence, or an option's description (with its option, then)
            whole = _whole(text, texts[i - 1] if i and part_of[i - 1] == k else "", named)
            if whole is None:
                continue
            text, i = whole[0], i - whole[1]  # an option's description is located at its option's line
        if count_words(text) < MIN_WORDS:
            continue
        # cosine of the sentence's word set with the part's TF-IDF centroid; prose before code and tables,
        # a sentence a reader takes in at a glance (<= SHORT words) before a long one
        score = sum(tf[k][w] / totals[k] * idf[w] ** 2 for w in bag) / math.sqrt(len(bag))
        score *= _prose(text) ** 2 * min(1.0, SHORT / count_words(text))
        cands.setdefault(k, []).append((score, i, text))
    best, said = {}, Counter()  # the chosen points' word 3-grams: a third use of one would read as a repeat
    if named is not None:  # a man page: what the command is, from its NAME line, comes first
        i, text = named
        cands[part_of[i]] = [(math.inf, i, text)]
    for k in sorted(cands):
        ranked = sorted(cands[k], key=lambda c: -c[0])
        best[k] = next((c for c in ranked if not any(said[g] >= 2 for g in _trigrams(c[2]))), ranked[0])
        said.update(_trigrams(best[k][2]))
    out = []
    for k in sorted(best):
        _, i, text = best[k]
        source, where = locate(engine, pos[i], sources)
        if "line" in where:  # the line of the point's first word (a heading or blank lines may come before it)
            raw = texts[i].lstrip("\n")
            where["line"] += raw[:max(0, raw.find(text.split()[0]))].count("\n")
        title = parts[k].title
        if title and "section" not in where:
            where["section"] = title
        label = where_label(where)
        out.append({"text": text, "where": label, **where, "position": int(pos[i]),
                    **({"source": source} if source else {}), **({"part": title} if title else {})})
    return out


def _hyphenated(texts: list[str]):
    """hyphenated(word): whether the document writes `word` ("command-line") with its hyphen, not across a line
    end (the whole text is searched once, when first asked)."""
    seen: set[str] | None = None

    def hyphenated(word: str) -> bool:
        nonlocal seen
        if seen is None:
            whole = "".join(texts)
            seen = {w.lower().replace("\u2010", "-") for w in re.findall(r"[^\W\d_]+[-\u2010][^\W\d_]+", whole)}
        return word.lower() in seen
    return hyphenated


def _man_name(parts: list, part_of: list[int], texts: list[str]) -> tuple[int, str] | None:
    """(unit, "sed - stream editor for ...") when the document is a man page: its first part is titled NAME and
    holds a "name - description" line; None otherwise."""
    if not parts or parts[0].title.strip().upper() != "NAME":
        return None
    for i, k in enumerate(part_of):
        if k > 0:
            break
        body = texts[i].strip()
        if body.upper().startswith("NAME"):
            body = body[4:].strip()
        m = _NAME_LINE.match(" ".join(join_hyphens(body).split()))
        if m:
            return i, f"{m.group(1)} - {m.group(2)}"
    return None


def _whole(text: str, prev: str, named: tuple[int, str] | None) -> tuple[str, int] | None:
    """A candidate that begins in lower case as a whole sentence (and 1 when it now begins with the unit before
    it), or None: after an option line (`prev`), the option's description with its option ("-s, --separate:
    consider files as separate ..."); after a sentence's end or on its own, itself when it begins with the
    command's name (a man page's command names are lower case: "sed works by ..."); a piece of a sentence
    otherwise."""
    head = " ".join(prev.split())
    if head and _OPTION_HEAD.fullmatch(head):
        return f"{head}: {text}", 1
    if named is not None:
        names = {n.strip() for n in named[1].split(" - ", 1)[0].split(",")}
        first = re.split(r"[\s(,:;]", text, maxsplit=1)[0]
        if first in names and (not head or _SENTENCE_END.search(head)):
            return text, 0
    return None


def _trigrams(text: str) -> list[tuple[str, ...]]:
    """Word 3-grams; a text with other scripts than ASCII in it is cut into archive.words() (Chinese: bigrams)."""
    from ..pot.archive import words

    low = text.lower()
    w = re.findall(r"[a-z0-9']+", low) if low.isascii() else words(low)
    return list(zip(w, w[1:], w[2:]))
