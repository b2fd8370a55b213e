"""`summarize`: the summary a reader gets from a pot, shared by the CLI and `bench summary`.

`write_summary(engine, prompts, max_new_tokens, on_text)` gives a :class:`Summary`:

    Key points:
    - <the sentence most central to a part of the document> [p. 4 · 2 Parsing]   (keypoints.py, outline.py)
    ...

    Overview: <the model's own summary>                        (controls.py: no loops, a complete last sentence)

Key points need a pot whose heads hold the same whole sentences (InfiniPot's shared, sentence-unit selection);
other methods (the paper's per-head tokens, the baselines) give the overview alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from .archive import STOPWORDS
from .controls import answer_controls
from .honesty import _NUMBER, COMMON, claims, found
from .scoring.segments import _is_abbr

KEY_POINTS_TITLE = "Key points:"
OVERVIEW_TITLE = "Overview: "


@dataclass
class Summary:
    text: str                                      # the whole summary as printed
    overview: str = ""                             # the model's own summary
    key_points: list[dict] = field(default_factory=list)  # [{"text", "source", "page"/"chapter"/"line", ...}]
    dropped: list[dict] = field(default_factory=list)     # overview sentences withheld: [{"text", "unsupported"}]


_LIST_MARK = re.compile(r"^[\s*#(]*\d{1,2}[.)]\s+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]*]*\s+|\n")  # a sentence, or a line (a list item)


class SupportedSentences:
    """Passes the overview on sentence by sentence, withholding a sentence that names a number, identifier or
    name the document does not contain (honesty.py's check, as for answers): a 135M model's overview invents
    ("Compomentation"); the key points are the document's own sentences and need no check. `lead` is written
    before the first sentence that passes."""

    def __init__(self, write: Callable[[str], None] | None, document: str | None, lead: str = ""):
        self.write, self.document, self.lead = write, document, lead
        self.low = document.lower() if document is not None else None
        self.buf, self.kept, self.dropped = "", [], []

    def __call__(self, delta: str) -> None:
        self.buf += delta
        at = 0
        while (m := _SENTENCE_END.search(self.buf, at)) is not None:
            word = re.search(r"(\w+)[.]\W*$", self.buf[:m.end()].rstrip())
            if _LIST_MARK.fullmatch(self.buf[:m.end()]) or (word and _is_abbr(word.group(1))):
                at = m.end()  # a list item's number, or "Dr." / "e.g.": not a sentence end
                continue
            sentence, self.buf, at = self.buf[:m.end()], self.buf[m.end():], 0
            self._one(sentence)

    def _one(self, sentence: str) -> None:
        if not sentence.strip():
            return
        bad = []
        if self.document is not None:
            body = _LIST_MARK.sub("", sentence)  # "*3. Title": the item's number is no claim
            # "Dr. Moraes": an abbreviation's dot ends no sentence, so the name after it is not an opening word
            body = re.sub(r"\b(\w+)\.(?=\s)", lambda m: m.group(1) if _is_abbr(m.group(1)) else m.group(0), body)
            first = re.match(r"[\s\"'(*#-]*([A-Z][\w'-]*)", body)  # the opening word counts too: "Overall, ..."
            opening = first.group(1) if first else ""
            common = opening in COMMON or opening.lower() in STOPWORDS  # "It", "The", "This": no claim
            said = claims(body) + ([opening] if opening and not common else [])
            bad = [c for c in dict.fromkeys(said) if not self._present(c)]
        if bad:
            self.dropped.append({"text": sentence.strip(), "unsupported": bad})
            return
        if self.write is not None:
            if not self.kept and self.lead:
                self.write(self.lead)
            self.write(sentence if self.kept else sentence.lstrip())
        self.kept.append(sentence)

    def _present(self, claim: str) -> bool:
        """A number as honesty.found checks it; a word as a whole word ("AI" is not in "maintainer")."""
        if _NUMBER.fullmatch(claim) or not re.fullmatch(r"[\w'-]+", claim):
            return found(claim, self.document, self.low)
        return re.search(rf"(?<![\w]){re.escape(claim.lower())}(?![\w])", self.low) is not None

    def finish(self) -> str:
        self._one(self.buf)
        self.buf = ""
        return "".join(self.kept).strip()


def has_key_points(engine) -> bool:
    pol = engine.policy
    return bool(pol.share) and getattr(pol, "segment", 0) > 0 and engine.tok is not None


def write_summary(engine, prompts, max_new_tokens: int, on_text: Callable[[str], None] | None = None,
                  source: str | None = None, key_points: bool = True) -> Summary:
    """The summary of what `engine`'s pot holds; `on_text` receives it as it forms (only complete sentences).
    `source`: the document's path, named in each key point (several sources: their labels name them)."""
    from .keypoints import document_key_points, key_points as pot_points, render
    from .stopping import StopStream

    points = []
    if key_points and has_key_points(engine):
        points = document_key_points(engine)
        if points is None:  # the document as read is not all held: the pot's own choice
            points = pot_points(engine, prompts.summary_ids())
    for p in points:
        if source and "source" not in p:
            p["source"] = source
    from .honesty import document_text

    lead = f"{KEY_POINTS_TITLE}\n{render(points)}\n\n" if points else ""
    if lead and on_text is not None:
        on_text(lead)
    checked = SupportedSentences(on_text, document_text(engine) if engine.tok is not None else None,
                                 OVERVIEW_TITLE if points else "")
    c = answer_controls("summarize", engine.tok, max_new_tokens)
    stream = StopStream(c.stopper, checked)
    engine.answer(prompts.summary_ids(), c.mode, max_new_tokens=c.limit, stop_ids=prompts.stop_ids("summary"),
                  on_text=stream, should_stop=c.stopper.should_stop, logits_fn=c.guard)
    stream.finish()
    overview = checked.finish()
    text = lead + (OVERVIEW_TITLE if points and overview else "") + overview
    return Summary(text=text.rstrip(), overview=overview, key_points=points, dropped=checked.dropped)
