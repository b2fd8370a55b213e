"""Evidence: the passages of the document an answer rests on, with where they are (page, chapter, line).

An answer is written over the text the pot holds after the question's last distillation (InfiniPot §3.2;
re-encoded, docs/design.md). Which of those entries the answer drew on is read off the model itself: one
forward of [header | kept text | prompt | answer] captures the attention of the answer's rows over the kept
text (scoring/capture.py, the CaP capture, §3.3.1 Eq. 2, with the answer's rows in place of the catalyst's), in
the deeper half of the layers. The document as read (the pot and its archive hold every token) is cut into
units (sentences, and lines: man pages and changelogs are lines), each unit scored by the attention its
tokens got from the answer (0 for text the answer did not see) plus the plain word overlap of the question
and the answer with it, each scaled to its maximum (rule "document"; the other RULES rank the kept text
alone; measured in docs/results/qa.md: the answer's attention alone found the answer's passage least often).
The best units, each widened with its neighbours in the document, are the evidence: at most MAX_PASSAGES
passages, at most MAX_WORDS words in all; the second is the unit the question's words alone rank first (a wrong
answer's words point at what misled it, the question's at where the answer should be). The evidence is there
for a reader to check the answer against, so it may show the passage that holds the answer when the model's
answer missed it.

Each passage is located with the engine's provenance (reader.py labels every piece: "p. 12 · Title",
"ch. 3 · Title", "§ Title", "line 40") and the sources' token counts (which file). A text file's label is
the first line of a ~2 KB piece; the exact line is counted from the document's own tokens between the
piece's start and the passage (the pot and its archive together hold every token read, archive.py).

    ctx_src, ctx_tok  (N,)  document position / token id of every kept entry the answer saw, in pot order
    att               (N,)  attention of the answer's rows on each of them (summed over rows, heads, layers)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

import torch

from ..pot.archive import clip_words, content_terms, count_words, words
from ..runtime.loading import with_cache
from ..pot.scoring import capture as cap_scores
from ..pot.scoring.segments import BoundaryTable, segment_ids, unit_starts
from ..documents.where import Where, without

MAX_PASSAGES = 4
MAX_WORDS = 160          # words in all the passages together at most, headings and "…" counted (answering: 64, 32)
UNIT_TOKENS = 40         # a unit (sentence / line) is cut into pieces of at most this many tokens
FROM_DEPTH = 0.5         # attention is read from the layers at this depth and deeper (where CaP reads it)
RULES = ("attention", "relevance", "words", "combined", "document")
DEFAULT_RULE = "document"  # measured best on bench qa (docs/results/qa.md); attention alone was the worst
ASKED_RULES = ("combined", "document")  # their second passage is the one the question's words point at
MAX_DOCUMENT_TOKENS = 4_000_000  # "document": longer documents are ranked over the kept text only


@dataclass
class Passage:
    """One passage of evidence: its text, the document positions [start, stop) and where it is."""

    text: str
    start: int
    stop: int
    score: float
    source: str = ""
    where: dict = field(default_factory=dict)   # page / chapter / section / line, as the format has them
    judged: float | None = None                 # the model's log P(question | its best sentence), where it judged
    read: float | None = None                   # the question's attention while reading, where the read found it
    expected: float | None = None               # of `score`, what the words the model expected while reading gave

    def as_json(self) -> dict:
        scores = {"words": round(self.score - (self.expected or 0.0), 3)}
        if self.expected is not None:
            scores["expected"] = round(self.expected, 3)
        if self.judged is not None:
            scores["model"] = round(self.judged, 3)
        if self.read is not None:
            scores["read"] = round(self.read, 6)
        return {"text": self.text, "source": self.source, **self.where, "scores": scores}

    def label(self) -> str:
        return where_label(self.where)


def where_label(w: dict) -> str:
    """A short human location from a location dict: 'p. 12 · Title', 'ch. 3', 'line 40 · OPTIONS', '§ Title'."""
    kind = next((k for k in ("page", "chapter", "line") if k in w), None)
    return Where(section=w.get("section") or "", **({kind: w[kind]} if kind else {})).label()


# ---- what the answer saw -----------------------------------------------------------------------------------
@torch.no_grad()
def answer_attention(model, header: list[int], ctx_tok: torch.Tensor, prompt: list[int], answer: list[int],
                     from_depth: float = FROM_DEPTH) -> tuple[torch.Tensor, torch.Tensor]:
    """(att, rel), each (N,) over the kept text `ctx_tok`: the attention of the answer's rows (summed over those
    rows, the query heads and the layers from `from_depth` on), and its relevance: the mean answer row's
    attention minus the mean prompt row's (what the answer looked at beyond what the request looks at)."""
    n = ctx_tok.numel()
    if n == 0 or not answer:
        z = torch.zeros(n)
        return z, z
    from transformers import DynamicCache

    dev = next(model.parameters()).device
    ids = torch.tensor([list(header) + ctx_tok.tolist() + list(prompt) + list(answer)], device=dev)
    rows = len(prompt) + len(answer)
    L = model.config.get_text_config().num_hidden_layers if hasattr(model.config, "get_text_config") \
        else model.config.num_hidden_layers
    with cap_scores.capture(rows=rows, focus=(len(prompt), rows), from_layer=int(L * from_depth)) as capt:
        model.model(input_ids=ids, use_cache=True, **with_cache(model.model, DynamicCache()))
    a, b = len(header), len(header) + n
    total = sum(s[:, a:b].float().sum(0).cpu() for s in capt.scores.values())    # (N,) prompt + answer rows
    rel = sum(r[:, a:b].float().sum(0).cpu() for r in capt.relevance.values())   # (N,) mean(ans) - mean(prompt)
    # the captured sum is S_p + S_a over prompt and answer rows, the relevance S_a/na - S_p/np: solve for S_a
    na, npr = len(answer), len(prompt)
    att = na * (rel + total / npr) / (1 + na / npr)
    return att.clamp_min(0), rel


