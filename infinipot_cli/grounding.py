"""An answer together with what it rests on: its evidence (evidence.py) and whether the document holds what
it names (honesty.py). `ask` (both flows), `chat` and `bench qa` call `ground` after Engine.answer.

    answer     what stdout shows: the model's answer, or honesty.NOT_SAID when it names something the
               document does not contain (a list answer: its items that name such a thing are left out)
    guess      the model's own answer (shown on stderr and in --json when it was withheld)
    evidence   [Passage]: at most three passages with their source and page / chapter / section / line
    unsupported  the specifics of the guess that the document does not contain
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from . import evidence as ev
from . import honesty


@dataclass
class Grounded:
    answer: str
    guess: str
    evidence: list = field(default_factory=list)       # [evidence.Passage]
    unsupported: list = field(default_factory=list)    # [str]

    @property
    def withheld(self) -> bool:
        return self.answer != self.guess

    def as_json(self) -> dict:
        out = {"answer": self.answer, "evidence": [p.as_json() for p in self.evidence]}
        if self.withheld:
            out["guess"] = self.guess
            out["unsupported"] = list(self.unsupported)
        return out

    def lines(self, width: int = 100) -> list[str]:
        """The stderr block shown after the answer: the withheld guess, then one line per passage."""
        out = []
        if self.withheld:
            out.append(f"(the model's guess: {self.guess!r}; the document does not contain "
                       f"{', '.join(repr(c) for c in self.unsupported[:3])})")
        if self.evidence:
            out.append("evidence:")
        for p in self.evidence:
            where = p.label()
            src = p.source.rsplit("/", 1)[-1]
            head = " · ".join(x for x in (src, where) if x)
            out.append(f"  [{head}] \u201c{p.text}\u201d")
        return out


def ground(engine, prompt: list[int], question: str, guess: str, sources: Sequence[tuple[str, int]],
           rule: str = ev.DEFAULT_RULE, scope: str = honesty.DEFAULT_SCOPE, check: bool = True,
           scored: dict | None = None) -> Grounded:
    """The evidence of the engine's last answer `guess` to `question` (asked with `prompt`), and the answer to
    show: NOT_SAID when `check` and the guess names something outside the checked text (`scope`:
    "document" — everything read — or "context" — the kept text the answer was written from)."""
    ctx = ev.Context.of(engine)
    if ctx is None:
        return Grounded(guess, guess)
    passages = ev.evidence(engine, ctx, prompt, question, guess, sources, rule=rule, scored=scored)
    bad: list[str] = []
    if check and guess.strip():
        text = honesty.document_text(engine) if scope == "document" else None
        if text is None:
            text = ctx.text(engine.tok)
        bad = honesty.unsupported(guess, question, text)
    answer = guess
    if bad:  # a list keeps its supported items (honesty.supported_items); anything else is withheld whole
        answer = honesty.supported_items(guess, question, text) or honesty.NOT_SAID
    return Grounded(answer, guess, passages, bad)
