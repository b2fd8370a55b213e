"""Questions about how often words occur, answered by counting the document as read.

"What are the 10 most common words in the above list?", "Which word appears most often in this log?": the
answer is a count over the whole text, which no passage holds and a small model cannot keep while reading (it
reads every token once, and the pot keeps a fixed share of them). The pot and its archive hold every token read,
so the document as read is counted exactly: its words (letters, with any inner hyphen or apostrophe: "blue-fish",
"don't"; numbers and marks such as "...." are no words), folded to lower case, common English function words
left out, the most frequent first (ties: the one met first). RULER's common- and frequent-words tasks (cwe, fwe)
ask this; so does a reader of a log or a survey.

    asked = wanted("What are the three most frequently appeared words?")   # 3, or None: not a count question
    top = most_common(text, 3)                                          # [("apple", 30), ("pear", 30), ...]
    line = answer_line(top)                                             # "apple (30 times), pear (30 times), ..."
"""

from __future__ import annotations

import re
from collections import Counter

DEFAULT_MANY = 10   # "What are the most common words?" names no number: this many
_NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                       "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
                                       .split())}
_NUMBER = r"(\d{1,3}|" + "|".join(_NUMBERS) + r")"
# "most common", "most frequent(ly)", "most often", "most used", "most repeated", "commonest", "appears most"
_MOST = re.compile(r"\bmost\s+(?:common(?:ly)?|frequent(?:ly)?|often|used|repeated|popular)\b|\bcommonest\b"
                   r"|\b(?:appears?|appeared|occurs?|occurred|used|repeated)\s+(?:the\s+)?most(?:\s+often)?\b",
                   re.I)
_WORD_ASKED = re.compile(r"\b(words?|terms?)\b", re.I)
_HOW_MANY_TIMES = re.compile(r"\bhow\s+(?:many|often)\b", re.I)
_TOKEN = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")
# common English function words: what a reader asking for a text's most common words does not mean
FUNCTION_WORDS = frozenset("""a about above after again against all am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most
mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she
she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
there's these they they'd they'll they're they've this those through to too under until up very was wasn't we we'd
we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's will with
won't would wouldn't you you'd you'll you're you've your yours yourself yourselves also may might must shall us
upon""".split())


def wanted(question: str) -> int | None:
    """How many of the document's most frequent words `question` asks for (a number it names: "the 10 most
    common words", "the three most frequently appeared words"; else one for "word", DEFAULT_MANY for "words"),
    or None when it does not ask for the words that occur most ("How many times does X occur?" asks a count of
    one word, not this)."""
    if not _MOST.search(question) or not _WORD_ASKED.search(question) or _HOW_MANY_TIMES.search(question):
        return None
    m = re.search(_NUMBER + r"\s+(?:most|(?:\w+\s+){0,3}(?:words?|terms?)\b)", question, re.I)
    if m:
        n = m.group(1).lower()
        k = int(n) if n.isdigit() else _NUMBERS[n]
        return k if k > 0 else None
    plural = any(w.lower() in ("words", "terms") for w in _WORD_ASKED.findall(question))
    return DEFAULT_MANY if plural else 1


def most_common(text: str, n: int) -> list[tuple[str, int]]:
    """The `n` most frequent words of `text` and their counts, most frequent first (ties: the first met), function
    words left out; a word is counted in lower case, a possessive "'s" dropped, and shown as it is most often written."""
    counts: Counter[str] = Counter()
    forms: dict[str, Counter[str]] = {}
    for m in _TOKEN.finditer(text):
        w = m.group(0)
        key = w.lower().replace("\u2019", "'")
        if key in FUNCTION_WORDS or len(key) < 2:
            continue
        key = key[:-2] if key.endswith("'s") else key  # "keeper's" is "keeper"
        if len(key) < 2:
            continue
        counts[key] += 1
        forms.setdefault(key, Counter())[w] += 1
    top = counts.most_common(n)  # (Counter keeps first-met order among equal counts)
    return [(forms[k].most_common(1)[0][0], c) for k, c in top]


def answer_line(top: list[tuple[str, int]]) -> str:
    """The answer shown: each word with its count, most frequent first."""
    return ", ".join(f"{w} ({c} time{'s' if c != 1 else ''})" for w, c in top)
