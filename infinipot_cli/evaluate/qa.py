"""`infinipot bench qa`: real documents, the questions their readers ask, and the answers `ask` gives them.

A corpus folder holds `corpus.json` ([{id, path, kind, ...}]) and `questions.json` ([{id, doc, question,
answers, passage, kind, ...}]; `answers` are acceptable answer strings, [] when the document does not say).
For each document (filtered by --docs, at most --limit questions each) the questions are answered through
`Session` exactly as the CLI answers them (session.py: `Session.ask(question, grounded=True)`) in:

    direct         `ask DOC Q`: the question is the catalyst while reading (CaP-Q), one read per question
    read-then-ask  `read --save-pot` + `ask --load-pot`: one read with the general catalyst (CaP-G), the pot
                   saved to a file and loaded back, every question asked from it
    whole          baseline: the whole document in the model's window (only where it fits), read once
    words          baseline: the document's best-matching passages by plain word overlap (BM25 over ~40-word
                   chunks, up to `final_keep` tokens, in document order) given to the model alone
    retrieve=words ablation: read-then-ask with the method option retrieve=words (the words alone find and
                   judge the passages; no model judging), from the same read as read-then-ask when that runs

Metrics per document and flow: right (an acceptable answer in the short answer shown: the model's sentence, or
the span taken from the document; matched as a whole word, case-sensitively for one- and two-character answers),
the answer line holds it (also in a quoted sentence), evidence recall (an acceptable answer, or the gold passage,
in the evidence shown), invented (the model's guess / the answer shown names a number, name or identifier the
document does not contain), non-answers shown (names nothing beyond the question), withheld, and on unanswerable
questions the refusal rate.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import UsageError

FLOWS = ("direct", "read-then-ask")
BASELINES = ("whole", "words", "retrieve=words")
WORDS_ONLY = "retrieve=words"
CHUNK_WORDS = 40


@dataclass
class QAConfig:
    corpus: Path
    docs: list[str] | None = None
    limit: int | None = None
    ids: list[str] | None = None         # only these questions
    flows: list[str] = field(default_factory=lambda: list(FLOWS))
    baselines: list[str] = field(default_factory=lambda: list(BASELINES))
    max_tokens: int | None = None        # documents longer than this (approx. tokens) are skipped
    direct_max_tokens: int | None = None  # ... for the direct flow only (one read per question)
    method: str = "infinipot"
    pot_size: int = 2048
    keep: int = 1024
    final_keep: int | None = None
    max_new_tokens: int = 256            # as `ask`

    def describe(self) -> dict:
        d = asdict(self)
        d["corpus"] = str(self.corpus)
        return d


# ---- the corpus ------------------------------------------------------------------------------------------
def load_corpus(folder: Path) -> tuple[dict[str, dict], list[dict]]:
    """({doc id: entry with a resolved `path`}, questions), checked: a bad folder is a one-line UsageError."""
    folder = Path(folder)
    try:
        docs = json.loads((folder / "corpus.json").read_text())
        questions = json.loads((folder / "questions.json").read_text())
    except FileNotFoundError as e:
        raise UsageError(f"--corpus {folder}: {Path(e.filename).name} is missing (it needs corpus.json and "
                         "questions.json)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"--corpus {folder}: cannot read it ({e})") from None
    table = {}
    for d in docs:
        p = Path(d["path"])
        d = dict(d, path=str(p if p.is_absolute() else folder / p))
        table[d["id"]] = d
    for q in questions:
        if q.get("doc") not in table:
            raise UsageError(f"--corpus {folder}: question {q.get('id')!r} names an unknown document {q.get('doc')!r}")
    return table, questions


def pick(table: dict, questions: list[dict], cfg: QAConfig) -> list[tuple[dict, list[dict]]]:
    """[(document, its questions)] after --docs, --max-tokens and --limit, in corpus order."""
    if cfg.docs:
        unknown = [d for d in cfg.docs if d not in table]
        if unknown:
            raise UsageError(f"--docs: unknown document(s) {', '.join(unknown)}; the corpus has {', '.join(table)}")
    out = []
    for did, doc in table.items():
        if cfg.docs and did not in cfg.docs:
            continue
        if cfg.max_tokens and doc.get("approx_tokens", 0) > cfg.max_tokens:
            continue
        qs = [q for q in questions if q["doc"] == did and (not cfg.ids or q["id"] in cfg.ids)][:cfg.limit or None]
        if qs:
            out.append((doc, qs))
    return out


# ---- scoring ---------------------------------------------------------------------------------------------
def norm(text: str) -> str:
    return " ".join((text or "").lower().split())


def answered(text: str, answers: list[str], question: str = "") -> bool:
    """An acceptable answer in `text`, as a whole word (not inside another word; `-c` not in `--create`),
    case-insensitively, but case-sensitively for answers of one or two characters (`u` is not `U`). An answer the
    `question` itself holds counts only outside a restatement of it: "the live system user" does not answer
    "What is the default password of the live system user?" with "live"."""
    t = " ".join((text or "").split())
    asked = " ".join(words_of(question))
    for a in answers:
        a = " ".join(a.split())
        if not a:
            continue
        pre = r"(?<![\w-])" if a[0].isalnum() else ""
        post = r"(?![\w])" if a[-1].isalnum() else ""
        for m in re.finditer(pre + re.escape(a) + post, t, 0 if len(a) <= 2 else re.IGNORECASE):
            if not (asked and _restated(t, m, asked)):
                return True
    return False


def words_of(text: str) -> list[str]:
    return re.findall(r"\w+", (text or "").lower())


def _restated(text: str, m: re.Match, asked: str) -> bool:
    """Whether the match `m` in `text` stands inside words the question has in the same order: with the word
    before it or the word after it, as the question has them."""
    span = " ".join(words_of(m.group(0)))
    if not span or f" {span} " not in f" {asked} ":
        return False
    before, after = words_of(text[:m.start()])[-1:], words_of(text[m.end():])[:1]
    return any(f" {p} " in f" {asked} " for p in (" ".join(before + [span]) if before else None,
                                                   " ".join([span] + after) if after else None) if p)


def evidence_hit(texts: list[str], q: dict) -> bool:
    """An acceptable answer string, or the gold passage (or a 6+ word piece of evidence inside it), in the
    evidence."""
    joined = norm(" ".join(t.replace(" …", "") for t in texts))
    if answered(joined, q.get("answers") or []):
        return True
    gold = norm(q.get("passage") or "")
    if not gold:
        return False
    if gold in joined:
        return True
    return any(len(t.split()) >= 6 and norm(t.replace(" …", "")) in gold for t in texts)


def text_chunks(passages) -> list[tuple[str, str]]:
    """[(chunk, where)]: lines of each passage grouped into chunks of about CHUNK_WORDS words."""
    out = []
    for text, where in passages:
        cur: list[str] = []
        n = 0
        for line in text.split("\n"):
            w = len(line.split())
            if cur and n + w > CHUNK_WORDS:
                out.append(("\n".join(cur), where))
                cur, n = [], 0
            cur.append(line)
            n += w
        if any(x.strip() for x in cur):
            out.append(("\n".join(cur), where))
    return out


def bm25_best(chunks: list[str], query: str, n: int, k1: float = 1.2, b: float = 0.75) -> list[int]:
    """Indices of the `n` best chunks for `query` by BM25 over words (archive.words, stop words dropped)."""
    from ..pot.archive import content_terms, words

    terms = content_terms(query)
    bags = [Counter(words(c)) for c in chunks]
    K = len(bags)
    if not K or not terms:
        return []
    avg = sum(sum(c.values()) for c in bags) / K
    df = {t: sum(1 for c in bags if t in c) for t in terms}
    scores = []
    for i, c in enumerate(bags):
        L = sum(c.values())
        s = 0.0
        for t in terms:
            f = c.get(t, 0)
            if f:
                idf = math.log(1 + (K - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * L / max(avg, 1)))
        scores.append((s, i))
    scores.sort(key=lambda x: (-x[0], x[1]))
    return [i for s, i in scores[:n] if s > 0]


# ---- one answer ------------------------------------------------------------------------------------------
def record(q: dict, flow: str, session, ans, read_s: float) -> dict:
    """The scored record of `ans` (a session.Answer from Session.ask, grounded) to question `q`."""
    from ..answer import honesty

    g = ans.grounded
    answers = q.get("answers") or []
    doc_text = honesty.document_text(session.engine)
    shown = ans.text
    return {
        "id": q["id"], "doc": q["doc"], "flow": flow, "kind": q.get("kind"), "question": q["question"],
        "answers": answers, "unanswerable": not answers,
        "answer": shown, "how": ans.how, "short": ans.short, "guess": g.guess,
        "correct": answered(ans.short if ans.how in ("extracted", "quoted") else shown, answers, q["question"])
        if answers else None,
        "line_holds": answered(shown, answers, q["question"]) if answers else None,
        "correct_guess": answered(g.guess, answers, q["question"]) if answers else None,
        "refused": honesty.refused(shown), "withheld": g.withheld,
        "non_answer": non_answer(shown, q["question"]),
        "invented": honesty.unsupported(g.guess, q["question"], doc_text) if doc_text is not None else None,
        "invented_shown": (honesty.unsupported(shown, q["question"], doc_text)
                           if doc_text is not None and ans.how == "written" else []),
        "evidence": [p.as_json() for p in g.evidence],
        "evidence_recall": evidence_hit([p.text for p in g.evidence], q) if answers else None,
        "recalled": ans.recalled, "answer_s": round(ans.seconds, 3), "read_s": round(read_s, 2),
        "tokens": session.engine.tokens_read,
    }


_FILLER = re.compile(r"\b(the |this )?(document|text|passage|manual|page)s?( above| below)?\b|\banswer(s|ed)?\b|"
                     r"\bquestion(s)?\b|\b(contain|state|mention|suggest|say|describe|provide|discuss|explain)"
                     r"(s|ed|ing)?\b|\binformation\b")


def non_answer(text: str, question: str) -> bool:
    """A shown answer that names nothing beyond the question (a restatement, "the document contains the
    answer"): the bench's own check, independent of the product's. Refusals ("does not seem to say") and quoted
    document sentences are answers of their kind."""
    from ..answer import honesty
    from ..pot.archive import STOPWORDS, words

    if not text.strip():
        return True
    if honesty.refused(text) or "\u201c" in text:
        return False
    asked = set(words(question))
    rest = [w for w in words(_FILLER.sub(" ", text.lower())) if w not in STOPWORDS and w not in asked]
    quoted = re.findall(r"[\"'`]([^\"'`\n]{1,40})[\"'`]", text)  # 'The password is "live".' names "live"
    return not rest and not quoted


# ---- flows -----------------------------------------------------------------------------------------------
def _pot_config(cfg: QAConfig, method: str | None = None):
    from ..pot.config import PotConfig, split_method_spec

    base, spec = split_method_spec(method or cfg.method)
    knobs = {"size": cfg.pot_size, "keep": cfg.keep} if base not in ("full",) else {}
    if cfg.final_keep is not None and base != "full":
        knobs["final_keep"] = cfg.final_keep
    return PotConfig(method=base, **{**spec, **knobs}).validate()


def _open(doc: dict):
    """The document's source: by path, or (corpus field "stdin") streamed as `cat DOC | infinipot ask - ...` reads
    it (the stream stays open until the source has been read)."""
    from ..documents import open_source

    if doc.get("stdin"):
        return open_source("-", "auto", stdin=open(doc["path"], "rb"))
    return open_source(doc["path"], "auto")


def _ask(session, q: dict, cfg: QAConfig):
    """The question asked as `infinipot ask` asks it (Session.ask, checked against the document)."""
    return session.ask(q["question"], max_new_tokens=cfg.max_new_tokens, grounded=True)


def run_direct(lm, cfg, doc, qs, emit):
    """`infinipot ask DOC Q`: a read per question, the question the catalyst (CaP-Q) and expected while reading."""
    from ..session import Catalyst, Session

    for q in qs:
        s = Session.start(lm, _pot_config(cfg), Catalyst("question", q["question"]))
        s.expect(q["question"])
        s.read(_open(doc))
        emit(record(q, "direct", s, _ask(s, q, cfg), s.read_s))


def run_read_then_ask(lm, cfg, doc, qs, emit):
    """`infinipot read DOC --save-pot F` then `infinipot ask --load-pot F Q` for every question."""
    from ..session import Catalyst, Session

    s = Session.start(lm, _pot_config(cfg), Catalyst("general"))
    s.read(_open(doc))
    read_s = s.read_s
    folder = tempfile.mkdtemp(prefix="infinipot-qa-")
    path = os.path.join(folder, "doc.pot")
    try:
        s.save(path)
        s = Session.resume(lm, path)
    finally:
        if os.path.exists(path):
            os.remove(path)
        os.rmdir(folder)
    for q in qs:
        if "read-then-ask" in cfg.flows:
            emit(record(q, "read-then-ask", s, _ask(s, q, cfg), read_s))
        if WORDS_ONLY in cfg.baselines:  # the same pot, the answer's passages found and judged by the words alone
            emit(record(q, WORDS_ONLY, s, _ask_with(s, q, cfg, "words"), read_s))


def _ask_with(session, q: dict, cfg: QAConfig, retrieve: str):
    """`_ask` with the pot's `retrieve` option set to `retrieve` for this question (it only acts when answering)."""
    pot_cfg = session.engine.cfg
    was, pot_cfg.retrieve = pot_cfg.retrieve, retrieve
    try:
        return _ask(session, q, cfg)
    finally:
        pot_cfg.retrieve = was


def window(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 0) or 0) or 1 << 30