# ---- parts: what a passage may not cross ---------------------------------------------------------------------
def part_key(label: str) -> str:
    """What a provenance label says beyond the line: the source (with several), the page, chapter or section.
    "story.epub · ch. 2 · Storm" -> itself, "sed.txt · line 40" -> "sed.txt", "line 40" -> ""."""
    return without(label, "line")


def part_starts(provenance: list, sources: Sequence[tuple[str, int]] = ()) -> list[int]:
    """Document positions where a new part begins: a new source, page, chapter or section (a text file's
    "line N" labels are one part). A passage or a unit never spans two parts: evidence credited to one file
    or chapter must be that file's or chapter's text."""
    out: set[int] = set()
    prev = None
    for start, label in provenance:
        key = part_key(label)
        if prev is not None and key != prev:
            out.add(int(start))
        prev = key
    at = 0
    for _, n in list(sources)[:-1]:
        at += int(n)
        out.add(at)
    out.discard(0)
    return sorted(out)


def part_ids(src: torch.Tensor, starts: Sequence[int]) -> torch.Tensor:
    """(N,) the part each document position `src` (N,) lies in (0 before the first of `starts`)."""
    if not starts:
        return torch.zeros_like(src, dtype=torch.long)
    return torch.searchsorted(torch.tensor(list(starts), dtype=torch.long), src.long().contiguous(), right=True)


# ---- units of kept text ------------------------------------------------------------------------------------
def units(src: torch.Tensor, tok: torch.Tensor, tokenizer, boundaries: BoundaryTable | None = None,
          parts: torch.Tensor | None = None) -> tuple[torch.Tensor, list[str]]:
    """(seg (N,) unit index per entry, texts): sentences and lines of the kept text, gaps in the document
    and part boundaries (`parts` (N,): part_ids) splitting them too, each at most UNIT_TOKENS tokens."""
    if src.numel() == 0:
        return torch.zeros(0, dtype=torch.long), []
    boundaries = boundaries or BoundaryTable(tokenizer)
    starts = unit_starts(src[None], tok[None], boundaries)[0].clone()
    if parts is not None and parts.numel() > 1:
        starts[1:] |= parts[1:] != parts[:-1]
    nl = _newline_ids(tokenizer, tok)
    after_nl = torch.zeros_like(starts)
    after_nl[1:] = nl[:-1]
    starts |= after_nl | _heading_lines(tokenizer, tok)
    starts[0] = True
    seg = segment_ids(starts[None], UNIT_TOKENS)[0]
    K = int(seg.max()) + 1
    pieces = [[] for _ in range(K)]
    for s, t in zip(seg.tolist(), tok.tolist()):
        pieces[s].append(t)
    return seg, decode_all(tokenizer, pieces)


