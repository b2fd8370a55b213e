"""Honest answers: an answer that names something the document does not contain is not stated as fact.

A small model asked about a fact its pot no longer holds still answers, and it answers with the same
confidence: a CVE number, a uid, a person's name taken from nowhere. The checkable part of an answer is its
*specifics*: numbers ("37", "1.12-1", "CVE-2022-1271"), identifiers ("--rcfile", "asn1_create_element",
"~/.bashrc", "dc778b88-df7d-4c6a-…", each whole) and capitalised names not at the start of a sentence ("Amanda"). When one of them occurs neither
in the question nor in the text the answer is checked against, the answer is withheld: stdout says
NOT_SAID, and the model's guess goes to stderr and `--json` (`guess`). An answer without specifics ("the c
key") cannot be checked this way and stands.

The text checked against is the document as read (`document_text`: the pot and its archive hold every token
read, archive.py) — or, with scope "context", only the kept text the answer was written from. Both are
measured in docs/results/qa.md (false refusals against invented content).
"""

from __future__ import annotations

import re
from typing import Iterable

NOT_SAID = "The document does not seem to say."
SCOPES = ("document", "context")
DEFAULT_SCOPE = "document"
MAX_DOCUMENT_TOKENS = 4_000_000  # longer documents are checked against the answer's context only

NUMBER = re.compile(  # a number as an answer states it: 12, 3.5, 1,000, 10:30, 2024-05, 5a
    r"(?<![\w.])\d+(?:[.,:/-]\d+)*(?:[a-z]\b)?")
_IDENT = re.compile(r"(?<![\w-])(?:--?[A-Za-z][\w-]*|[~./]?[\w.-]*[_/][\w./-]*[\w]|[A-Za-z]+\d[\w.-]*|"
                    r"[a-z]+[A-Z]\w*|\w+(?:\.\w+)+\(?\)?)")
# an identifier that opens with a digit ("778b888-df7d-4c6a", "3f2a9c1e"): one claim, checked whole — its
# pieces ("778") stand inside other tokens of the text ("dc778b88-...")
_MIXED = re.compile(r"(?<![\w.-])(?=[\w-]{6,})(?=[\w-]*[A-Za-z])\d[A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*(?![\w-])")
_UNIT = re.compile(r"\d+[A-Za-z]+")  # a number and its unit ("1024KiB"), not an identifier
_WORD = re.compile(r"[A-Z][\w'-]*")
_NUMBERED = re.compile(r"^[ \t]*\d{1,3}[.)][ \t]+(?=\S)", re.MULTILINE)  # a numbered list item's number
# Capitalised words that name nothing by themselves (sentence-initial words are skipped anyway)
COMMON = frozenset("""I A An The This That These Those It Its In On At To For Of And Or But If When Where Which Who
What Why How Yes No Not None Answer Question Document Text According Section Chapter Page Line Note See Also
Example Examples Default True False Unix Linux GNU Debian Python Bash Vim Chapter Appendix Table Figure""".split())


def _norm_number(s: str) -> str:
    return s.replace(",", "")


def claims(answer: str, question: str = "") -> list[str]:
    """The specifics of `answer` that the question does not already name: numbers, identifiers, capitalised
    names (not the first word of a sentence, not in COMMON), in order, without repeats. The item numbers of a
    numbered list (two or more lines "1. ...") are the answer's own, not claims."""
    asked = question.lower()
    out: list[str] = []
    if len(_NUMBERED.findall(answer)) >= 2:  # a list, not an answer that starts "1724. The ..."
        answer = _NUMBERED.sub("", answer)

    def add(c: str) -> None:
        c = c.strip(".,;:'\"`()[]{}")
        if len(c) < 2 and not c.isdigit():
            return
        if c.lower() in asked or c in out:
            return
        out.append(c)

    for m in NUMBER.finditer(answer):
        add(m.group(0))
    for m in _IDENT.finditer(answer):
        if not NUMBER.fullmatch(m.group(0)):
            add(m.group(0))
    for m in _MIXED.finditer(answer):
        if not _UNIT.fullmatch(m.group(0)):
            add(m.group(0))
    for sent in re.split(r"(?<=[.!?:])\s+|\n", answer):
        for i, m in enumerate(_WORD.finditer(sent)):
            w = m.group(0)
            if m.start() == 0 or w in COMMON or w.isupper() and len(w) <= 1:
                continue
            if sent[:m.start()].strip() in ('"', "'", "`", "(", "“"):  # quoted at the sentence start
                continue
            add(w)
    return out