def run_whole(lm, cfg, doc, qs, emit):
    """Baseline: the whole document in the model's window (method full), read once, where it fits."""
    from ..pot.prompts import Prompts
    from ..pot.reader import token_stream
    from ..session import Catalyst, Session

    P = Prompts(lm.tokenizer)
    n = sum(len(ids) for ids, _ in token_stream(lm.tokenizer, _open(doc).passages()))
    room = len(P.header_ids()) + n + len(P.ask(qs[0]["question"])[0]) + 64 + cfg.max_new_tokens
    if room > window(lm.model):
        return f"{n} tokens: beyond the model's window ({window(lm.model)})"
    s = Session.start(lm, _pot_config(cfg, "full"), Catalyst("general"))
    s.read(_open(doc))
    for q in qs:
        emit(record(q, "whole", s, _ask(s, q, cfg), s.read_s))
    return None


class _Chunks:
    """A document source made of chosen text chunks (the words baseline): what Session.read reads."""

    format = "text"

    def __init__(self, path: str, chunks: list[tuple[str, str]]):
        self.path, self.chunks, self.size_bytes, self.units, self.warnings = path, chunks, None, {}, []
        self.content_hash = None
        self.name = path

    def passages(self):
        from ..documents.base import Passage

        return iter([Passage(text, where or "passage") for text, where in self.chunks])