def decode_all(tokenizer, pieces: list[list[int]]) -> list[str]:
    """The text of each list of token ids (one batched call where the tokenizer has it)."""
    batch = getattr(tokenizer, "batch_decode", None)
    return batch(pieces, skip_special_tokens=True) if batch else [tokenizer.decode(p) for p in pieces]


HEADING_LINE_TOKENS = 24  # a longer line is no heading (outline.heading_of takes at most 90 characters)


def _heading_lines(tokenizer, tok: torch.Tensor) -> torch.Tensor:
    """(N,) bool: the first token of every heading line at column 0 (outline.heading_of: a man page's section
    header, a Markdown or numbered heading) and the first token after it. A byte-level vocabulary writes a line
    break and the next line's indentation as one token ("\\n       "), which the cut after a line's end does not
    see, so a man page's "EXPRESSION" ran on into the first sentence under it: a unit of 17 words that evidence
    showed in front of every passage of the section, beyond its words."""
    from .outline import heading_of

    N = tok.numel()
    out = torch.zeros(N, dtype=torch.bool)
    if N == 0:
        return out
    ids = tok.tolist()
    text_of = {i: tokenizer.decode([i]) for i in set(ids)}
    breaks = [k for k, i in enumerate(ids) if "\n" in text_of[i]]   # the token ending each line
    firsts = [0] + [k + 1 for k in breaks]                          # the first token of each line
    spans = [(a, b) for a, b in zip(firsts, breaks) if b - a <= HEADING_LINE_TOKENS and b > a
             and (a == 0 or text_of[ids[a - 1]].endswith("\n"))]    # at column 0, short
    if not spans:
        return out
    lines = [t.split("\n")[0] for t in decode_all(tokenizer, [ids[a:b + 1] for a, b in spans])]
    line_of = {b: j for j, b in enumerate(breaks)}
    for (a, b), line in zip(spans, lines):
        if not line.strip() or heading_of(line) is None:
            continue
        j = line_of[b]  # the lines around it, for the checks of code around a heading
        prev = _line(tokenizer, ids, firsts[j - 1], breaks[j - 1]) if j else ""
        nxt = _line(tokenizer, ids, firsts[j + 1], breaks[j + 1]) if j + 1 < len(breaks) else ""
        if heading_of(line, nxt, prev) is not None:
            out[a] = True
            if b + 1 < N:
                out[b + 1] = True
    return out


def _line(tokenizer, ids: list[int], a: int, b: int) -> str:
    """The text of the line of tokens [a, b] (b: the token holding its line break), without the break."""
    return tokenizer.decode(ids[a:b + 1]).split("\n")[0] if b - a <= 4 * HEADING_LINE_TOKENS else ""


def _newline_ids(tokenizer, tok: torch.Tensor) -> torch.Tensor:
    """(N,) bool: the token's text ends with a line break."""
    uniq = tok.unique().tolist()
    ends = {i for i in uniq if tokenizer.decode([i]).endswith("\n")}
    return torch.tensor([t in ends for t in tok.tolist()], dtype=torch.bool) if len(tok) else torch.zeros(0, dtype=torch.bool)


def word_scores(texts: Sequence[str], query: str) -> torch.Tensor:
    """(K,) BM25-like overlap of each unit with the query's content words (idf over the units themselves)."""
    return idf_scores([set(words(t)) for t in texts], content_terms(query))


def idf_scores(has: Sequence[set[str]], terms: Sequence[str],
               counted: Sequence[set[str]] | None = None) -> torch.Tensor:
    """(K,) for each unit k, the sum of the idf (over the K units) of the `terms` it has (`has[k]`); the document
    frequency counted over `counted` (K sets) where given, else over `has`."""
    K = len(has)
    out = torch.zeros(K)
    for w in terms:
        df = sum(w in h for h in (has if counted is None else counted))
        if df:
            idf = math.log(1 + (K - df + 0.5) / (df + 0.5))
            out += torch.tensor([idf if w in h else 0.0 for h in has])
    return out


