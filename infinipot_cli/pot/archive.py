"""The archive: what distillations evicted, kept as text (token ids) so a later question can recall it.

InfiniPot's pot keeps M entries whatever the document's length (§3.2). When the question is unknown while
reading (`read --save-pot` with the general catalyst CaP-G), a fact the later question asks for is usually
evicted, and the pot alone cannot answer it (measured: 2 of 15 against 10 of 15 with the question known).
The archive records, at every distillation, the token ids and document positions of the entries no head
keeps any more, split into sentence segments. It costs 4 bytes a token (int32), lives in the pot file next
to the KV cache, and is never attended to while reading, so the pot's memory bound is unchanged.

At answer time (`recall`), when the pot was read without this question, the archive's sentences are ranked
against the question with BM25 over words (a hit comes with its neighbouring sentences for context), the
best ones up to a token budget are forwarded into the pot at their original document positions (as if
read), and the engine's usual final distillation with the question as the catalyst (CaP-Q, §3.3.1) picks
what the answer is generated from. Nothing re-reads the source document.

    ids   (T,)   int32  token ids of every archived segment, concatenated
    segs  (K, 2) int64  per segment: document position of its first token, its length

The archive lives in host memory. A distillation only queues the positions it evicts (on an accelerator as host
copies in flight, without waiting: pinned memory); they are archived between distillations once their copies have
landed (`settle(wait=False)`, which the engine calls before each cycle) or when the archive is read. So a
distillation cycle does no host work on the archive and reads nothing on the host, on any device.
"""

from __future__ import annotations

import math
import re
from collections import Counter
import torch

from .pot import shared_row
from .scoring.segments import BoundaryTable, segment_ids, unit_starts

NEIGHBOURS = 1            # archived segments on each side of a hit that come with it, when adjacent
_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script; "_" splits identifiers as before
# Scripts written without spaces between words (Han, kana): a run of them is cut into character bigrams
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
STOPWORDS = frozenset("""a an and are as at be by did do does document for from has have he her his how i in is it
its me my of on or she that the their them there these they this to was were what when where which who whom whose
why will with you your about above after before text answer question named called""".split())


def words(text: str) -> list[str]:
    """Lowercase word tokens of any script; a trailing plural 's' is dropped so 'keys' matches 'key' (not from a
    stop word: 'this' stays 'this'). Chinese and Japanese, written without spaces, give the character bigrams of
    each run ("灯塔看守" -> 灯塔 塔看 看守), the usual index terms for them."""
    out = []
    for w in _WORD.findall(text.lower()):
        if _UNSPACED.search(w):
            for part in re.split(f"({_UNSPACED.pattern})", w):
                if not part:
                    continue
                if _UNSPACED.fullmatch(part):
                    out.extend([part] if len(part) == 1 else [part[i:i + 2] for i in range(len(part) - 1)])
                else:
                    out.append(part)
            continue
        plural = len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")) and w not in STOPWORDS
        out.append(w[:-1] if plural else w)
    return out


def content_terms(text: str) -> list[str]:
    """The content words of `text` (a question, a query), each once, in order: its words less the stop words."""
    return [w for w in dict.fromkeys(words(text)) if w not in STOPWORDS]


def unspaced(word: str) -> bool:
    """Whether a words() term comes from a script written without spaces (a bigram of Han or kana)."""
    return bool(_UNSPACED.match(word))