def run_words(lm, cfg, doc, qs, emit):
    """Baseline: the document's best-matching ~40-word chunks for the question by BM25, up to `final_keep`
    tokens (default 512), in document order, given to the model alone (method full)."""
    from ..session import Catalyst, Session

    src = _open(doc)
    chunks = text_chunks((p.text, p.where) for p in src.passages())
    budget = cfg.final_keep or 512
    sizes = [len(lm.tokenizer.encode(c, add_special_tokens=False)) for c, _ in chunks]
    for q in qs:
        chosen, used = [], 0
        for i in bm25_best([c for c, _ in chunks], q["question"], len(chunks)):
            if used + sizes[i] <= budget:
                chosen.append(i)
                used += sizes[i]
        s = Session.start(lm, _pot_config(cfg, "full"), Catalyst("general"))
        s.read(_Chunks(doc["path"], [chunks[i] for i in sorted(chosen)]))
        emit(record(q, "words", s, _ask(s, q, cfg), s.read_s))


RUNNERS: dict[str, Callable] = {"direct": run_direct, "read-then-ask": run_read_then_ask, "whole": run_whole,
                                "words": run_words, WORDS_ONLY: run_read_then_ask}


def run_qa(lm, cfg: QAConfig, on_record: Callable[[dict], None], log: Callable[[str], None]) -> list[dict]:
    """Every (document, flow) of the config; each record goes to `on_record` as it comes. Returns skip notes."""
    table, questions = load_corpus(cfg.corpus)
    skipped = []
    for doc, qs in pick(table, questions, cfg):
        for flow in list(cfg.flows) + list(cfg.baselines):
            if flow == WORDS_ONLY and "read-then-ask" in cfg.flows:
                continue  # asked from read-then-ask's read
            if flow == "direct" and cfg.direct_max_tokens and doc.get("approx_tokens", 0) > cfg.direct_max_tokens:
                skipped.append({"doc": doc["id"], "flow": flow, "why": "longer than --direct-max-tokens"})
                continue
            t0 = time.perf_counter()
            log(f"{doc['id']} · {flow}: {len(qs)} question(s)")

            def emit(rec, doc=doc, flow=flow):
                mark = "ok " if rec["correct"] else ("-- " if rec["unanswerable"] else "XX ")
                log(f"  {mark}{rec['id']}: {rec['answer']!r}" + (f" (guess {rec['guess']!r})" if rec["withheld"] else ""))
                on_record(rec)

            try:
                why = RUNNERS[flow](lm, cfg, doc, qs, emit)
            except KeyboardInterrupt:
                raise
            except Exception as e:  # noqa: BLE001 - one document's failure does not end the bench
                if os.environ.get("INFINIPOT_DEBUG"):
                    raise
                why = f"failed: {type(e).__name__}: {e}"
            if why:
                skipped.append({"doc": doc["id"], "flow": flow, "why": why})
                log(f"  skipped: {why}")
            else:
                log(f"  {time.perf_counter() - t0:.0f} s")
    return skipped


