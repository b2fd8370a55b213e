"""What a quoted answer shows: the sentence of the document quoted, whole, and its answer line.

Where the model's own answer gives way (answering.decide), the answer line quotes the document's own words, with
where they are: `“…” [tar.1.txt · line 612]`, or a span before its sentence, `-J — “-J, --xz Filter the archive
through xz(1).” [...]`. A quote must read on its own, so it is the whole sentence (evidence.sentence_units), with
what it leads into when it ends in a colon ("To immediately stop a request within a filter or route use:" |
"halt"), and with the sentence before it when it opens with a pronoun standing for something named there ("The
seventeenth DebConf was held in Cape Town." | "It was the first DebConf in Africa."); on the answer line at most
QUOTE_WORDS words of it. Measured: docs/results/qa.md.

    lo, hi = quote_units(texts, unit)          # the units quoted for the sentence of `unit`
    line = quote_line(short, how, sentence, label)
"""

from __future__ import annotations

import re

from . import retrieve
from .evidence import sentence_units

GLOSS_UNITS = 8    # a definition's head is quoted with the first statement at most this many units after it
OPEN_QUOTE, CLOSE_QUOTE = "\u201c", "\u201d"


def quoted(question: str, found: list[retrieve.Found], texts: list[str]) -> tuple[str, str, int]:
    """("quoted", text, unit): the sentence quoted for `question`, the best passage's top one, unless that is the
    head of a definition of a name the question names and no statement ("g_key_file_to_data ()" and its
    signature, ending in ";"): then the first statement after it, within GLOSS_UNITS units ("This function outputs
    key_file as a string."), as an API reference or a glossary writes a name's gloss under it."""
    top = found[0].top
    lo, hi = sentence_units(texts, top)
    head = "".join(texts[lo:hi + 1]).strip()
    # heads over the one unit alone: > 0 when it begins with a name the question names
    if head[-1:] not in ".!?:" and float(retrieve.heads([texts[lo]], question)[0]) > 0:
        for j in range(hi + 1, min(len(texts), hi + 1 + GLOSS_UNITS)):
            t = texts[j].strip()
            if t[-1:] in ".!?" and len(t.split()) >= 3:
                return "quoted", t, j
    return "quoted", texts[top].strip(), top


def led_into(texts: list[str], hi: int) -> int:
    """The last unit of the sentence the sentence ending at unit `hi` leads into when it ends with a colon
    ("To immediately stop a request within a filter or route use:" | "halt"), else `hi`."""
    if not texts[hi].rstrip().endswith(":"):
        return hi
    nxt = next((k for k in range(hi + 1, min(len(texts), hi + 4)) if texts[k].strip()), None)
    return hi if nxt is None else sentence_units(texts, nxt)[1]


# a sentence that opens with a pronoun standing for something named before it: "It was the first DebConf in
# Africa." ("this", "these" ... only as a pronoun, before a verb: an auxiliary, or after "this"/"that" a word in -s
# that is no -ss, -us or -is noun; not "This function outputs ...")
_REFERS_BACK = re.compile(r"^\W*(?:(?:it|they|he|she|its|their|his|her)\b|(?:this|these|that|those)\s+(?:is|was|are|"
                          r"were|can|could|will|would|may|might|must|should|has|have|had|does|do|did|also)\b"
                          r"|(?:this|that)\s+[a-z]+(?<![sui])s\b)",  # "This avoids ...", not "This process", "This status"
                          re.I)


def referred_to(texts: list[str], lo: int) -> int:
    """The first unit of the sentence before the one starting at unit `lo`, in the same paragraph, when that one
    opens with a pronoun standing for something it names ("The seventeenth DebConf was held in Cape Town." |
    "It was the first DebConf in Africa."); else `lo`. A quote that says "it" is quoted with what "it" is."""
    if lo == 0 or not _REFERS_BACK.match(texts[lo]):
        return lo
    k = lo - 1
    if texts[k].endswith("\n\n") or not any(c.isalnum() for c in texts[k]):
        return lo  # a paragraph, heading or list of its own before it
    return sentence_units(texts, k)[0]


def quote_units(texts: list[str], unit: int) -> tuple[int, int]:
    """[first, last] units of what is quoted for the sentence of unit `unit`: the whole sentence, with the
    sentence a pronoun it opens with stands for (`referred_to`), and with what it leads into when it ends with a
    colon (`led_into`)."""
    lo, hi = sentence_units(texts, unit)
    return referred_to(texts, lo), led_into(texts, hi)


def quote_line(short: str, how: str, sentence: str, label: str) -> str:
    """The answer line of a span or a quoted sentence: the document's own words, in curly quotes, with where
    they are ("-J — “-J, --xz Filter the archive through xz(1).” [tar.1.txt · line 612]")."""
    said = f"{OPEN_QUOTE}{clip_around(sentence, '' if how == 'quoted' else short)}{CLOSE_QUOTE}" + \
        (f" [{label}]" if label else "")
    return said if how == "quoted" else f"{short} \u2014 {said}"


QUOTE_WORDS = 40  # the most words of a sentence on the answer line (a PDF's run-on "sentence"); --json has it whole


def clip_around(sentence: str, span: str = "", n: int = QUOTE_WORDS) -> str:
    """`sentence` on one line, at most `n` words: around the first word holding `span` (a third of them before
    it), else its head, "…" where cut."""
    ws = sentence.split()
    if len(ws) <= n:
        return " ".join(ws)
    at = next((i for i, w in enumerate(ws) if span and span in w), 0)
    lo = max(0, min(at - n // 3, len(ws) - n))
    hi = lo + n
    return ("\u2026 " if lo else "") + " ".join(ws[lo:hi]) + (" \u2026" if hi < len(ws) else "")