def clip_words(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed, cut to about `limit` words (count_words) and marked " …" when cut."""
    out, n = [], 0
    for chunk in text.split():
        k = count_words(chunk)
        if n + k > limit:
            wide = _UNSPACED.search(chunk)
            if wide and limit - n > 0:  # a run of Han or kana: cut inside it, two characters a word
                out.append(chunk[:wide.start() + 2 * (limit - n)])
            return " ".join(out) + " …"
        out.append(chunk)
        n += k
    return " ".join(out)


def count_words(text: str) -> int:
    """Words in `text` for length limits: whitespace-separated words, a run of Han or kana counting one word per
    two characters (it has no spaces to count)."""
    n = 0
    for chunk in text.split():
        wide = sum(len(m) for m in _UNSPACED.findall(chunk))
        rest = _UNSPACED.sub("", chunk) if wide else chunk
        n += (wide + 1) // 2 + (1 if not wide or re.search(r"[^\W_]", rest) else 0)
    return n


class Archive:
    """Append-only store of evicted sentence segments (token ids + document start), with a BM25 index."""

    def __init__(self, max_segment: int) -> None:
        self.max_segment = max_segment             # tokens per segment at most (long sentences split, as in selection)
        self._chunks: list[torch.Tensor] = []      # int32 pieces of `ids`, concatenated lazily
        self._segs: list[tuple[int, int]] = []     # (src start, length)
        self._ids: torch.Tensor | None = None
        self._offsets: list[int] = [0]             # token offset of segment i in `ids`
        self._covered = torch.zeros(0, dtype=torch.bool)  # document positions already archived
        self._index: list[Counter] = []            # per segment: word counts (built lazily, incrementally)
        self._df: Counter = Counter()
        self._queued: list[tuple] = []             # evictions from an accelerator still being copied to the host

    # ---- sizes ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        self._settle()
        return len(self._segs)

    @property
    def tokens(self) -> int:
        self._settle()
        return self._offsets[-1]

    def nbytes(self) -> int:
        return 4 * self.tokens + 16 * len(self._segs)

    # ---- recording --------------------------------------------------------------------------------
    def add(self, src: torch.Tensor, tok: torch.Tensor, starts: torch.Tensor) -> None:
        """Append entries sorted by document position: src, tok (N,) int, starts (N,) bool (a sentence or a
        gap begins here). Positions already archived are skipped (a recalled sentence evicted again)."""
        if src.numel() == 0:
            return
        top = int(src.max()) + 1
        if top > self._covered.numel():
            self._covered = torch.cat([self._covered, torch.zeros(max(top, 2 * self._covered.numel())
                                                                  - self._covered.numel(), dtype=torch.bool)])
        new = ~self._covered[src]
        if not bool(new.all()):  # drop what is archived already; a dropped stretch leaves a gap (a new segment)
            src, tok, starts = src[new], tok[new], starts[new].clone()
            if src.numel() == 0:
                return
            starts[1:] |= src[1:] != src[:-1] + 1
            starts[0] = True
        self._covered[src] = True
        seg = segment_ids(starts[None], self.max_segment)[0]                   # (N,) segment per entry
        lengths = torch.bincount(seg).tolist()
        firsts = torch.cumsum(torch.tensor([0] + lengths[:-1]), 0).tolist()
        for f, n in zip(firsts, lengths):
            self._segs.append((int(src[f]), int(n)))
            self._offsets.append(self._offsets[-1] + int(n))
        self._chunks.append(tok.to(torch.int32).cpu())
        self._ids = None

    def record_eviction(self, src: torch.Tensor, tok: torch.Tensor, idx: torch.Tensor,
                        boundaries: BoundaryTable) -> None:
        """Before a distillation keeps `idx` (L, H, K) of the pot's src/tok (L, H, S): queue the document entries
        that no (layer, head) keeps (with the default shared selection: every evicted entry) for archiving, as
        host copies (off the CPU in flight: one row of each when the selection is shared, since every head then
        holds the same entries). `settle` or any read of the archive archives them, in order."""
        row = shared_row(idx)
        if row is not None:  # a shared selection's pot holds the same entries in every head
            src, tok, idx = src[:1, :1], tok[:1, :1], row.view(1, 1, -1)
        if src.device.type == "cpu":  # a copy: the queue outlives the distillation
            host = tuple(t.clone() for t in (src, tok, idx))
        else:
            host = tuple(t.to("cpu", non_blocking=True) for t in (src, tok, idx))  # pinned: no wait
        done = torch.cuda.Event() if src.device.type == "cuda" else None
        if done is not None:
            done.record()
        self._queued.append((done, host, boundaries))

    def settle(self, wait: bool = True) -> None:
        """Archive the queued evictions, in order. wait=False: only those whose host copies have landed (all of
        them on the CPU), stopping at the first still in flight, so the host never waits for the device."""
        while self._queued:
            done, (src, tok, idx), boundaries = self._queued[0]
            if done is not None:
                if not wait and not done.query():
                    return
                done.synchronize()
            self._queued.pop(0)
            self._evict(src, tok, idx, boundaries)

    def _settle(self) -> None:
        self.settle(wait=True)

    def _evict(self, src: torch.Tensor, tok: torch.Tensor, idx: torch.Tensor, boundaries: BoundaryTable) -> None:
        kept = src.gather(-1, idx)
        if bool((src == src[:1, :1]).all()):
            old, old_tok = src[0, 0], tok[0, 0]
        else:  # per-head selection: the union of positions, one token id each
            old, first = src.flatten(), tok.flatten()
            old, inv = old.unique(return_inverse=True)
            old_tok = torch.zeros_like(old).scatter_(0, inv, first)
        gone = (old >= 0) & ~torch.isin(old, kept.flatten())
        if not bool(gone.any()):
            return
        s, t = old[gone], old_tok[gone]
        order = s.argsort()
        s, t = s[order], t[order]
        starts = unit_starts(s[None], t[None], boundaries)[0]
        self.add(s, t, starts)

    # ---- access -----------------------------------------------------------------------------------
    def ids(self) -> torch.Tensor:
        self._settle()
        if self._ids is None:
            self._ids = torch.cat(self._chunks) if self._chunks else torch.zeros(0, dtype=torch.int32)
            self._chunks = [self._ids] if self._chunks else []
        return self._ids

    def segment(self, i: int) -> tuple[int, list[int]]:
        """(document start, token ids) of segment i."""
        self._settle()
        a, b = self._offsets[i], self._offsets[i + 1]
        return self._segs[i][0], self.ids()[a:b].tolist()

    # ---- saving -----------------------------------------------------------------------------------
    def tensors(self) -> dict[str, torch.Tensor]:
        """The pot-file tensors (empty dict when nothing was archived)."""
        self._settle()
        if not self._segs:
            return {}
        return {"archive.ids": self.ids().contiguous(),
                "archive.segs": torch.tensor(self._segs, dtype=torch.long).view(-1, 2)}

    @classmethod
    def from_tensors(cls, ids: torch.Tensor, segs: torch.Tensor, max_segment: int) -> "Archive":
        """Rebuild from pot-file tensors; raises ValueError when they do not describe an archive."""
        a = cls(max_segment)
        if ids.dim() != 1 or segs.dim() != 2 or segs.shape[1] != 2 or ids.dtype != torch.int32 \
                or segs.dtype != torch.long:
            raise ValueError("archive tensors have the wrong shape or type")
        lengths = segs[:, 1]
        if segs.numel() and (int(lengths.min()) < 1 or int(segs[:, 0].min()) < 0) or int(lengths.sum()) != ids.numel():
            raise ValueError("archive segments do not match its tokens")
        a._chunks = [ids.clone()]
        a._segs = [(int(s), int(n)) for s, n in segs.tolist()]
        a._offsets = [0] + torch.cumsum(lengths, 0).tolist()
        if a._segs:
            top = int((segs[:, 0] + lengths).max())
            a._covered = torch.zeros(top, dtype=torch.bool)
            for s, n in a._segs:
                a._covered[s:s + n] = True
        return a

    # ---- recall -----------------------------------------------------------------------------------
    def _build_index(self, tokenizer) -> None:
        self._settle()
        done = len(self._index)
        if done == len(self._segs):
            return
        ids = self.ids()
        segs = [ids[self._offsets[i]:self._offsets[i + 1]].tolist() for i in range(done, len(self._segs))]
        batch = getattr(tokenizer, "batch_decode", None)
        texts = batch(segs, skip_special_tokens=True) if batch else [tokenizer.decode(x) for x in segs]
        for text in texts:
            c = Counter(words(text))
            self._index.append(c)
            self._df.update(c.keys())

    def rank(self, tokenizer, question: str, k1: float = 1.2, b: float = 0.75) -> list[tuple[float, int]]:
        """(BM25 score, segment) for every archived segment sharing a content word with `question`, best first."""
        self._build_index(tokenizer)
        terms = content_terms(question)
        K = len(self._segs)
        if not terms or not K:
            return []
        avg = self.tokens / K
        out = []
        idf = {t: math.log(1 + (K - self._df[t] + 0.5) / (self._df[t] + 0.5)) for t in terms if self._df[t]}
        if not idf:
            return []
        for i, c in enumerate(self._index):
            s = 0.0
            n = self._segs[i][1]
            for t, w in idf.items():
                f = c.get(t, 0)
                if f:
                    s += w * f * (k1 + 1) / (f + k1 * (1 - b + b * n / avg))
            if s > 0:
                out.append((s, i))
        out.sort(key=lambda x: (-x[0], x[1]))
        return out

    def candidates(self, tokenizer, question: str, budget: int, exclude: torch.Tensor | None = None) -> list[int]:
        """Segments to recall, in document order: the best BM25 hits, each with its adjacent neighbours, up to
        `budget` tokens. `exclude`: document positions the pot holds now (their segments are skipped)."""
        self._settle()
        held = set(exclude.tolist()) if exclude is not None and exclude.numel() else set()
        chosen: set[int] = set()
        used = 0

        def free(i: int) -> bool:
            s, n = self._segs[i]
            return i not in chosen and s not in held and s + n - 1 not in held

        for _, i in self.rank(tokenizer, question):
            group = [i]
            for d in range(1, NEIGHBOURS + 1):  # adjacent in the document: the sentence before and after
                if i - d >= 0 and sum(self._segs[i - d]) == self._segs[i - d + 1][0]:
                    group.insert(0, i - d)
                if i + d < len(self._segs) and sum(self._segs[i + d - 1]) == self._segs[i + d][0]:
                    group.append(i + d)
            for j in sorted(group, key=lambda j: j != i):  # the hit first, then its context
                n = self._segs[j][1]
                if free(j) and used + n <= budget:
                    chosen.add(j)
                    used += n
            if used >= budget:
                break
        return sorted(chosen, key=lambda j: self._segs[j][0])

    def recall(self, tokenizer, question: str, budget: int,
               exclude: torch.Tensor | None = None) -> list[tuple[int, list[int]]]:
        """The segments `candidates` picks, as (document start, token ids) in document order (Engine recalls
        them into the pot)."""
        return [self.segment(i) for i in self.candidates(tokenizer, question, budget, exclude)]