def found(claim: str, text: str, lowered: str | None = None) -> bool:
    """Whether `claim` occurs in `text`: numbers as whole numbers (commas ignored; not the hour or minutes of a
    time), identifiers with digits and letters as whole tokens ("778b88-df7d" is not in "dc778b88-df7d"), the
    rest case-insensitively."""
    low = lowered if lowered is not None else text.lower()
    if NUMBER.fullmatch(claim):  # not a piece of a time ("7" of "7:45") unless a time itself
        n = re.escape(_norm_number(claim))
        pre, post = ("", "") if ":" in claim else (r"(?<!\d:)", r"(?!:\d)")
        return re.search(rf"(?<![\d]){pre}{n}(?!\d){post}", low.replace(",", "") if "," in claim else low) is not None
    if re.search(r"\d", claim) and re.search(r"[A-Za-z]", claim):
        c = re.escape(claim.lower())
        pre = r"(?<![A-Za-z0-9])" if claim[0].isalnum() else ""
        post = r"(?![A-Za-z0-9])" if claim[-1].isalnum() else ""
        return re.search(pre + c + post, low) is not None
    return claim.lower() in low


def unsupported(answer: str, question: str, text: str) -> list[str]:
    """The specifics of `answer` (claims()) that `text` does not contain."""
    low = text.lower()
    return [c for c in claims(answer, question) if not found(c, text, low)]


_ITEM = re.compile(r"^[ \t]*(?:[-*\u2022]|\d{1,3}[.)])[ \t]+(?=\S)")  # a list item's marker


def supported_items(answer: str, question: str, text: str) -> str | None:
    """A list answer with the items that name what `text` lacks left out: each item of a list is a claim of
    its own (as each sentence of a summary's overview is), so one invented item does not withhold the items the
    document holds. None when the answer is not a list of at least two items, when a line outside the items
    names what `text` lacks, or when no item is left."""
    lines = answer.split("\n")
    items = [i for i, ln in enumerate(lines) if _ITEM.match(ln)]
    if len(items) < 2:
        return None
    low = text.lower()
    kept = []
    for i, ln in enumerate(lines):
        body = _ITEM.sub("", ln) if i in items else ln  # an item's own number ("12.") is no claim
        bad = [c for c in claims(body, question) if not found(c, text, low)]
        if bad and i not in items:
            return None
        if not bad:
            kept.append(ln)
    if not any(_ITEM.match(ln) for ln in kept):
        return None
    return "\n".join(kept).strip()


def document_text(engine, limit: int = MAX_DOCUMENT_TOKENS) -> str | None:
    """The text of the document as read, from the pot and its archive (every token read, with the default
    shared selection); None when the document is longer than `limit` tokens or some tokens are held by
    neither. Decoded once per read (Engine.derived): answering and grounding both check against it."""
    from .evidence import document_tokens

    n = engine.tokens_read
    if n > limit:
        return None

    def decode() -> str | None:
        ids = document_tokens(engine, 0, n)
        return engine.tok.decode(ids, skip_special_tokens=True) if ids is not None else None

    return engine.derived("document text", n, decode)


def refused(text: str) -> bool:
    """Whether an answer says the document does not tell (the model's own refusals and NOT_SAID)."""
    t = text.lower()
    return any(p in t for p in ("does not seem to say", "does not say", "does not mention", "not mentioned",
                                "doesn't mention", "no information", "does not provide", "not specified",
                                "does not specify", "not stated", "cannot be determined", "not provided"))


def first(items: Iterable[str], n: int = 3) -> list[str]:
    return list(items)[:n]