def unit_scores(rule: str, seg: torch.Tensor, texts: list[str], att: torch.Tensor, rel: torch.Tensor,
                query: str) -> torch.Tensor:
    """(K,) one score per unit under `rule` (RULES): attention (the answer's attention summed over the unit),
    relevance (the answer-minus-prompt attention summed), words (word overlap with question + answer), combined
    and document (the attention share plus the word score, each scaled to its maximum; "document" scores
    every unit of the document, where attention is 0 outside the kept text)."""
    K = len(texts)
    if rule not in RULES:
        raise ValueError(f"unknown evidence rule {rule!r}; choose {', '.join(RULES)}")
    A = torch.zeros(K).scatter_add_(0, seg, att.float())
    if rule == "attention":
        return A
    if rule == "relevance":
        return torch.zeros(K).scatter_add_(0, seg, rel.float())
    W = word_scores(texts, query)
    if rule == "words":
        return W + 1e-6 * A  # ties (no shared word) go to the attention
    return A / A.max().clamp_min(1e-9) + W / W.max().clamp_min(1e-9)


# ---- passages ----------------------------------------------------------------------------------------------
class Neighbours:
    """Which units of a document stand next to each other: adjacent in the document (no gap between them) and in
    the same part (no source, page, chapter or section boundary of `part_at` between them). `src` (N,), `seg`
    (N,): the document position and unit of every token; `texts`: the K units' texts (their words are counted
    when a widening reaches them, not all up front: a document has hundreds of thousands)."""

    def __init__(self, src: torch.Tensor, seg: torch.Tensor, texts: Sequence[str], part_at: Sequence[int] = ()):
        K = len(texts)
        src, seg = src.long(), seg.long()
        first = torch.full((K,), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, src, "amin")  # (K,) document
        last = torch.full((K,), -1, dtype=torch.long).scatter_reduce(0, seg, src, "amax")       # span of each
        self.part = part_ids(first, part_at).tolist()  # (K,) the part of every unit's first token
        self.first, self.last, self.K, self.texts = first.tolist(), last.tolist(), K, texts
        self._words: dict[int, int] = {}

    def words(self, k: int) -> int:
        """count_words of unit `k`'s text."""
        if k not in self._words:
            self._words[k] = count_words(self.texts[k])
        return self._words[k]

    def joins(self, a: int, b: int) -> bool:
        """Whether unit `b` follows unit `a` (a < b) in the document, in the same part."""
        return self.last[a] + 1 == self.first[b] and self.part[a] == self.part[b]

    def widen(self, k: int, per: int, used: set[int] = frozenset()) -> list[int]:
        """Unit `k` widened with its neighbours (the next unit after, then the one before, alternately; none in
        `used`) to about `per` words; the units in document order."""
        lo = hi = k
        n = self.words(k)
        while n < per:
            grew = False
            for j in (hi + 1, lo - 1):
                if not (0 <= j < self.K) or j in used:
                    continue
                if (self.joins(hi, j) if j > hi else self.joins(j, lo)) and n + self.words(j) <= per:
                    n += self.words(j)
                    lo, hi = min(lo, j), max(hi, j)
                    grew = True
            if not grew:
                break
        return list(range(lo, hi + 1))


