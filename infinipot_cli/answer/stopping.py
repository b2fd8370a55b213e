"""When to stop an answer: greedy decoding of a small model loops ("…is 4 8  The combination of the blue
vault … is 4 8  The combination…") and a short factual answer rarely ends on its own.

`Stopper(mode)` is a criterion for the generation loop, `should_stop(gen_ids, text) -> bool`, called after
every new token with the ids generated so far and their decoded text, and a `trim(text)` that cuts the text
where the criterion said it ends:

- every mode: a loop -- the same run of `ngram` words seen twice (question: 6 words, summary: 10), or the
  text ending in a run of the same punctuation/whitespace unit (``"\\n\\n\\n…"``, ``". . . ."``). The answer
  is cut before the repetition.
- "question": also the end of the first complete sentence that has content (at least 3 words counting the
  answer prefix, or a digit): a ``.``/``!`` (and closing quotes) followed by a line break, or by a space and a
  character that is not a lower-case letter. Not an end: decimals and versions ("4.19.0" -- no space after
  the dot), abbreviations ("Dr.", "e.g.", "No. 5"), initials ("J. R. R."), and a question mark (the model
  restating the question). A blank line after content ends the answer too, unless the line ends in ":".
- "question": also a list that repeats itself -- a list item (a line starting with ``-``, ``*``, ``•`` or ``1.``/``1)``)
  whose text is that of an earlier item. A small model lists the values it found and then lists them again
  ("- 4731444\n- 9909392\n- 9909392"); the answer is cut before the repeated item.
- "summary": only the loop rules (a summary is several sentences).

`StopStream` streams the text as it comes while holding back the tail that a later stop could still cut,
so what reaches the terminal is exactly the trimmed answer.
"""

from __future__ import annotations

import re
from typing import Callable

MODES = ("question", "summary", "none")

# Words that end with a dot without ending the sentence (compared case-insensitively, without the dot).
ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "vs", "etc", "e.g", "i.e", "cf", "al",
    "approx", "ca", "fig", "figs", "vol", "vols", "ch", "chap", "sec", "p", "pp", "ed", "eds", "rev", "gen",
    "col", "capt", "lt", "sgt", "gov", "sen", "rep", "inc", "ltd", "co", "corp", "dept", "univ", "est",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "a.m",
    "p.m", "no", "nos", "op", "vs", "viz",
}
# "No." is an answer ("No. The keeper was…") unless a number follows ("No. 5").
_ABBREV_BEFORE_DIGIT_ONLY = {"no", "nos", "op", "vol", "p", "pp", "ch", "sec", "fig"}

_WORD = re.compile(r"\w+", re.UNICODE)
CLOSERS = "\"')]}\u201d\u2019\u00bb"
# a terminator, optional closers, then whitespace (captured) and maybe the next character
_END = re.compile(r"([.!?\u2026]+)([" + re.escape(CLOSERS) + r"]*)(\s+)(\S?)")
# a loop of a short unit made only of punctuation/whitespace at the end of the text: "\n\n\n", ". . . ."
_PUNCT_LOOP = re.compile(r"((?:[^\w]{1,6}?))\1{5,}$", re.UNICODE)
# a list item line: its marker, then its text (up to the line end, which must have come)
_ITEM = re.compile(r"^[ \t]*(?:[-*\u2022]|\d{1,3}[.)])[ \t]+(.+?)[ \t]*\n", re.MULTILINE)