# ---- summary ---------------------------------------------------------------------------------------------
def _rate(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return round(sum(bool(x) for x in xs) / len(xs), 3) if xs else None


def summarize(records: list[dict]) -> list[dict]:
    """One row per (document, flow) and one per flow over all documents ("all")."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["doc"], r["flow"]), []).append(r)
        groups.setdefault(("all", r["flow"]), []).append(r)
    rows = []
    for (doc, flow), rs in groups.items():
        ans = [r for r in rs if not r["unanswerable"]]
        una = [r for r in rs if r["unanswerable"]]
        row = {"doc": doc, "flow": flow, "questions": len(rs), "answerable": len(ans),
               "right": _rate([r["correct"] for r in ans]),
               "line_holds": _rate([r["line_holds"] for r in ans]),
               "right_guess": _rate([r["correct_guess"] for r in ans]),
               "evidence_recall": _rate([r["evidence_recall"] for r in ans]),
               "how": dict(Counter(r["how"] for r in rs)),
               "non_answers": sum(bool(r["non_answer"]) for r in rs),
               "invented": sum(bool(r["invented"]) for r in rs if r["invented"] is not None),
               "invented_shown": sum(bool(r["invented_shown"]) for r in rs if r["invented_shown"] is not None),
               "withheld": _rate([r["withheld"] for r in rs]),
               "right_withheld": sum(bool(r["withheld"] and r["correct_guess"]) for r in ans),
               "refusal_unanswerable": _rate([r["refused"] for r in una]) if una else None,
               "answer_s": round(sum(r["answer_s"] for r in rs) / len(rs), 2)}
        rows.append(row)
    order = {f: i for i, f in enumerate(FLOWS + BASELINES)}
    rows.sort(key=lambda r: (r["doc"] == "all", r["doc"], order.get(r["flow"], 9), r["flow"]))
    return rows


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def markdown(rows: list[dict], meta: dict) -> str:
    """The findings table (per document and flow, then per flow over all documents) as markdown."""
    head = ("| document | flow | questions | right | answer line holds it | evidence holds it | non-answers shown "
            "| invented (shown) | right guesses withheld | unanswerable refused | answer s |")
    lines = [f"# bench qa — {meta.get('model', '')}", "",
             f"config: `{json.dumps(meta.get('config', {}), default=str)}`", "", head, "|" + "---|" * 11]
    for r in rows:
        lines.append(f"| {r['doc']} | {r['flow']} | {r['questions']} | {_pct(r['right'])} | "
                     f"{_pct(r['line_holds'])} | {_pct(r['evidence_recall'])} | {r['non_answers']} | "
                     f"{r['invented']} ({r['invented_shown']}) | {r['right_withheld']} | "
                     f"{_pct(r['refusal_unanswerable'])} | {r['answer_s']} |")
    return "\n".join(lines) + "\n"