def choose(seg: torch.Tensor, texts: list[str], src: torch.Tensor, scores: torch.Tensor,
           max_passages: int = MAX_PASSAGES, max_words: int = MAX_WORDS, asked: torch.Tensor | None = None,
           part_at: Sequence[int] = ()) -> list[tuple[list[int], float]]:
    """The best units, each widened with neighbouring units (Neighbours: adjacent in the document, in the same
    part) to about max_words / max_passages words; returns [(unit indices in document order, score)], best
    first. `asked` (K,): the question's own word scores; the unit it ranks first is the second passage (where
    the question points, which a wrong answer's words do not)."""
    K = len(texts)
    if K == 0:
        return []
    near = Neighbours(src, seg, texts, part_at)
    per = max(8, max_words // max_passages)
    used: set[int] = set()
    out = []
    order = scores.argsort(descending=True).tolist()
    if asked is not None and float(asked.max()) > 0:
        order = order[:1] + [int(asked.argmax())] + order[1:]
    for k in order:
        if len(out) >= max_passages or k in used or not texts[k].strip():
            continue
        group = near.widen(k, per, used)
        used.update(group)
        out.append((group, float(scores[k])))
    return out


def _clip_words(text: str, limit: int) -> str:
    """`text` cut to at most `limit` words, the " …" that marks the cut counted among them."""
    return clip_to(text, limit)[0]


ELLIPSIS = "\u2026"


def clip_to(text: str, limit: int, keep: Sequence[tuple[int, int]] = (), cuts: Sequence[int] = (),
            lead: bool = True) -> tuple[str, int]:
    """(shown, at): `text` with its whitespace collapsed and at most `limit` words (count_words), the "…" that
    mark a cut counted, and the character offset in `text` of its first word shown. `keep`: character ranges
    [a, b) of `text`, widest first (a passage's core, then its top unit: where the answer is), the first that fits
    shown whole; the shown words start at the earliest of `cuts` (character offsets where a unit begins: a
    sentence or line; 0 always) that lets it fit, else at the range itself. `lead`: mark a cut at the start with
    "… " (a heading before it, "Heading … text", marks it already)."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    chunks = [text[a:b] for a, b in spans]
    weight = [count_words(c) for c in chunks]
    N = len(chunks)
    if limit <= 0 or N == 0:
        return "", 0
    if sum(weight) <= limit:
        return " ".join(chunks), spans[0][0]
    acc = [0]
    for w in weight:
        acc.append(acc[-1] + w)
    first_at = lambda pos: next((i for i, (_, b) in enumerate(spans) if b > pos), N)  # noqa: E731

    def reach(lo: int) -> int:  # the end of the longest run of chunks from `lo` that fits with its marks
        room = limit - (lead and lo > 0)
        hi = lo
        while hi < N and acc[hi + 1] - acc[lo] + (hi + 1 < N) <= room:
            hi += 1
        return hi

    starts = sorted({0, *(first_at(c) for c in cuts)} - {N})
    lo = None
    for a, b in keep:
        k0, k1 = first_at(a), first_at(max(a, b - 1)) + 1
        if k0 >= N:
            continue
        lo = next((c for c in starts if c <= k0 and reach(c) >= k1), k0 if reach(k0) >= k1 else None)
        if lo is not None:
            break
    if lo is None:  # not even the narrowest range fits: from its start, or the unit before it ("-i, --spool=N"
        # before its long description) when at least half the words are still the range's
        k0 = first_at(keep[-1][0]) if keep else 0
        lo = k0 if k0 < N else 0
        before = [c for c in starts if c < lo]
        if before and acc[reach(before[-1])] - acc[lo] >= limit // 2:
            lo = before[-1]
    hi = reach(lo)
    while hi == N and lo > 0 and acc[N] - acc[lo - 1] + (lead and lo > 1) <= limit:
        lo -= 1  # the end of the text shown and words to spare: the words before the cut too
    head = f"{ELLIPSIS} " if lead and lo > 0 else ""
    if hi == lo:  # one chunk longer than the room (a run of Han or kana): cut inside it
        shown = head + clip_words(" ".join(chunks[lo:]), limit - bool(head) - 1)
    else:
        shown = head + " ".join(chunks[lo:hi]) + (f" {ELLIPSIS}" if hi < N else "")
    while count_words(shown) > limit and " " in shown:  # a cut inside a chunk counted short: never over
        shown = shown.rsplit(" ", 2)[0] + f" {ELLIPSIS}"
    return shown, spans[lo][0]


# ---- locations ---------------------------------------------------------------------------------------------
def display_name(path: str) -> str:
    """A source's name as evidence shows it: "stdin" for "-" (documents.base.display_name, without importing
    the readers)."""
    return "stdin" if path == "-" else path


def source_of(pos: int, sources: Sequence[tuple[str, int]]) -> str:
    """The name of the source document position `pos` belongs to ("stdin" for "-"); sources: [(path, tokens)]
    in reading order."""
    at = 0
    for path, n in sources:
        if pos < at + n:
            return display_name(path)
        at += n
    return display_name(sources[-1][0]) if sources else ""


def parse_where(label: str) -> dict:
    """{'page'|'chapter'|'line'|'section': ...} from a provenance label ('doc.pdf · p. 12 · 3 Utilities')."""
    w = Where.parse(label)
    kind = w.kind()
    out: dict = {kind: getattr(w, kind)} if kind else {}
    if w.section:
        out["section"] = w.section
    return out


def provenance_at(provenance: list, pos: int) -> tuple[int, str]:
    """(first token of the labelled piece, label) holding document position `pos`."""
    start, label = 0, ""
    for s, w in provenance:
        if s > pos:
            break
        start, label = s, w
    return start, label


def document_tokens(engine, lo: int, hi: int) -> list[int] | None:
    """The document's token ids at positions [lo, hi), from the pot and its archive; None when some are held
    by neither (a per-head pot, or a read interrupted)."""
    if hi <= lo:
        return []
    out = torch.full((hi - lo,), -1, dtype=torch.long)
    src, tok = engine.pot.src.flatten().cpu(), engine.pot.tok.flatten().cpu()
    m = (src >= lo) & (src < hi)
    out[src[m] - lo] = tok[m]
    arch = engine.archive
    if len(arch):
        segs = torch.tensor(arch._segs, dtype=torch.long).view(-1, 2)
        hit = ((segs[:, 0] < hi) & (segs[:, 0] + segs[:, 1] > lo)).nonzero().flatten().tolist()
        for i in hit:
            s, ids = arch.segment(i)
            ids_t = torch.tensor(ids, dtype=torch.long)
            p = torch.arange(s, s + len(ids))
            k = (p >= lo) & (p < hi)
            out[p[k] - lo] = ids_t[k]
    if bool((out < 0).any()):
        return None
    return out.tolist()


def locate(engine, pos: int, sources: Sequence[tuple[str, int]]) -> tuple[str, dict]:
    """(source path, location) of document position `pos`. Text files: the exact line, counted from the tokens
    between the labelled piece's start and `pos` (the piece's own first line when they are not all held)."""
    start, label = provenance_at(engine.provenance, pos)
    where = parse_where(label)
    if "line" in where and pos > start:
        ids = document_tokens(engine, start, pos)
        if ids is not None:
            text = engine.tok.decode(ids, skip_special_tokens=True).lstrip("\n")  # a passage's leading blank line
            where["line"] += text.count("\n")
    return source_of(pos, sources), where


# ---- the whole step ----------------------------------------------------------------------------------------
@dataclass
class Context:
    """What an answer was written from: the kept entries (pot order) and the pinned header's token ids."""

    src: torch.Tensor
    tok: torch.Tensor
    header: list[int]

    @classmethod
    def of(cls, engine) -> "Context | None":
        """The context of the engine's last answer (None before any)."""
        got = getattr(engine, "answered_from", None)
        return cls(*got) if got is not None else None

    def text(self, tokenizer) -> str:
        return tokenizer.decode(self.tok.tolist(), skip_special_tokens=True)


