"""`infinipot bench qa`: real documents, the questions their readers ask, and the evidence of every answer.

A corpus folder holds `corpus.json` ([{id, path, kind, ...}]) and `questions.json` ([{id, doc, question,
answers, passage, kind, ...}]; `answers` are case-insensitive substrings, [] when the document does not say).
For each document (filtered by --docs, at most --limit questions each) the questions are answered in:

    direct         `ask DOC Q`: the question is the catalyst while reading (CaP-Q), one read per question
    read-then-ask  `read --save-pot` + `ask --load-pot`: one read with the general catalyst (CaP-G), the pot
                   saved to a file and loaded back, every question asked from it
    whole          baseline: the whole document in the model's window (only where it fits), read once
    words          baseline: the document's best-matching passages by plain word overlap (BM25 over ~40-word
                   chunks, up to `final_keep` tokens, in document order) given to the model alone

Every answer is grounded (grounding.py): its evidence under each rule of evidence.RULES and its support check
under both scopes of honesty.SCOPES are recorded, so one run measures them all. Metrics per document and flow:
accuracy (an acceptable answer string in the answer shown; also in the model's own guess), evidence recall
(an answer string, or the gold passage, in the evidence text), invented (the guess names a number, name or
identifier the document does not contain), withheld (shown as "does not seem to say"), and on unanswerable
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
BASELINES = ("whole", "words")
# Ways to ask, each answered from the same read: standard (as `ask`); reshow (the document's three best-matching
# sentences for the question, BM25 over the pot and its archive, quoted before the question); wide (the
# question's last distillation keeps WIDE_KEEP entries instead of final_keep: more kept text for the answer)
VARIANTS = ("standard", "reshow", "wide")
WIDE_KEEP = 1024
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
    max_new_tokens: int = 64
    variants: list[str] = field(default_factory=lambda: ["standard"])

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


def answered(text: str, answers: list[str]) -> bool:
    t = norm(text)
    return any(norm(a) in t for a in answers)


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


# ---- one answer ------------------------------------------------------------------------------------------
def ask_prompt(P, question: str, variant: str, engine=None):
    """(prompt, focus) for `question`: the standard prompt, or with `reshow` the document's three best-matching
    sentences for it (BM25 over the pot and its archive) quoted before the question."""
    if variant != "reshow" or engine is None:
        return P.ask(question)
    from ..prompts import question_request

    passages = reshown(engine, question)
    request = ("Passages of the document that may hold the answer:\n" + "\n".join(f"- {p}" for p in passages)
               + "\n\n" + question_request(question)) if passages else question_request(question)
    return P.tail_focus(request, question.strip())


def reshown(engine, question: str, n: int = 3, words: int = 60) -> list[str]:
    """The `n` best ~40-word chunks of the document as read (pot + archive) for `question` by BM25."""
    from ..honesty import document_text

    text = document_text(engine)
    if not text:
        return []
    chunks = text_chunks([(text, "")])
    best = bm25_best([c for c, _ in chunks], question, n)
    return [" ".join(chunks[i][0].split()[:words]) for i in sorted(best)]


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
    from ..archive import STOPWORDS, words

    terms = [w for w in dict.fromkeys(words(query)) if w not in STOPWORDS]
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


def answer_one(lm, P, engine, q: dict, flow: str, cfg: QAConfig, sources: list[tuple[str, int]],
               doc_text: str | None, variant: str = "standard") -> dict:
    """Ask `q` of `engine` the `variant` way (VARIANTS), ground the answer; the record (scored)."""
    from .. import evidence as ev
    from .. import honesty
    from ..grounding import ground
    from ..stopping import stopper_for

    question = q["question"]
    prompt, focus = ask_prompt(P, question, variant, engine)
    stopper = stopper_for("ask")
    t0 = time.perf_counter()
    final_keep = engine.cfg.final_keep
    if variant == "wide":
        engine.cfg.final_keep = WIDE_KEEP
    try:
        guess = stopper.trim(engine.answer(prompt, "question", max_new_tokens=cfg.max_new_tokens,
                                           stop_ids=P.stop_ids("ask"), focus=focus,
                                           should_stop=stopper.should_stop)).strip()
    finally:
        engine.cfg.final_keep = final_keep
    answer_s = time.perf_counter() - t0
    ctx = ev.Context.of(engine)
    scored = ev.score_context(engine, ctx, prompt, guess)
    g = ground(engine, prompt, question, guess, sources, scored=scored)
    ground_s = time.perf_counter() - t0 - answer_s
    answers = q.get("answers") or []
    ctx_text = ctx.text(engine.tok)
    doc_text = doc_text if doc_text is not None else honesty.document_text(engine)
    rec = {
        "id": q["id"], "doc": q["doc"], "flow": flow if variant == "standard" else f"{flow}+{variant}",
        "variant": variant, "kind": q.get("kind"), "question": question,
        "answers": answers, "guess": guess, "answer": g.answer, "unanswerable": not answers,
        "correct_guess": answered(guess, answers) if answers else None,
        "correct": answered(g.answer, answers) if answers else None,
        "refused": honesty.refused(g.answer), "guess_refused": honesty.refused(guess),
        "withheld": g.withheld,
        "invented": honesty.unsupported(guess, question, doc_text) if doc_text is not None else None,
        "unsupported_context": honesty.unsupported(guess, question, ctx_text),
        "in_context": answered(ctx_text, answers) if answers else None,
        "evidence": [p.as_json() for p in g.evidence],
        "evidence_recall": {}, "context_tokens": int(ctx.tok.numel()), "recalled": engine.recalled,
        "answer_s": round(answer_s, 3), "ground_s": round(ground_s, 3),
    }
    for rule in ev.RULES:
        ps = g.evidence if rule == ev.DEFAULT_RULE else ev.evidence(engine, ctx, prompt, question, guess, sources,
                                                                    rule=rule, scored=scored)
        rec["evidence_recall"][rule] = evidence_hit([p.text for p in ps], q) if answers else None
    return rec


# ---- flows -----------------------------------------------------------------------------------------------
def _engine(lm, P, pcfg, catalyst: tuple):
    from ..engine import Engine

    eng = Engine(lm.model, lm.tokenizer, pcfg, catalyst_ids=catalyst[0], catalyst_focus=catalyst[1])
    eng.pin(P.header_ids())
    return eng


def _read(eng, lm, path: str) -> tuple[list[tuple[str, int]], float]:
    from ..documents import open_source
    from ..reader import SourceRecord, read_source

    src = open_source(path, "auto")
    rec = SourceRecord(path=path, format=src.format)
    t0 = time.perf_counter()
    read_source(eng, lm.tokenizer, src, rec)
    return [(path, rec.tokens)], time.perf_counter() - t0


def _pot_config(cfg: QAConfig, method: str | None = None):
    from ..config import PotConfig, split_method_spec

    base, spec = split_method_spec(method or cfg.method)
    knobs = {"size": cfg.pot_size, "keep": cfg.keep} if base not in ("full",) else {}
    if cfg.final_keep is not None and base != "full":
        knobs["final_keep"] = cfg.final_keep
    return PotConfig(method=base, **{**spec, **knobs}).validate()


def run_direct(lm, P, cfg, doc, qs, emit):
    pcfg = _pot_config(cfg)
    for q in qs:
        prompt, focus = P.ask(q["question"])
        eng = _engine(lm, P, pcfg, P.catalyst("question", q["question"]))
        eng.expect(prompt, focus)  # the question rides the read's last forward, as in `ask`
        sources, read_s = _read(eng, lm, doc["path"])
        for v in cfg.variants:  # every variant from the same read (the pot is restored after each answer)
            rec = answer_one(lm, P, eng, q, "direct", cfg, sources, None, v)
            emit(dict(rec, read_s=round(read_s, 2), tokens=eng.tokens_read))


def run_read_then_ask(lm, P, cfg, doc, qs, emit):
    from ..honesty import document_text
    from ..potfile import load_pot, save_pot

    eng = _engine(lm, P, _pot_config(cfg), P.catalyst("general"))
    sources, read_s = _read(eng, lm, doc["path"])
    folder = tempfile.mkdtemp(prefix="infinipot-qa-")
    path = os.path.join(folder, "doc.pot")
    try:
        save_pot(path, eng, {"sources": [{"path": p, "tokens": n} for p, n in sources], "model": lm.name})
        eng, _ = load_pot(path, lm.model, lm.tokenizer, expect_model_name=lm.name)
    finally:
        if os.path.exists(path):
            os.remove(path)
        os.rmdir(folder)
    eng.finish()
    text = document_text(eng)
    for q in qs:
        for v in cfg.variants:
            rec = answer_one(lm, P, eng, q, "read-then-ask", cfg, sources, text, v)
            emit(dict(rec, read_s=round(read_s, 2), tokens=eng.tokens_read))


def window(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 0) or 0) or 1 << 30


def run_whole(lm, P, cfg, doc, qs, emit):
    from ..documents import open_source
    from ..reader import token_stream

    n = sum(len(ids) for ids, _ in token_stream(lm.tokenizer, open_source(doc["path"], "auto").passages()))
    room = len(P.header_ids()) + n + len(P.ask(qs[0]["question"])[0]) + 64 + cfg.max_new_tokens
    if room > window(lm.model):
        return f"{n} tokens: beyond the model's window ({window(lm.model)})"
    eng = _engine(lm, P, _pot_config(cfg, "full"), P.catalyst("general"))
    sources, read_s = _read(eng, lm, doc["path"])
    text = lm.tokenizer.decode(eng.pot.tok[0, 0, eng.pot.n_pinned:].tolist(), skip_special_tokens=True)
    for q in qs:
        rec = answer_one(lm, P, eng, q, "whole", cfg, sources, text)
        emit(dict(rec, read_s=round(read_s, 2), tokens=eng.tokens_read))
    return None


def run_words(lm, P, cfg, doc, qs, emit):
    from ..documents import open_source

    src = open_source(doc["path"], "auto")
    chunks = text_chunks((p.text, p.where) for p in src.passages())
    full_text = "\n".join(c for c, _ in chunks)
    budget = cfg.final_keep or 512
    sizes = [len(lm.tokenizer.encode(c, add_special_tokens=False)) for c, _ in chunks]
    for q in qs:
        chosen, used = [], 0
        for i in bm25_best([c for c, _ in chunks], q["question"], len(chunks)):
            if used + sizes[i] <= budget:
                chosen.append(i)
                used += sizes[i]
        eng = _engine(lm, P, _pot_config(cfg, "full"), P.catalyst("general"))
        t0 = time.perf_counter()
        for i in sorted(chosen):
            eng.feed(lm.tokenizer.encode("\n\n" + chunks[i][0], add_special_tokens=False), chunks[i][1] or "passage")
        eng.finish()
        read_s = time.perf_counter() - t0
        rec = answer_one(lm, P, eng, q, "words", cfg, [(doc["path"], eng.tokens_read)], full_text)
        emit(dict(rec, read_s=round(read_s, 2), tokens=eng.tokens_read))


RUNNERS: dict[str, Callable] = {"direct": run_direct, "read-then-ask": run_read_then_ask, "whole": run_whole,
                                "words": run_words}


def run_qa(lm, cfg: QAConfig, on_record: Callable[[dict], None], log: Callable[[str], None]) -> list[dict]:
    """Every (document, flow) of the config; each record goes to `on_record` as it comes. Returns skip notes."""
    from ..prompts import Prompts

    P = Prompts(lm.tokenizer)
    table, questions = load_corpus(cfg.corpus)
    skipped = []
    for doc, qs in pick(table, questions, cfg):
        for flow in list(cfg.flows) + list(cfg.baselines):
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
                why = RUNNERS[flow](lm, Prompts(lm.tokenizer), cfg, doc, qs, emit)
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


def summarize(records: list[dict], rules=None) -> list[dict]:
    """One row per (document, flow) and one per flow over all documents ("all")."""
    from ..evidence import DEFAULT_RULE, RULES

    rules = rules or RULES
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["doc"], r["flow"]), []).append(r)
        groups.setdefault(("all", r["flow"]), []).append(r)
    rows = []
    for (doc, flow), rs in groups.items():
        ans = [r for r in rs if not r["unanswerable"]]
        una = [r for r in rs if r["unanswerable"]]
        row = {"doc": doc, "flow": flow, "questions": len(rs), "answerable": len(ans),
               "accuracy": _rate([r["correct"] for r in ans]),
               "accuracy_guess": _rate([r["correct_guess"] for r in ans]),
               "in_context": _rate([r["in_context"] for r in ans]),
               "evidence_recall": _rate([r["evidence_recall"].get(DEFAULT_RULE) for r in ans]),
               "evidence_recall_by_rule": {k: _rate([r["evidence_recall"].get(k) for r in ans]) for k in rules},
               "invented": _rate([bool(r["invented"]) for r in rs if r["invented"] is not None]),
               "invented_shown": _rate([bool(r["invented"]) and not r["withheld"] for r in rs
                                        if r["invented"] is not None]),
               "withheld": _rate([r["withheld"] for r in rs]),
               "false_refusal": _rate([r["refused"] for r in ans if r["correct_guess"]]),
               "refusal_unanswerable": _rate([r["refused"] for r in una]) if una else None,
               "answer_s": round(sum(r["answer_s"] for r in rs) / len(rs), 2)}
        rows.append(row)
    order = {f: i for i, f in enumerate(FLOWS + BASELINES)}
    rows.sort(key=lambda r: (r["doc"] == "all", r["doc"], order.get(r["flow"].split("+")[0], 9), r["flow"]))
    return rows


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def markdown(rows: list[dict], meta: dict) -> str:
    """The findings table (per document and flow, then per flow over all documents) as markdown."""
    from ..evidence import RULES

    head = ("| document | flow | questions | accuracy | (guess) | answer in context | evidence recall | invented "
            "(guess) | invented (shown) | withheld | false refusals | refusals, unanswerable |")
    lines = [f"# bench qa — {meta.get('model', '')}", "",
             f"config: `{json.dumps(meta.get('config', {}), default=str)}`", "", head,
             "|" + "---|" * 12]
    for r in rows:
        lines.append(f"| {r['doc']} | {r['flow']} | {r['questions']} | {_pct(r['accuracy'])} | "
                     f"{_pct(r['accuracy_guess'])} | {_pct(r['in_context'])} | {_pct(r['evidence_recall'])} | "
                     f"{_pct(r['invented'])} | {_pct(r['invented_shown'])} | {_pct(r['withheld'])} | "
                     f"{_pct(r['false_refusal'])} | {_pct(r['refusal_unanswerable'])} |")
    lines += ["", "Evidence recall by rule (all documents):", "", "| flow | " + " | ".join(RULES) + " |",
              "|---|" + "---|" * len(RULES)]
    for r in rows:
        if r["doc"] == "all":
            lines.append(f"| {r['flow']} | " + " | ".join(_pct(r["evidence_recall_by_rule"].get(k)) for k in RULES)
                         + " |")
    return "\n".join(lines) + "\n"
