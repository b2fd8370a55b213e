"""The passages of the document a question is about, found in the document as read (the pot and its archive).

After a read the pot holds C..M entries, and the archive (archive.py) the token ids of everything distillation
evicted: together every token read (with InfiniPot's shared sentence selection). A question is answered from
the passage that matches it best, not from the whole pot: a 135M model answers best when shown little,
coherent, relevant text (docs/results/qa.md).

The document is cut into units (sentences, and lines for man pages and changelogs: evidence.units), each ranked
by BM25 over the question's content words (an option or version it names as written: `-N` is not `-n`, `1.12-1`
not `1.3.12-8`), the words of the heading of the part it belongs to counting too (outline.py: a changelog entry's
release, a man page's section), at half weight; a unit next to a span of the kind the question asks for (a
number for "how many", an option for "which option": `typed`) counts half again, and one that begins with a name
the question names (where a man page or an API reference defines it: `heads`) gains a quarter of the name's idf.
A passage is a top unit widened by the units around it up to about WIDTH tokens (never across the start of
another source), so a line such as "-J, --xz" comes with its description and a sentence with the one that names
its subject; it is read under its part's heading, so "b2sum is added" comes with "Noteworthy changes in release
8.26".

    found, (src, seg, texts) = passages(engine, question, sources, n=2)      # [Found], best first
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Sequence

import re

import torch

from . import evidence as ev
from . import spans
from .outline import from_labels, from_text

PASSAGES = 2       # passages found for a question (the model writes from the first, spans come from both)
WIDTH = 64         # tokens a passage is widened to around its top unit, about
SIDE_UNITS = 2     # units with text taken on each side at most
HEADING_WEIGHT = 0.5  # a part heading's words count this much in its units' scores
HEAD_WEIGHT = 0.25    # a unit that begins with a name the question names gains this x the name's idf
TYPED_WEIGHT = 0.5    # a unit next to a span of the kind the question asks for scores this much more (x 1.5)
EXPECTED_WEIGHT = 1.0  # a question word the model expected in a unit that lacks it counts this x its idf
# the span kinds a unit's text can show by their form alone (a plain word can be a name, a quote anything)
SHAPED = ("number", "version", "date", "option", "key", "email", "url", "path", "shell", "symbol")


@dataclass
class Found:
    """One passage: document positions [start, stop), its units (indices into the document's units, in
    document order), the top unit it was found by, its score, and the unit of its part's heading (None: none,
    or inside the passage)."""

    start: int
    stop: int
    units: list[int]
    top: int
    score: float
    heading: int | None = None
    core: tuple[int, int] | None = None  # [start, stop) of the top unit and the unit with text on each side
    judged: float | None = None  # where the model judged (judge.py): its best log P(question | sentence) here
    words: float | None = None   # its own words' score, where the judge raised `score` to the best passage's
    read: float | None = None    # a passage the read found (ask DOC Q): its top unit's mean CaP-Q record
    expected: float | None = None  # what the words the model expected while reading added to `score`


def _source_starts(sources: Sequence[tuple[str, int]]) -> list[int]:
    at, out = 0, []
    for _, n in sources:
        out.append(at)
        at += n
    return out


def headings(engine, first: torch.Tensor, texts: list[str]) -> torch.Tensor:
    """(K,) for every unit, the unit holding the heading of the part it belongs to (-1: none): the readers'
    section labels (PDF outline, HTML sections, EPUB chapters), else heading lines of plain text (outline.py)."""
    K = len(texts)
    parts = from_labels(engine.provenance)
    if len(parts) < 2:
        parts = from_text(first.tolist(), texts)
    out = torch.full((K,), -1, dtype=torch.long)
    if not parts:
        return out
    starts = torch.tensor([p.start for p in parts], dtype=torch.long)
    unit_of = torch.searchsorted(first, starts, right=True) - 1               # the unit where each part starts
    part = torch.searchsorted(starts, first, right=True) - 1                  # (K,) the part each unit is in
    held = part >= 0
    out[held] = unit_of[part[held]].clamp_min(0)
    return out


def expected_scores(texts: list[str], question: str, expected: list[set[str]]) -> torch.Tensor:
    """(K,) for every unit, the idf (over the units' words and expected words together) of the question's content
    words the unit lacks but the model expected at its positions while reading (`expected`: each unit's words,
    scoring/expected.py): "rescue" for "You can use bzip2recover to try to recover data", where the model
    expected "rescue" too."""
    has = [set(ev.words(t)) for t in texts]
    return ev.idf_scores([e - h for h, e in zip(has, expected)], ev.content_terms(question),
                         counted=[h | e for h, e in zip(has, expected)])


def rank(texts: list[str], question: str, heading: torch.Tensor | None = None) -> torch.Tensor:
    """(K,) score of every unit: BM25 over the question's content words (idf over the units), an option the
    question names counting as written (`-N` is not `-n`), a version too (`1.12-1`), raised for the units that
    stand next to what the question asks for (`typed`) and for those that begin with a name it names (`heads`),
    plus HEADING_WEIGHT x its part heading's (`heading`: (K,) heading unit, -1 none). The pot's own question
    attention beside the words measured worse (docs/results/qa.md), so the words rank; the words the model expected
    while reading count beside them (`expected_scores`, added by `passages`)."""
    exact, rest = _written_apart(question)
    named = [set(exact) & _as_written(t) for t in texts] if exact else [set()] * len(texts)
    w = ev.word_scores(texts, rest) + ev.idf_scores(named, exact)
    w = typed(w, texts, question) + HEAD_WEIGHT * heads(texts, question)
    if heading is None:
        return w
    h = heading.clamp_min(0)
    return w + HEADING_WEIGHT * torch.where(heading >= 0, w[h], torch.zeros_like(w))


def _written_apart(question: str) -> tuple[list[str], str]:
    """(the options and versions `question` writes, matched as written; the question without them)."""
    exact = [o for o in dict.fromkeys(_as_written(question)) if len(o) >= 2]
    rest = question
    for o in exact:
        rest = rest.replace(o, " ")
    return exact, rest


def _as_written(text: str) -> set[str]:
    """The options `text` writes, without their values ("--max-ppsize=N" → "--max-ppsize"), and its versions
    ("1.12-1"): terms matched whole, as written, where words() would cut them into pieces that match any other
    option or version ("1", "12")."""
    return {m.split("=")[0] for m in spans.mentions(text, "option")} | set(spans.mentions(text, "version"))


def heads(texts: list[str], question: str) -> torch.Tensor:
    """(K,) for every unit that begins with an option or identifier the question names, the name's idf: where a
    man page, an API reference or a glossary defines it (" -N      Do not execute a remote command.",
    "g_key_file_to_data ()"), not one of the places that merely mention it ("Implies -N, -T ...")."""
    names: list[str] = []
    for kind in ("option", "ident"):
        for m in spans.mentions(question, kind):
            m = m.split("=")[0].removesuffix("()")
            if len(m) >= 2 and m not in names:
                names.append(m)
    if not names:
        return torch.zeros(len(texts))
    starts = [re.compile(r"\s*" + re.escape(n) + r"(?![\w-])") for n in names]
    return ev.idf_scores([{n for n, rx in zip(names, starts) if rx.match(t)} for t in texts], names)


def typed(w: torch.Tensor, texts: list[str], question: str) -> torch.Tensor:
    """(K,) word scores `w` x (1 + TYPED_WEIGHT) for the units that hold, or stand next to (one unit either
    side), a span of the kind the question asks for, by form (SHAPED: the first such kind of spans.wanted) and
    not named by the question: answer typing in ranking, as classic QA systems filter passages by the expected
    answer type. "How many points does locator() wait for by default?" ranks "This continues until n (default
    512) points have been selected" above "locator() returns the locations of the points selected"; a unit
    sharing no word with the question stays at 0. Measured on the corpus: the answer in the best passage's core
    for 103 of 133 questions against 95 (docs/results/qa.md)."""
    kinds = [k for k in spans.wanted(question).kinds if k in SHAPED][:1]
    if not kinds:
        return w
    K = len(texts)
    held: dict[int, bool] = {}

    def holds(j: int) -> bool:  # unit j writes a span of the kind, one the question does not name
        if j not in held:
            held[j] = any(m and m not in question for m in spans.mentions(texts[j], kinds[0]))
        return held[j]

    out = w.clone()
    for k in (w > 0).nonzero().flatten().tolist():
        if any(holds(j) for j in range(max(0, k - 1), min(K, k + 2))):
            out[k] = w[k] * (1 + TYPED_WEIGHT)
    return out


class Passages(NamedTuple):
    """What `passages` found, with the ranking it found them by (answering.with_read names a passage's words score
    from it rather than ranking the document again)."""

    found: list[Found]               # the best passages, best first
    doc: tuple                       # the document's units (src (T,), seg (T,), texts) they index
    heading: torch.Tensor | None     # (K,) `headings`; None for a document of no units
    words: torch.Tensor | None       # (K,) `rank`: each unit's words score for the question; None alike


def passages(engine, question: str, sources: Sequence[tuple[str, int]] = (), n: int = PASSAGES,
             expected: bool = False) -> Passages | None:
    """The `n` best passages for `question` by its words (`rank`, best first) and the document's units (src, seg,
    texts) they index; with `expected`, the words the model expected while reading count too (where the read kept
    them: scoring/expected.py). None when the pot and its archive do not hold the whole document (a per-head pot,
    an interrupted read)."""
    doc = ev.document_units(engine)
    if doc is None:
        return None
    src, seg, texts = doc
    if not texts:
        return Passages([], doc, None, None)
    heading = headings(engine, firsts(doc), texts)
    scores = rank(texts, question, heading)
    sketch = getattr(engine, "expected_words", None) if expected else None
    sets = sketch.words(src, seg, len(texts)) if sketch is not None else None
    part = EXPECTED_WEIGHT * expected_scores(texts, _written_apart(question)[1], sets) if sets else None
    if part is not None:
        scores = scores + part
    found = grouped(engine, doc, scores, sources, n, heading)
    for f in found if part is not None else []:
        f.expected = float(part[f.top]) or None
    return Passages(found, doc, heading, scores)


def firsts(doc: tuple) -> torch.Tensor:
    """(K,) the first document position of every unit."""
    src, seg, texts = doc
    return torch.full((len(texts),), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, src, "amin")


def grouped(engine, doc: tuple, scores: torch.Tensor, sources: Sequence[tuple[str, int]] = (), n: int = PASSAGES,
            heading: torch.Tensor | None = None, skip: set[int] = frozenset()) -> list[Found]:
    """The `n` best passages by the unit scores `scores` (K,) (units scoring 0 or less are never a passage's top),
    best first: each top unit widened by its neighbours, as `passages` describes; none takes a unit of `skip`."""
    src, seg, texts = doc
    K = len(texts)
    first = firsts(doc)                                                                    # (K,) first position
    last = torch.zeros(K, dtype=torch.long).scatter_reduce(0, seg, src, "amax")              # (K,) last position
    size = torch.bincount(seg, minlength=K)                                                # (K,) tokens
    if heading is None:
        heading = headings(engine, first, texts)
    starts = set(_source_starts(sources)[1:])

    def joins(lo: int, hi: int) -> bool:  # units lo < hi next to each other in the document and one source
        return int(last[lo]) + 1 == int(first[hi]) and int(first[hi]) not in starts

    out: list[Found] = []
    used: set[int] = set(skip)
    for k in scores.argsort(descending=True).tolist():
        if len(out) >= n or float(scores[k]) <= 0:
            break
        if k in used or not texts[k].strip():
            continue
        group, tokens = [k], int(size[k])
        ends = {-1: k, 1: k}
        sides = {-1: 0, 1: 0}
        grew = True
        while grew and tokens < WIDTH:  # the unit after, then the one before, while they join and fit
            grew = False
            for step in (1, -1):
                j = ends[step] + step
                if not (0 <= j < K) or j in used or sides[step] >= SIDE_UNITS:
                    continue
                if not joins(min(j, ends[step]), max(j, ends[step])) or tokens + int(size[j]) > 2 * WIDTH:
                    continue
                group.append(j)
                ends[step] = j
                tokens += int(size[j])
                sides[step] += bool(texts[j].strip())
                grew = True
        group.sort()
        # a long sentence is cut into units of at most UNIT_TOKENS tokens, perhaps inside a word ("… for
        # 4cb55334-a545-4f42-" | "92ff-… is: 79fd3d1d-6" | "81e-4af2-…"): the top unit comes with the units it
        # is cut from, whole
        a = b = k
        while a > 0 and joins(a - 1, a) and _cut_inside(texts[a - 1], texts[a]):
            a -= 1
        while b + 1 < K and joins(b, b + 1) and _cut_inside(texts[b], texts[b + 1]):
            b += 1
        group = sorted(set(group) | set(range(a, b + 1)))
        used.update(group)
        h = int(heading[k])
        core = core_units(group, (a, b), texts)
        out.append(Found(int(first[group[0]]), int(last[group[-1]]) + 1, group, k, float(scores[k]),
                         None if h < 0 or h in group else h, (int(first[core[0]]), int(last[core[-1]]) + 1)))
    return out


def core_units(group: list[int], top: tuple[int, int], texts: list[str]) -> list[int]:
    """The top unit of a passage's units `group` with the units it is cut from (`top`: the first and last of
    them, see passages) and the nearest unit with text on each side (with the blank ones between): what the model
    writes from."""
    lo, hi = group.index(top[0]), group.index(top[1])
    while lo > 0:
        lo -= 1
        if texts[group[lo]].strip():
            break
    while hi < len(group) - 1:
        hi += 1
        if texts[group[hi]].strip():
            break
    return group[lo:hi + 1]


def _cut_inside(a: str, b: str) -> bool:
    """Whether unit texts `a` and `b` (in a row) are one word cut in two: no space or break between them."""
    return bool(a) and bool(b) and not a[-1].isspace() and not b[0].isspace() and \
        (a[-1].isalnum() or a[-1] in "-_./:") and (b[0].isalnum() or b[0] in "-_./")


def context(engine, found: list[Found], doc: tuple, sep: list[int], room: int = 1 << 62, core: bool = True,
            heading: bool = False) -> tuple[torch.Tensor, list[int]]:
    """(src (N,), ids (N,)) of the passages in document order (`core`: their top unit with a unit on each side;
    `heading`: each after its part's heading), separated by `sep` (a blank line's tokens, given the position of
    what they lead into), at most `room` tokens (the best passage first, a passage cut at its end): the text an
    answer is written from."""
    d_src, seg, _ = doc
    pieces: list[tuple[int, int]] = []  # document [start, stop) ranges, in the order they are shown
    left = room
    for f in found:  # best first, within the room
        body = f.core if core and f.core else (f.start, f.stop)
        for a, b in ([_span(d_src, seg, f.heading)] if heading and f.heading is not None else []) + [body]:
            n = min(b - a, left - len(sep))
            if n <= 0:
                break
            if (a, a + n) not in pieces:
                pieces.append((a, a + n))
                left -= n + len(sep)
    src: list[int] = []
    ids: list[int] = []
    for i, (a, b) in enumerate(sorted(pieces)):
        toks = ev.document_tokens(engine, a, b) or []
        if i and sep:
            ids += sep
            src += [a] * len(sep)
        ids += toks
        src += range(a, a + len(toks))
    return torch.tensor(src, dtype=torch.long), ids


def _span(d_src: torch.Tensor, seg: torch.Tensor, unit: int) -> tuple[int, int]:
    pos = d_src[seg == unit]
    return int(pos.min()), int(pos.max()) + 1
