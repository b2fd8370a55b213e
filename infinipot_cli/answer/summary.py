"""`summarize`: the summary a reader gets from a pot, shared by the CLI and `bench summary`.

`write_summary(engine, prompts, max_new_tokens, on_text)` gives a :class:`Summary`:

    Key points:
    - <the sentence most central to a part of the document> [p. 4 · 2 Parsing]   (keypoints.py, outline.py)
    ...

    Overview: <the model's own summary>                        (controls.py: no loops, a complete last sentence)

The overview is written only when asked for with the built-in model (`--overview`; session.Session.summarize):
measured on six documents, what a 135M model writes after the key points named a part they missed once, and
half of its sentences were withheld or left out (docs/results/summary.md, "The overview"). Whatever is printed
is whole sentences checked against the document (SupportedSentences).

Key points need a pot whose heads hold the same whole sentences (InfiniPot's shared, sentence-unit selection);
other methods (the paper's per-head tokens, the baselines) give the overview alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ..pot.archive import STOPWORDS
from .controls import answer_controls
from .honesty import COMMON, NUMBER, claims, found
from ..pot.scoring.segments import is_abbr

KEY_POINTS_TITLE = "Key points:"
OVERVIEW_TITLE = "Overview: "


@dataclass
class Summary:
    text: str                                      # the whole summary as printed
    overview: str = ""                             # the model's own summary
    key_points: list[dict] = field(default_factory=list)  # [{"text", "source", "page"/"chapter"/"line", ...}]
    dropped: list[dict] = field(default_factory=list)     # overview sentences withheld: [{"text", "unsupported"}]
    trimmed: list[dict] = field(default_factory=list)     # filler and fragments left out: [{"text", "reason"}]
    written: str = ""                                     # the overview as the model wrote it, before the checks


_LIST_MARK = re.compile(r"^[\s*#(]*\d{1,2}[.)]\s+")
_SENTENCE_END = re.compile(r"[.!?][\"')\]*]*\s+|\n")  # a sentence, or a line (a list item)
_LEAD_MARKS = re.compile(r"^[\s\-*\u2022#>_]*(?:\d{1,2}[.)]\s+)?[*_]*")  # "- ", "* ", "1. ", "**": no words
_ENDS = re.compile(r"[.!?\u2026\u3002\uff01\uff1f\u061f\u06d4][\"')\]\u201d\u2019\u300d\u300f]*$")
# A chat model's turns that say nothing about the document
_FILLER = re.compile(r"\b(?:I hope|hope (?:this|that|it) helps|let me know|feel free|happy to help|glad to help|"
                     r"don't hesitate|as an AI|I(?:'m| am) an? (?:AI|assistant|language model)|I can help|"
                     r"I'd be happy|if you have any (?:other |more |further )?questions)\b|"
                     r"^(?:sure|certainly|of course|absolutely|great question|okay|ok)\b|"
                     r"^(?:here is|here's|here are|below is)\b.*\b(?:summary|overview|points|version)\b|"
                     r"\b(?:summary|concise version|additional notes)\b", re.IGNORECASE)  # talk about the summary itself
# Words that open or join sentences and name nothing, whatever their case ("You", "Instead", "Overall")
ORDINARY = frozenset("""you we they he she i it our your their his her its there here then now also however instead
overall additionally moreover furthermore therefore thus hence finally first second third next last lastly each
every some many most all both such other another once after before while since because although though unless
until as by with without from into use using note notes please yes no one two several various these those this
that what when where why how which who whom whose whether if so but and or nor yet in on at for of to up out
overview summary key point points main important example examples following similarly likewise meanwhile still
just only even again further rather indeed specifically generally usually often sometimes always never""".split())
MIN_SENTENCE_WORDS = 3


def flaw(sentence: str) -> str | None:
    """Why a sentence of a model's overview is not worth printing, or None: "filler" (chat talk: "I hope this
    helps.", "Here is a summary:", talk about the summary itself: "A summary of the document ends with a brief
    description of the main points covered.") or "fragment" (fewer than MIN_SENTENCE_WORDS words, no sentence end — a list
    heading, a line ending in ":" or "," — or code: braces, backquotes, mostly symbols)."""
    from ..pot.archive import count_words

    text = " ".join(sentence.split())
    letters = sum(ch.isalpha() for ch in text)
    if (count_words(text) < MIN_SENTENCE_WORDS or not _ENDS.search(text) or re.search(r"[{}`]|\(\s*\)", text)
            or letters < 0.6 * len(text.replace(" ", ""))):
        return "fragment"
    return "filler" if _FILLER.search(text) else None


class SupportedSentences:
    """Passes the overview on sentence by sentence, as whole sentences only: a list item loses its mark, and chat
    filler or a fragment (flaw()) is left out (`trimmed`); a sentence that names a number, identifier or name the
    document does not contain is withheld (honesty.py's check, as for answers; `dropped`): a 135M model's
    overview invents ("Compomentation"); the key points are the document's own sentences and need no check.
    An ordinary word ("You", "Instead") is no name. `lead` is written before the first sentence that passes."""

    def __init__(self, write: Callable[[str], None] | None, document: str | None, lead: str = ""):
        self.write, self.document, self.lead = write, document, lead
        self.low = document.lower() if document is not None else None
        self.buf, self.kept, self.dropped, self.trimmed = "", [], [], []
        self.written = ""  # what the model wrote, before any check

    def __call__(self, delta: str) -> None:
        self.written += delta
        self.buf += delta
        at = 0
        while (m := _SENTENCE_END.search(self.buf, at)) is not None:
            head = self.buf[:m.end()]
            if m.group(0) == "\n" and not _LEAD_MARKS.sub("", head).strip():
                at = m.end()  # a blank line, or a list mark alone on its line
                continue
            if m.group(0) == "\n" and not re.search(r"[.!?:;\u2026][\"')\]*]*\s*$", head):
                if m.end() == len(self.buf):
                    break  # a line break mid-sentence, or a list item's end: the next line tells
                if self.buf[m.end()].islower():  # the model wrapped its line: the sentence goes on
                    self.buf = self.buf[:m.start()] + " " + self.buf[m.end():]
                    at = m.start()
                    continue
            word = re.search(r"(\w+)[.]\W*$", head.rstrip())
            if _LIST_MARK.fullmatch(head) or (word and is_abbr(word.group(1))):
                at = m.end()  # a list item's number, or "Dr." / "e.g.": not a sentence end
                continue
            sentence, self.buf, at = head, self.buf[m.end():], 0
            self._one(sentence)

    def _one(self, sentence: str) -> None:
        body = " ".join(_LEAD_MARKS.sub("", sentence.strip()).split()).rstrip("*_ ")
        if not body:
            return
        why = flaw(body)
        if why:
            self.trimmed.append({"text": sentence.strip(), "reason": why})
            return
        bad = []
        if self.document is not None:
            # "Dr. Moraes": an abbreviation's dot ends no sentence, so the name after it is not an opening word
            check = re.sub(r"\b(\w+)\.(?=\s)", lambda m: m.group(1) if is_abbr(m.group(1)) else m.group(0), body)
            first = re.match(r"[\s\"'(*#-]*([A-Z][\w'-]*)", check)  # the opening word counts too: "Frobnix is ..."
            opening = first.group(1) if first else ""
            said = claims(check) + ([opening] if opening else [])
            bad = [c for c in dict.fromkeys(said) if not _ordinary(c) and not self._present(c)]
        if bad:
            self.dropped.append({"text": sentence.strip(), "unsupported": bad})
            return
        if self.write is not None:
            if not self.kept and self.lead:
                self.write(self.lead)
            self.write(body if not self.kept else " " + body)
        self.kept.append(body)

    def _present(self, claim: str) -> bool:
        """A number as honesty.found checks it; a word as a whole word ("AI" is not in "maintainer")."""
        if NUMBER.fullmatch(claim) or not re.fullmatch(r"[\w'-]+", claim):
            return found(claim, self.document, self.low)
        return re.search(rf"(?<![\w]){re.escape(claim.lower())}(?![\w])", self.low) is not None

    def finish(self) -> str:
        self._one(self.buf)
        self.buf = ""
        return " ".join(self.kept)


def _ordinary(word: str) -> bool:
    """A capitalised word that names nothing: a sentence's usual opening or joining word, a stopword, or one of
    honesty.COMMON ("The", "Section")."""
    w = word.lower()
    return w in ORDINARY or w in STOPWORDS or word in COMMON


def has_key_points(engine) -> bool:
    pol = engine.policy
    return bool(pol.share) and getattr(pol, "segment", 0) > 0 and engine.tok is not None


def write_summary(engine, prompts, max_new_tokens: int, on_text: Callable[[str], None] | None = None,
                  source: str | None = None, key_points: bool = True, overview: bool = True) -> Summary:
    """The summary of what `engine`'s pot holds; `on_text` receives it as it forms (only complete sentences).
    `source`: the document's path, named in each key point (several sources: their labels name them).
    `overview`: the model also writes an overview over the pot after the key points (without key points it
    always does: it is then the whole summary)."""
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

    lead = f"{KEY_POINTS_TITLE}\n{render(points)}" if points else ""
    if lead and on_text is not None:
        on_text(lead)  # the caller ends the last line
    checked = SupportedSentences(on_text, document_text(engine) if engine.tok is not None else None,
                                 "\n\n" + OVERVIEW_TITLE if points else "")
    if overview or not points:
        c = answer_controls("summarize", engine.tok, max_new_tokens)
        stream = StopStream(c.stopper, checked)
        engine.answer(prompts.summary_ids(), c.mode, max_new_tokens=c.limit, stop_ids=prompts.stop_ids("summary"),
                      on_text=stream, should_stop=c.stopper.should_stop, logits_fn=c.guard)
        stream.finish()
    text = checked.finish()
    full = lead + ("\n\n" + OVERVIEW_TITLE if points and text else "") + text
    return Summary(text=full.rstrip(), overview=text, key_points=points, dropped=checked.dropped,
                   trimmed=checked.trimmed, written=checked.written)
