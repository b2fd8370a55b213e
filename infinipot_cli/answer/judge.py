"""The model judges which sentence of the evidence answers the question: the likelihood of the question given
each sentence (UPR, Sachan et al. 2022, "Improving Passage Retrieval with Zero-Shot Question Generation").

Words decide where a question shares them with its answer; a question in a reader's own words ("How do I force
a repaint of the display?" over "CTRL-L  Clear and redraw the screen.") shares none, and the sentence the words
rank first is one that repeats the question's other words. The model has read the language: asked how likely
the question is as one a sentence answers, log P(question | sentence), it ranks the sentence that answers it
above the ones that merely repeat its words.

    scores = likelihoods(model, tokenizer, question, sentences)   # [float] one per sentence, higher: more likely
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import torch

from . import retrieve
from .evidence import sentence_units
from ..pot.archive import content_terms, words

MAX_SENTENCE_TOKENS = 96   # a candidate sentence is cut to this many tokens (a PDF's run-on "sentence")
BATCH = 16                 # candidates forwarded together


def candidates(found: Sequence[retrieve.Found], texts: list[str]) -> list[int]:
    """The first unit of every sentence of the passages `found` (sentence_units), in the passages' order, each
    once: what the model judges."""
    out: list[int] = []
    seen: set[tuple[int, int]] = set()
    for f in found:
        for u in [f.top] + [u for u in f.units if u != f.top]:
            if not any(c.isalnum() for c in texts[u]):
                continue
            span = sentence_units(texts, u)
            if span in seen:
                continue
            seen.add(span)
            out.append(u)
    return out


def sentence(texts: list[str], unit: int) -> str:
    """The whole sentence unit `unit` is part of, on one line."""
    lo, hi = sentence_units(texts, unit)
    return " ".join("".join(texts[lo:hi + 1]).split())


def likelihoods(model, tokenizer, question: str, sentences: Sequence[str], style: str = "plain") -> list[float]:
    """log P(question | "Passage: <sentence>") for each sentence: the summed log-probabilities of the question's
    tokens after the passage (the same question each time, so the sum ranks as the mean does). `style` "chat":
    the passage as a user's request for a question, in the model's chat template (plain where it has none)."""
    if not sentences:
        return []
    rows = []
    if style == "chat" and not getattr(tokenizer, "chat_template", None):
        style = "plain"  # a model without a chat template (a base model's GGUF) is asked in plain text
    if style == "chat":
        q = tokenizer.encode(question.strip(), add_special_tokens=False)
        for s in sentences:
            body = tokenizer.decode(tokenizer.encode(s, add_special_tokens=False)[:MAX_SENTENCE_TOKENS])
            msgs = [{"role": "user", "content": f"Write a question that this text answers.\n\nText: {body}"}]
            rows.append(tokenizer.encode(tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False), add_special_tokens=False))
    else:
        q = tokenizer.encode(" " + question.strip(), add_special_tokens=False)
        head = tokenizer.encode("Passage:", add_special_tokens=False)
        tail = tokenizer.encode("\nA question this passage answers:", add_special_tokens=False)
        for s in sentences:
            body = tokenizer.encode(" " + s, add_special_tokens=False)[:MAX_SENTENCE_TOKENS]
            rows.append(head + body + tail)
    out: list[float] = []
    dev = next(model.parameters()).device
    for i in range(0, len(rows), BATCH):
        part = rows[i:i + BATCH]
        n = max(len(r) for r in part) + len(q)
        ids = torch.zeros(len(part), n, dtype=torch.long)           # (B, n) right-padded
        mask = torch.zeros(len(part), n, dtype=torch.long)
        for b, r in enumerate(part):
            ids[b, :len(r) + len(q)] = torch.tensor(r + q)
            mask[b, :len(r) + len(q)] = 1
        with torch.no_grad():
            logits = model(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits.float()  # (B, n, V)
        logp = logits.log_softmax(-1)
        for b, r in enumerate(part):
            at = torch.arange(len(r) - 1, len(r) - 1 + len(q))          # the rows predicting the question's tokens
            out.append(float(logp[b, at.to(dev), torch.tensor(q, device=dev)].sum()))
    return out


def judges(retrieve: str, model_name: str) -> bool:
    """Whether the model judges (the method option `retrieve`): "model" yes, "words" no, "auto" with the built-in
    model only, where it measured a gain (Gemma 3 270M's answers were as right without it, and 3x slower)."""
    from ..runtime.loading import BUILTIN_NAME

    return retrieve == "model" or (retrieve == "auto" and model_name == BUILTIN_NAME)


GATE = 0.2   # the model judges when the words' best sentence holds less than this share of the question's words


def overlap(question: str, text: str) -> float:
    """The share of the question's content words that `text` holds (1.0 for a question of none)."""
    asked = content_terms(question)
    held = set(words(text))
    return sum(w in held for w in asked) / len(asked) if asked else 1.0


def rejudge(model, tokenizer, question: str, found: list[retrieve.Found], doc: tuple) -> list[retrieve.Found]:
    """`found` (the words' passages, best first) with the sentence the model judges likeliest to answer the
    question (`likelihoods` over every sentence of the passages) as the best passage's top, its passage first —
    when the words' best sentence holds less than GATE of the question's content words (a question in a
    reader's own words: the words found the passage by its neighbours or heading, and cannot tell its sentences
    apart); else `found` as it is. `doc`: the document's units (src, seg, texts)."""
    d_src, seg, texts = doc
    if not found or overlap(question, sentence(texts, found[0].top)) >= GATE:
        return found
    cands = candidates(found, texts)
    scores = likelihoods(model, tokenizer, question, [sentence(texts, u) for u in cands], "chat")
    by_unit = dict(zip(cands, scores))
    found = [dataclasses.replace(f, judged=max((by_unit[u] for u in f.units if u in by_unit), default=None))
             for f in found]  # each passage's best sentence, as the model judged it
    best = cands[max(range(len(cands)), key=lambda i: scores[i])]
    if best == found[0].top:
        return found
    i = next(k for k, f in enumerate(found) if best == f.top or best in f.units)
    f = found[i]
    core = retrieve.core_units(f.units, (best, best), texts) if best in f.units else [best]
    pos = d_src[(seg >= core[0]) & (seg <= core[-1])]
    judged = dataclasses.replace(f, top=best, score=max(found[0].score, f.score), words=f.score,
                                 core=(int(pos.min()), int(pos.max()) + 1))
    return [judged] + found[:i] + found[i + 1:]
