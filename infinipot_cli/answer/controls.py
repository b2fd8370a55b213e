"""How an answer is decoded and where it ends, per kind of answer: one place for the CLI, chat and benches.

    c = answer_controls("summarize", tokenizer, max_new_tokens=384)
    text = engine.answer(prompt, c.mode, max_new_tokens=c.limit, should_stop=c.stopper.should_stop,
                         logits_fn=c.guard, on_text=StopStream(c.stopper, write))

A question ends at its first sentence or a loop (stopping.py) and decodes with a repeated-4-gram ban; a summary
ends on a complete sentence (endings.py, with a few tokens of grace past the budget) and decodes with a
repeated-3-gram ban and a mild repetition penalty (repetition.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .endings import CompleteSentences
from .repetition import RepetitionGuard, guard_for
from .stopping import stopper_for


@dataclass
class AnswerControls:
    mode: str          # engine.answer's mode: "question" | "summary"
    stopper: object    # should_stop / trim / safe_len (stopping.Stopper or endings.CompleteSentences)
    guard: RepetitionGuard
    limit: int         # tokens to let the answer loop generate at most


def answer_controls(kind: str, tokenizer=None, max_new_tokens: int = 256, prefix: str = "") -> AnswerControls:
    """kind: "ask"/"question" or "summarize"/"summary"."""
    summary = kind in ("summarize", "summary")
    stopper = stopper_for(kind, prefix=prefix)
    limit = max_new_tokens
    if summary:
        stopper = CompleteSentences(stopper, max_new_tokens)
        limit = stopper.limit
    return AnswerControls("summary" if summary else "question", stopper, guard_for(kind, tokenizer), limit)
