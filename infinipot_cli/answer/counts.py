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

Alike, how often one word or string occurs ("How many times does 'timeout' appear in this log?", "How many lines
contain ERROR?"): counted exactly in the document as read.

    term, per_line = occurrences("How many lines contain ERROR?")   # ("ERROR", True), or None
    rx = pattern(term)                                              # its whole-word matches
    line = occurrence_line(term, rx, text, per_line)               # "9 lines contain “ERROR” (12 times in all)."
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


# "How many times does [the word] 'X' appear / is X mentioned", "How often does X occur", "How many occurrences of
# X", "How many lines contain X": X quoted (up to 40 characters) or one token
_QUOTE, _UNQUOTE = "[\"'`\u2018\u201c]", "[\"'`\u2019\u201d]"
_TERM = (r"(?:the\s+(?:word|term|string|name|phrase|text|token|message|code)\s+)?"
         r"(?:" + _QUOTE + r"(?P<quoted>[^\"'`\u2019\u201d\n]{1,40})" + _UNQUOTE + r"|(?P<bare>[\w.:/@+-]*\w))")
_VERB = (r"(?:been\s+)?(?:appears?|appeared|occurs?|occurred|(?:shows?|showed|comes?|came)\s+up|"
         r"(?:gets?\s+|got\s+)?(?:mentioned|used|written|repeated|logged|printed|seen))\b")
_AUX = r"(?:does|do|did|is|are|was|were|has|have)"
_OCCURRENCES = [re.compile(p, re.I) for p in (
    r"\bhow\s+many\s+times\s+" + _AUX + r"\s+" + _TERM + r"\s+" + _VERB,
    r"\bhow\s+often\s+" + _AUX + r"\s+" + _TERM + r"\s+" + _VERB,
    r"\bhow\s+many\s+(?:occurrences|mentions|instances)\s+of\s+" + _TERM + r"(?=[\s?.,;]|$)",
    r"\bhow\s+many\s+(?P<lines>lines)\s+(?:contain|mention|include|have|show)s?\s+" + _TERM + r"(?=[\s?.,;]|$)")]


def occurrences(question: str) -> tuple[str, bool] | None:
    """(term, per line) when `question` asks how often one word or string occurs in the document: the term quoted,
    or one token that is no function word; per line when it asks for the lines that hold it. None otherwise
    ("How many times does the most common word appear?" names no term; "How many times was the backup
    retried?" asks about what happened, not about words)."""
    for rx in _OCCURRENCES:
        m = rx.search(question)
        if not m:
            continue
        term = (m.group("quoted") or m.group("bare") or "").strip()
        if not term or (m.group("bare") and (term.lower() in FUNCTION_WORDS or len(term) < 2)):
            return None
        return term, "lines" in rx.groupindex and bool(m.group("lines"))
    return None


def pattern(term: str) -> re.Pattern:
    """The term's matches as a whole word (no letter or digit right before or after an end that is one), any
    case — but as written when it has a capital after its first letter ("ERROR", "NullPointerException")."""
    pre = r"(?<![^\W_])" if term[0].isalnum() else ""
    post = r"(?![^\W_])" if term[-1].isalnum() else ""
    exact = any(c.isupper() for c in term[1:])
    return re.compile(pre + re.escape(term) + post, 0 if exact else re.I)


def occurrence_line(term: str, rx: re.Pattern, text: str, per_line: bool) -> str:
    """The answer shown: how many times `term` (matched by `rx`) occurs in `text`, and on how many lines."""
    times = len(rx.findall(text))
    lines = sum(1 for ln in text.split("\n") if rx.search(ln))
    shown = f"\u201c{term}\u201d"
    if not times:
        return f"{shown} does not occur in the document."
    plural = lambda n, w: f"{n} {w}{'s' if n != 1 else ''}"  # noqa: E731
    if per_line:
        return f"{plural(lines, 'line')} {'contain' if lines != 1 else 'contains'} {shown} ({plural(times, 'time')} in all)."
    return f"{shown} occurs {plural(times, 'time')}, on {plural(lines, 'line')}."