class Stopper:
    """A stop criterion for one answer (see the module docstring). Stateless between calls: `should_stop`
    and `trim` look at the whole text each time (answers are short; this costs microseconds per token)."""

    def __init__(self, mode: str = "question", prefix: str = "", ngram: int | None = None, min_words: int = 3):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.prefix = prefix or ""          # the answer prefix the prompt ends with (counts as content)
        self.ngram = ngram or (6 if mode == "question" else 10)
        self.min_words = min_words
        self._last: tuple[str, int | None] | None = None  # (text, cut): the streamer and the loop ask about the same text

    # ---- the criterion ----------------------------------------------------------------------------
    def should_stop(self, gen_ids: list[int], text: str) -> bool:
        """True once `text` (the decoded `gen_ids`) has ended: `trim(text)` is then shorter than `text`."""
        return self.cut(text) is not None

    __call__ = should_stop

    def trim(self, text: str) -> str:
        """`text` up to where the answer ends (the first end found), without trailing whitespace. The answer has
        ended, so its last line counts as a finished list item too."""
        c = self.cut(text)
        out = (text if c is None else text[:c]).rstrip()
        if self.mode == "question":
            last = self.list_repeat_cut(out + "\n")
            if last is not None:
                out = out[:last].rstrip()
        return out

    def cut(self, text: str) -> int | None:
        """The character index where the answer ends, or None while it goes on."""
        if self.mode == "none":
            return None
        if self._last is not None and self._last[0] == text:
            return self._last[1]
        c = self._cut(text)
        self._last = (text, c)
        return c

    def _cut(self, text: str) -> int | None:
        cuts = [c for c in (self.loop_cut(text), self.punct_loop_cut(text)) if c is not None]
        if self.mode == "question":
            cuts += [c for c in (self.sentence_cut(text), self.list_repeat_cut(text)) if c is not None]
        return min(cuts) if cuts else None

    def safe_len(self, text: str) -> int:
        """How much of `text` no later stop can cut: all but the last `ngram - 1` words (a loop seen later
        starts there at the earliest), the trailing punctuation/whitespace (a sentence end or a punctuation
        loop starts there), and nothing past an end already reached."""
        words = list(_WORD.finditer(text))
        k = self.ngram - 1
        safe = _cut_before(text, words[-k].start()) if len(words) >= k else 0  # its leading space too
        m = re.search(r"[^\w]*$", text)
        safe = min(safe, m.start() if m else len(text))
        line = text.rfind("\n")  # an unfinished list item may still turn out to repeat an earlier one
        if self.mode == "question" and line >= 0 and re.match(r"[ \t]*(?:[-*\u2022]|\d{1,3}[.)])(?:[ \t]|$)", text[line + 1:]):
            safe = min(safe, _cut_before(text, line + 1))
        c = self.cut(text)  # the text may have ended already (the caller streams before it asks)
        return safe if c is None else min(safe, c)

    # ---- the rules --------------------------------------------------------------------------------
    def loop_cut(self, text: str) -> int | None:
        """Start of the second occurrence of the first run of `ngram` words that occurs twice."""
        words = list(_WORD.finditer(text))
        n = self.ngram
        if len(words) < n + 1:
            return None
        low = [w.group().casefold() for w in words]
        seen: dict[tuple, int] = {}
        for i in range(len(low) - n + 1):
            key = tuple(low[i:i + n])
            if key in seen:
                return _cut_before(text, words[i].start())
            seen[key] = i
        return None

    def punct_loop_cut(self, text: str) -> int | None:
        m = _PUNCT_LOOP.search(text)
        if not m or len(m.group()) < 12:
            return None
        return m.start()

    def list_repeat_cut(self, text: str) -> int | None:
        """Before the first list item (a finished line) whose text repeats an earlier item's."""
        seen: set[str] = set()
        for m in _ITEM.finditer(text):
            item = m.group(1).rstrip(".,;").casefold()
            if item in seen:
                return _cut_before(text, m.start())
            seen.add(item)
        return None

    def sentence_cut(self, text: str) -> int | None:
        """Just after the first complete sentence that has content (question mode)."""
        for m in _END.finditer(text):
            term, closers, space, nxt = m.group(1), m.group(2), m.group(3), m.group(4)
            end = m.end(2)
            if term.startswith("?"):
                continue
            if "\n" not in space:
                if not nxt or nxt.islower() or nxt in ",;:)":
                    continue  # the next word decides; a lower-case word means the dot was not an end
            if term == "." and not closers and self._not_an_end(text, m.start(1), nxt):
                continue
            if self._has_content(text[:end]):
                return end
        for m in re.finditer(r"\n[ \t]*\n", text):  # a blank line after content ends the answer
            before = text[:m.start()].rstrip()
            if before and not before.endswith(":") and self._has_content(before):
                return len(before)
        return None

    def _not_an_end(self, text: str, dot: int, nxt: str) -> bool:
        """The dot at `dot` belongs to an abbreviation or an initial, not to a sentence end."""
        m = re.search(r"(\S+)$", text[:dot])
        if not m:
            return True  # a dot alone
        word = m.group(1).lstrip("(\"'\u201c\u2018").casefold()
        if re.fullmatch(r"[\d.,]+", word):
            at_line_start = text[:m.start()].rstrip(" \t").endswith("\n") or not text[:m.start()].strip()
            return at_line_start and "." not in word and "," not in word  # "1. item", not "is 4."
        if word in ABBREVIATIONS:
            if word in _ABBREV_BEFORE_DIGIT_ONLY:
                return nxt.isdigit()
            return True
        if re.fullmatch(r"\w", word) and word.isalpha() and m.group(1)[-1].isupper():
            return True  # an initial: "J. R. R. Tolkien"
        return bool(re.fullmatch(r"(?:\w\.)+\w", word))  # "e.g", "U.S": letters with inner dots

    def _has_content(self, sentence: str) -> bool:
        body = self.prefix + " " + sentence
        return any(ch.isdigit() for ch in sentence) or len(_WORD.findall(body)) >= self.min_words


def _cut_before(text: str, i: int) -> int:
    """`i` moved back over the whitespace before it."""
    while i > 0 and text[i - 1].isspace():
        i -= 1
    return i


def stopper_for(kind: str, prefix: str = "") -> Stopper:
    """The criterion for a job kind: "ask"/"question" -> question, "summarize"/"summary" -> summary."""
    return Stopper("summary" if kind in ("summarize", "summary") else "question", prefix=prefix)


class StopStream:
    """Streams an answer through `write` while holding back what `stopper` could still cut.

    Pass it as Engine.answer's `on_text` (it receives text deltas); call `finish()` after the answer to
    write the rest of the trimmed answer and get it back."""

    def __init__(self, stopper: Stopper, write: Callable[[str], None]):
        self.stopper = stopper
        self.write = write
        self.raw = ""
        self.written = 0      # characters of `raw` written (or skipped: the leading whitespace)
        self.started = False

    def __call__(self, delta: str) -> None:
        self.raw += delta
        if not self.started:  # the answer's leading whitespace is not written
            body = self.raw.lstrip()
            if not body:
                return
            self.written, self.started = len(self.raw) - len(body), True
        safe = self.stopper.safe_len(self.raw)
        if safe > self.written:
            self.write(self.raw[self.written:safe])
            self.written = safe

    def finish(self) -> str:
        """Write what is left of the trimmed answer; returns the trimmed answer (stripped)."""
        final = self.stopper.trim(self.raw)
        if not self.started:
            self.written = len(final) - len(final.lstrip())
        if len(final) > self.written:
            self.write(final[self.written:])
            self.written = len(final)
        return final.strip()