def evidence(engine, ctx: Context, prompt: list[int], question: str, answer: str,
             sources: Sequence[tuple[str, int]], rule: str = DEFAULT_RULE, scored: dict | None = None
             ) -> list[Passage]:
    """The passages `answer` rests on (at most MAX_PASSAGES, ~MAX_WORDS words), best first. `scored`: what
    score_context() returned for the same context and answer (to rank under another rule without a forward)."""
    if scored is None:
        scored = score_context(engine, ctx, prompt, answer, sources)
    seg, texts, att, rel, src = scored["seg"], scored["texts"], scored["att"], scored["rel"], ctx.src
    bounds = part_starts(engine.provenance, sources)
    if rule == "document":
        doc = document_units(engine, sources=sources)
        if doc is not None:
            d_src, seg, texts = doc
            att = torch.zeros(d_src.numel()).index_put_((ctx.src,), att.float(), accumulate=True)
            rel = torch.zeros(d_src.numel())
            src = d_src
    if not texts:
        return []
    s = unit_scores(rule, seg, texts, att, rel, f"{question} {answer}")
    asked = word_scores(texts, question) if rule in ASKED_RULES else None
    out = []
    per = max(8, MAX_WORDS // MAX_PASSAGES)
    for group, score in choose(seg, texts, src, s, asked=asked, part_at=bounds):
        members = torch.isin(seg, torch.tensor(group))
        pos = src[members]
        start, stop = int(pos.min()), int(pos.max()) + 1
        # the passage decoded as one run of the document's tokens: units joined by a space would split a word
        # cut between two units (": q!" for ":q!")
        ids = document_tokens(engine, start, stop) if stop - start == int(members.sum()) else None
        whole = engine.tok.decode(ids, skip_special_tokens=True) if ids else " ".join(texts[g] for g in group)
        # a unit cut inside a character (a byte-level vocabulary splits non-Latin letters over tokens) starts or
        # ends with a piece of it, decoded as U+FFFD: not text of the document
        text = _clip_words(whole.strip("\ufffd"), per)  # a unit longer than its share is cut to it
        source, where = locate(engine, start, sources)
        if "line" in where:  # the line of the passage's first word (it may start with the line break before it)
            where["line"] += len(whole) - len(whole.lstrip("\n"))
        out.append(Passage(text=text, start=start, stop=stop, score=score, source=source, where=where))
    return out


def document_units(engine, limit: int = MAX_DOCUMENT_TOKENS, sources: Sequence[tuple[str, int]] = ()
                   ) -> tuple[torch.Tensor, torch.Tensor, list[str]] | None:
    """(src (T,), seg (T,), texts) of the whole document as read (the pot and its archive), cut at its parts
    (part_starts), cached on the engine until it reads more; None when it is longer than `limit` or not all of
    it is held."""
    n = engine.tokens_read
    bounds = part_starts(engine.provenance, sources)

    def compute():
        ids = document_tokens(engine, 0, n) if 0 < n <= limit else None
        if ids is None:
            return None
        src = torch.arange(n)
        seg, texts = units(src, torch.tensor(ids, dtype=torch.long), engine.tok, engine.boundaries,
                           parts=part_ids(src, bounds))
        return src, seg, texts
    return engine.derived("evidence units", (n, bounds, limit), compute)


def score_context(engine, ctx: Context, prompt: list[int], answer: str,
                  sources: Sequence[tuple[str, int]] = ()) -> dict:
    """The units of the kept text and the answer's attention over them (one forward, see answer_attention)."""
    tokz = engine.tok
    seg, texts = units(ctx.src, ctx.tok, tokz, engine.boundaries,
                       parts=part_ids(ctx.src, part_starts(engine.provenance, sources)))
    ans_ids = tokz.encode(answer, add_special_tokens=False) if answer.strip() else []
    att, rel = answer_attention(engine.model, ctx.header, ctx.tok, prompt, ans_ids)
    return {"seg": seg, "texts": texts, "att": att, "rel": rel}


_ENDS = (".", "!", "?", ":", ";")


def sentence_units(texts: list[str], unit: int, words: int = 60) -> tuple[int, int]:
    """[first, last] units of the whole sentence unit `unit` is part of: units are sentences, lines and pieces
    of long sentences, so a line of a PDF paragraph or "-J, --xz" before its description is completed, back to
    the previous sentence's end and on to its own, at most about `words` words."""
    def ends(k: int) -> bool:  # a unit of symbols alone ends no sentence: "~." in " ~.  Disconnect."
        t = texts[k]
        return (t.rstrip().endswith(_ENDS) and any(c.isalnum() for c in t)) or t.endswith("\n\n") or not t.strip()

    lo = hi = unit
    n = len(texts[unit].split())
    while lo > 0 and not ends(lo - 1) and n + len(texts[lo - 1].split()) <= words:
        lo -= 1
        n += len(texts[lo].split())
    while not ends(hi) and hi + 1 < len(texts) and texts[hi + 1].strip() and n + len(texts[hi + 1].split()) <= words:
        hi += 1
        n += len(texts[hi].split())
    return lo, hi
