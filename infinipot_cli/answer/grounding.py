"""An answer together with what it rests on: its evidence (evidence.py) and whether the document holds what
it names (honesty.py). `ask` (both flows), `chat` and `bench qa` call `ground` after Engine.answer.

    answer     what stdout shows: the model's answer, or honesty.NOT_SAID when it names something the
               document does not contain (a list answer: its items that name such a thing are left out)
    guess      the model's own answer (shown on stderr and in --json when it was withheld)
    evidence   [Passage]: at most four passages with their source and page / chapter / section / line
    unsupported  the specifics of the guess that the document does not contain
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from . import answering, honesty
from . import evidence as ev


@dataclass
class Grounded:
    answer: str
    guess: str
    evidence: list = field(default_factory=list)       # [evidence.Passage]
    unsupported: list = field(default_factory=list)    # [str]
    how: str = "written"                               # "written" | "extracted" | "quoted" | "not-said"
    short: str = ""                                    # an extracted span / a quoted sentence (answering.py)
    quote: dict | None = None                          # {"text", "source", page | chapter | section | line}

    @property
    def withheld(self) -> bool:
        return self.how == "not-said"

    def as_json(self) -> dict:
        out = {"answer": self.answer, "answer_kind": self.how, "evidence": [p.as_json() for p in self.evidence]}
        if self.how != "written":
            out["guess"] = self.guess
        if self.how in ("extracted", "quoted"):
            out["short"] = self.short
            out["quote"] = self.quote
        if self.withheld:
            out["unsupported"] = list(self.unsupported)
        return out

    def lines(self, width: int = 100) -> list[str]:
        """The stderr block shown after the answer: the withheld guess (or the model's own answer when the
        document's words were shown instead), then one line per passage."""
        out = []
        if self.withheld and self.unsupported:
            out.append(f"(the model's guess: {self.guess!r}; the document does not contain "
                       f"{', '.join(repr(c) for c in self.unsupported[:3])})")
        elif self.withheld and self.guess:
            out.append(f"(the model's guess: {self.guess!r})")
        elif self.how in ("extracted", "quoted") and self.guess:
            out.append(f"(the document's own words are shown; the model wrote: {self.guess!r})")
        if self.evidence:
            out.append("evidence:")
        for p in self.evidence:
            where = p.label()
            src = p.source.rsplit("/", 1)[-1]
            head = " · ".join(x for x in (src, where) if x)
            found = " (found while reading)" if p.read is not None else ""  # the question's attention led there
            out.append(f"  [{head}]{found} \u201c{p.text}\u201d")
        return out


def ground(engine, prompt: list[int], question: str, guess: str, sources: Sequence[tuple[str, int]],
           rule: str = ev.DEFAULT_RULE, scope: str = honesty.DEFAULT_SCOPE, check: bool = True,
           scored: dict | None = None, how: str = "written", shown: str | None = None,
           unsupported: list | None = None, evidence: list | None = None) -> Grounded:
    """The evidence of the engine's last answer `guess` to `question` (asked with `prompt`), and the answer to
    show: `shown` (default the guess), or NOT_SAID when it is the model's own answer (`how` "written"), `check`
    is on and it names something outside the checked text (`scope`: "document" — everything read — or
    "context" — the text the answer was written from). A span or sentence of the document is shown as it is; an
    answer already withheld (`how` "not-said", answering.py) keeps what it named that was `unsupported`.
    `evidence`: the passages the answer was found in (answering.py), shown as they are (also for an answer the
    model did not write, a count or a chain: answering._worked_out); None for an answer
    written over the pot, which gets answering.py's checks here: an identifier it miscopied is written as the
    text it was written from has it (answering.completed), and a non-answer (answering.non_answer) is withheld."""
    shown = guess if shown is None else shown
    ctx = ev.Context.of(engine)
    if ctx is None and evidence is None:
        return Grounded(shown, guess, how=how)
    passages = evidence if evidence is not None else ev.evidence(engine, ctx, prompt, question, guess, sources,
                                                                  rule=rule, scored=scored)
    bad: list[str] = list(unsupported or [])
    text = None
    if check and how == "written" and guess.strip() and ctx is not None:
        text = honesty.document_text(engine) if scope == "document" else None
        written_from = ctx.text(engine.tok)
        if text is None:
            text = written_from
        claimed = shown
        if evidence is None:  # written over the pot, not checked against passages (answering.decide) before
            claimed = shown = answering.completed(shown, written_from)  # an identifier miscopied, as its text has it
            if answering.non_answer(shown, question):  # nothing beyond the question, or about the document
                return Grounded(honesty.NOT_SAID, guess, passages, [], how="not-said")
        bad = honesty.unsupported(claimed, question, text)
    if bad and how == "written" and text is not None:  # a list keeps its supported items (honesty.supported_items)
        kept = honesty.supported_items(shown, question, text)
        if kept:
            return Grounded(kept, guess, passages, bad, how=how)
    if bad or how == "not-said":  # anything else naming what the document lacks is withheld whole
        return Grounded(honesty.NOT_SAID, guess, passages, bad, how="not-said")
    return Grounded(shown, guess, passages, bad, how=how)
