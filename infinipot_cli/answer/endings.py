"""Summaries that end on a complete sentence.

A summary used to stop wherever ``--max-new-tokens`` ran out ("It covers various aspects, including spell
checking,"). :class:`CompleteSentences` wraps a stopping.Stopper for the answer loop:

- once the budget is spent the summary may go on for up to `grace` more tokens, and stops at the first
  sentence end (generate() is given ``limit`` = budget + grace tokens);
- whatever still ends mid-sentence (the grace ran out, a loop was cut) is trimmed back to the last sentence
  end; a text with no sentence end at all is left as it is;
- streamed through stopping.StopStream, only complete sentences reach the terminal (``safe_len``).

A sentence end: ``.``/``!``/``?``/``…`` (and closing quotes or brackets) followed by whitespace or the end of
the text, not an abbreviation, an initial or a list number (the Stopper's rules); or the end of a list item line
("- item", "* item", "1. item").
"""

from __future__ import annotations

import re

from .stopping import CLOSERS, Stopper

GRACE = 48  # tokens a summary may run past its budget to finish its sentence

_TERM = re.compile(r"([.!?\u2026]+)([" + re.escape(CLOSERS) + r"]*)(?=\s|$)")
_ITEM_LINE = re.compile(r"^[ \t]*(?:[-*\u2022]|\d+[.)])[ \t]+\S.*$", re.MULTILINE)


def sentence_ends(text: str, judge: Stopper | None = None) -> list[int]:
    """Character offsets just after every sentence end of `text` (sorted)."""
    judge = judge or Stopper("summary")
    ends = []
    for m in _TERM.finditer(text):
        nxt = text[m.end():].lstrip()[:1]
        if m.group(1) == "." and not m.group(2) and judge._not_an_end(text, m.start(1), nxt):
            continue
        ends.append(m.end())
    for m in _ITEM_LINE.finditer(text):  # a list item is complete at its line end
        if m.end() < len(text) and text[m.end()] == "\n":
            ends.append(m.end())
    return sorted(set(ends))


def last_sentence_end(text: str, judge: Stopper | None = None) -> int | None:
    ends = sentence_ends(text, judge)
    return ends[-1] if ends else None


def ends_sentence(text: str, judge: Stopper | None = None) -> bool:
    body = text.rstrip()
    return bool(body) and last_sentence_end(body, judge) == len(body)


class CompleteSentences:
    """A Stopper whose answers end on a sentence end (see the module docstring). Pass ``limit`` to the answer
    loop as its token budget, ``should_stop`` as its criterion, and use ``trim``/``safe_len`` as a Stopper's."""

    def __init__(self, stopper: Stopper, budget: int, grace: int = GRACE):
        self.stopper = stopper
        self.budget = budget
        self.limit = budget + max(0, grace)

    def should_stop(self, gen_ids: list[int], text: str) -> bool:
        if self.stopper.should_stop(gen_ids, text):
            return True
        return len(gen_ids) >= self.budget and ends_sentence(text, self.stopper)

    __call__ = should_stop

    def trim(self, text: str) -> str:
        body = self.stopper.trim(text)
        end = last_sentence_end(body, self.stopper)
        return (body if end is None else body[:end]).rstrip()

    def safe_len(self, text: str) -> int:
        """What a stream may show: up to the last complete sentence, and never what the Stopper may still cut."""
        safe = self.stopper.safe_len(text)
        return max((e for e in sentence_ends(text, self.stopper) if e <= safe), default=0)
