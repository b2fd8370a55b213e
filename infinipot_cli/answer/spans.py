"""Short answers taken from the document: what a question asks for, and the spans of a sentence that could be it.

A 135M model shown the passage that holds an answer often writes around it ("The document asks to filter the
archive through xz" for "Which short option filters the archive through xz?" over "-J, --xz  Filter the archive
through xz(1)."). The answer is a span of that passage, of a kind the question names: an option, a number, a
version, a date, a key, an identifier, a path, a quoted word, a name. This is classic answer typing (the
question's wh-word and head noun say what kind of thing answers it) with candidate spans ranked by how close
they stand to the question's own words in the sentence — no model involved, so it cannot invent.

    want = wanted("Which short option filters the archive through xz?")   # Want(kinds=["option", ...], head="option")
    for s in spans("-J, --xz  Filter the archive through xz(1).", want): ...   # Span("-J", "option", 0, 2), ...

`answering.py` decides between such a span and the model's own answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..pot.archive import STOPWORDS, words

_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
# Span kinds, each a pattern over a sentence (the most specific first: an e-mail is not also a path)
PATTERNS: dict[str, str] = {
    "email": r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    "url": r"\b(?:https?|ftp)://[^\s<>\"')\]]+",
    "date": rf"\b(?:\d{{1,2}} {_MONTH},? \d{{4}}|{_MONTH} \d{{1,2}}, \d{{4}}|{_MONTH},? \d{{4}}|\d{{4}}-\d{{2}}-\d{{2}})\b",
    "option": r"(?<![\w/.\-])(?:--?[A-Za-z0-9][\w-]*(?:=[^\s,;)]+)?|\+[A-Za-z])(?![\w])",
    "key": r"\b(?:CTRL|Ctrl|ALT|Alt|META|Meta|SHIFT|Shift|CMD|Cmd)-\S\w*|<[A-Za-z][\w-]*>",
    "version": r"(?<![\w.])v?\d+(?:\.\d+)+(?:-\d+)?[a-z]?(?!\w|\.\w)",  # "... was 5.92." ends a sentence
    "number": r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:\s?(?:%|KB|MB|GB|KiB|MiB|GiB|bytes|characters|seconds|minutes|hours|days))?"
              r"(?![\w])",
    "path": r"(?<![\w<])(?:~|\.{1,2})?/[\w.+-]+(?:/[\w.+-]+)*/?|(?<![\w/.-])\.[A-Za-z][\w]{0,5}\b|"
            r"\b[\w-]+\.(?:[a-z]{1,4})\b(?=[\s,;:)]|\.\s|$)",
    "ident": r"(?<![\w-])(?!(?:e\.g|i\.e|etc|vs)\b)(?:[A-Z]+-\d+(?:-\d+)*|[A-Za-z_]\w*(?:\.\w+)+(?:\(\))?"
             r"|[A-Za-z_]\w*\(\)|[A-Za-z]+_\w+|[A-Za-z]+\d+[A-Za-z]\w*|[A-Z][A-Z0-9_]{2,}\b|[a-z]+[A-Z]\w+"
             r"|[A-Z][a-z]+[A-Z]\w*|[A-Za-z][\w]*[-/][\w/.-]*\w|:[a-z]+!?|#(?!(?:define|include|if|ifdef|ifndef|elif|else|endif|undef|pragma)\b)[\w-]+)(?![\w])",
    "symbol": r"(?<![^\s(])[^\w\s\"'`()\[\]{}\u201c\u201d\u2018\u2019,;]{1,3}(?=[\s),;]|[.:](?:\s|$)|$)",
    "shell": r"(?m)^[ \t]*[$%][ \t]+([^\n]{1,60}?)[ \t]*(?:#[^\n]*)?$",  # a command line shown: "$ git bisect reset"
    "quoted": r"[\"\u201c\u2018'`]([^\"\u201d\u2019'`\n]{1,40})[\"\u201d\u2019'`]",
    "name": r"(?<![\w])[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+",
}
_RX = {k: re.compile(v) for k, v in PATTERNS.items()}

# the head noun of a question ("which OPTION ...", "what is the default LEVEL ...") -> the kinds that answer it,
# the likeliest first (a plain word such as "proxy" is no kind: the model's own answer names it)
HEADS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("option", "flag", "switch"), ("option", "ident", "quoted")),
    "key": ("key", "quoted", "ident"),
    # a character is a symbol, quoted or standing alone ("'#'", "~"), not a word such as "end-of-line"
    **dict.fromkeys(("operator", "character", "separator", "delimiter", "symbol"), ("quoted", "symbol")),
    **dict.fromkeys(("command", "tool", "program", "utility", "binary", "script"), ("shell", "quoted", "ident")),
    **dict.fromkeys(("function", "method", "macro", "variable", "handler", "attribute", "field", "parameter",
                     "argument", "setting", "property", "class", "module", "package", "library", "header",
                     "directive", "keyword", "word", "prefix", "suffix",
                     "constant", "identifier", "signal", "format", "encoding", "type", "mode", "error", "exception"),
                    ("quoted", "ident")),
    **dict.fromkeys(("file", "directory", "folder", "path", "extension", "location"), ("path", "ident", "quoted")),
    **dict.fromkeys(("port", "code", "status", "uid", "gid", "id", "size", "length", "weight", "limit", "number",
                     "count", "depth", "width", "height", "timeout", "priority", "level", "value", "default"),
                    ("number", "ident", "quoted")),
    **dict.fromkeys(("version", "release", "revision"), ("version", "number")),
    **dict.fromkeys(("date", "year", "day"), ("date", "number")),
    **dict.fromkeys(("user", "account", "group", "owner", "name", "label", "password", "channel", "license",
                     "standard", "recommendation", "algorithm", "protocol", "service", "daemon"),
                    ("ident", "quoted", "name")),
    **dict.fromkeys(("address", "email", "mail"), ("email", "url")),
    **dict.fromkeys(("url", "site", "website", "page"), ("url", "path")),
    **dict.fromkeys(("author", "maintainer", "person", "uploader"), ("name", "email")),
}
_WH = re.compile(r"\b(?:which|what|whose)\b\s+((?:[\w'-]+\s+){0,4}?)([\w-]+)\b", re.I)
_COPULA = {"is", "are", "was", "were", "does", "do", "did", "can", "should", "must", "will", "the", "a", "an"}
_PREPOSITIONS = {"of", "for", "in", "on", "to", "with", "by", "that", "which", "when", "if", "from", "at", "as",
                 "about", "after", "before", "under", "over", "into", "than", "used", "does", "do", "is", "are"}



@dataclass
class Want:
    """What a question asks for: span kinds (likeliest first), its head noun, its content words."""

    kinds: tuple[str, ...] = ()
    head: str | None = None
    words: set[str] = field(default_factory=set)
    shape: str | None = None    # options: "short" (-x) or "long" (--name) when the question says which
    many: bool = False          # it asks for several things ("What are all the ...", "List the ...")

    @property
    def typed(self) -> bool:
        return bool(self.kinds)


@dataclass
class Span:
    text: str
    kind: str
    start: int      # character offsets in the sentence
    stop: int
    score: float = 0.0


def _head(w: str) -> str | None:
    w = w.lower()
    for k in (w, w[:-1] if w.endswith("s") else w, w[:-2] if w.endswith("es") else w):
        if k in HEADS:
            return k
    return None


def wanted(question: str) -> Want:
    """The kinds of span that answer `question`: from its wh-word ("how many", "when", "who", "where") or the
    head noun after "which"/"what" ("which short OPTION", "what is the default compression LEVEL"); none when
    the question does not say (then only the model's own answer is used). `many`: it asks for several."""
    want = _wanted(question)
    low = question.lower()
    if "number" in want.kinds and re.search(r"\bnumeric|\bnumber of\b|\bhow (?:many|much)\b", low):
        want.kinds = ("number",)  # "the numeric value of X": a number, not a name
    # "What are (all) the ...", "List the ...", "Name every ...": not "all" inside the question ("Which command
    # quits and throws away all changes?" asks for one command)
    want.many = bool(re.match(r"\W*(?:list|name)\b", low)
                     or re.match(r"\W*(?:\w+\s+){0,2}?(?:what|which) (?:\w+\s+)?(?:are|were)\b", low))
    return want


def _wanted(question: str) -> Want:
    q = " ".join(question.strip().split())
    low = q.lower()
    content = {w for w in words(low) if w not in STOPWORDS}
    if re.match(r"(?:\w+\s+){0,3}?how (?:many|much|long|large|big|old|often|far)\b", low):
        return Want(("number", "date"), "number", content)
    if re.match(r"(?:\w+\s+){0,2}?when\b", low) or re.search(r"\bwhat (?:date|day|year)\b", low):  # not "... when X"
        return Want(("date", "version", "number"), "date", content)
    if re.match(r"(?:\w+\s+){0,2}?who\b", low) or re.search(r"\bby whom\b", low):
        return Want(("name", "ident", "email"), "owner", content)
    if re.match(r"(?:\w+\s+){0,2}?where\b", low):
        return Want(("path", "url", "ident"), "location", content)
    m = _WH.search(q)
    if m:
        first = re.findall(r"[\w'-]+", q[m.start(1):])[:3]
        copula = bool(first) and first[0].lower() in ("is", "are", "was", "were")
        tail = [] if copula else [w for w in first if w.lower() not in _COPULA]
        for w in tail:  # "which short OPTION", "which exit CODE", "what new PROGRAM"
            h = _head(w)
            if h:
                return _shaped(Want(HEADS[h], h, content), low)
        # "what is the default compression LEVEL of tar": after the copula, the last head noun before a preposition
        c = re.search(r"\b(?:which|what)\s+(?:is|are|was|were)\s+(?:the\s+|a\s+|an\s+)?(.*)", low)
        if c:
            group = []
            for w in re.findall(r"[\w'/.-]+", c.group(1))[:6]:
                if w in _PREPOSITIONS:
                    break
                group.append(w)
            for w in reversed(group):
                h = _head(w)
                if h:
                    return _shaped(Want(HEADS[h], h, content), low)
    if re.match(r"\W*how (?:do|can|should|would|to)\b", low):  # "How do I undo an undo?": a command, key or option
        return Want(("shell", "key", "option"), None, content)
    return Want((), None, content)


def _shaped(want: Want, question: str) -> Want:
    """An option asked for as "short" or "long" (a short option is -x, a long one --name)."""
    if "option" in want.kinds[:1]:
        m = re.search(r"\b(short|long)\b", question)
        want.shape = m.group(1) if m else None
    return want


def spans(sentence: str, want: Want, question: str = "") -> list[Span]:
    """The spans of `sentence` of the kinds `want` asks for (none that the question names already, none from a
    heading line, no placeholder such as FILE in "-f FILE"), best first: by closeness to the question's words in
    the sentence (`closeness`), the kinds the question names first weighing more ("exit code": a number before an
    identifier), an option of the shape asked for ("short option": -x) more than the other."""
    out: list[Span] = []
    taken: list[tuple[int, int]] = []
    asked = question.lower()
    for kind in want.kinds:
        for m in _RX[kind].finditer(sentence):
            g = 1 if kind in ("quoted", "shell") else 0
            a, b = m.start(g), m.end(g)
            text = m.group(g).strip()
            if kind in ("path", "url") and len(text) > 2 and text[-1] in ".," and text[-2] != ".":
                text, b = text[:-1], b - 1  # the sentence's full stop or comma after it
            if (not text or any(a < y and x < b for x, y in taken) or _named(text, asked)
                    or _inside_named(sentence, a, b, asked) or _heading(sentence, a)
                    or _placeholder(sentence, a, text) or (kind == "ident" and _opening_word(sentence, a, text))
                    or (kind == "option" and _optional(sentence, a, b))):
                continue
            taken.append((a, b))
            out.append(Span(text, kind, a, b))
    for s in out:
        s.score = closeness(s, sentence, want) + 0.5 * (1 - want.kinds.index(s.kind) / len(want.kinds))
        if want.shape and s.kind == "option":
            s.score += 0.5 if (want.shape == "long") == s.text.startswith("--") else -0.5
        if s.kind == "shell":  # a command line shown ("$ git bisect reset") is the command itself
            s.score += 1.0
    return sorted(out, key=lambda s: -s.score)


def _optional(sentence: str, a: int, b: int) -> bool:
    """Whether the option at [a, b) is an optional argument of a synopsis line: in square brackets, after an option
    outside them ("tar --create [--file ARCHIVE] [OPTIONS]": --file is not what the line is about)."""
    lo = sentence.rfind("\n", 0, a) + 1
    hi = sentence.find("\n", b)
    line, at = sentence[lo:hi if hi >= 0 else len(sentence)], a - lo
    before = line[:at]
    if before.count("[") <= before.count("]") or "]" not in line[at:]:
        return False
    outside = re.sub(r"\[[^\[\]]*\]", " ", before)  # what stands before it outside brackets
    return _RX["option"].search(outside) is not None


_PLACEHOLDER_BEFORE = re.compile(r"(?:[=\[<]|(?<![\w-])--?[\w-]+\s)$")


def _placeholder(sentence: str, at: int, text: str) -> bool:
    """A capitalised placeholder of a synopsis or an option ("--max-delete=NUM", "-f FILE", "[OPTION]")."""
    return text.isupper() and "_" not in text and bool(_PLACEHOLDER_BEFORE.search(sentence[max(0, at - 40):at]))


_COMPOUND = re.compile(r"[A-Z][a-z]+(?:-[a-z]+)+")


def _opening_word(sentence: str, at: int, text: str) -> bool:
    """A capitalised compound word opening the sentence ("Architecture-independent public modules ..."): a word,
    not an identifier."""
    return not sentence[:at].strip() and _COMPOUND.fullmatch(text) is not None


def _heading(sentence: str, at: int) -> bool:
    """Whether position `at` is on a heading line: a short line of capitals only ("RETURN VALUE", "OPTIONS")."""
    a = sentence.rfind("\n", 0, at) + 1
    b = sentence.find("\n", at)
    line = sentence[a:b if b >= 0 else len(sentence)].strip()
    return bool(line) and line.upper() == line and any(c.isalpha() for c in line) and len(line.split()) <= 4 \
        and not any(c in line for c in "_-=/.")


_TOKEN_END = ",;:.!?)]}\"'"


def _inside_named(sentence: str, a: int, b: int, asked: str) -> bool:
    """Whether span [a, b) of `sentence` is part of a longer token that the question names ("2010" of
    "CVE-2010-0001" when the question asks about CVE-2010-0001)."""
    lo = a
    while lo > 0 and not sentence[lo - 1].isspace():
        lo -= 1
    hi = b
    while hi < len(sentence) and not sentence[hi].isspace():
        hi += 1
    token = sentence[lo:hi].strip(_TOKEN_END + "([{")
    return len(token) > b - a and len(token) >= 4 and _named(token, asked)


def _named(text: str, asked: str) -> bool:
    """Whether the question names `text` already (then it is not the answer)."""
    t = text.lower()
    return bool(re.search(r"(?<![\w-])" + re.escape(t) + r"(?![\w])", asked)) if t[:1].isalnum() else t in asked


_WORDS = re.compile(r"[A-Za-z0-9]+")


def closeness(span: Span, sentence: str, want: Want) -> float:
    """How close `span` stands to the question's content words in `sentence`: the sum over those words' places
    of 1 / (1 + distance in words)."""
    total = 0.0
    for m in _WORDS.finditer(sentence):
        if m.start() >= span.start and m.end() <= span.stop:
            continue
        stem = words(m.group(0))
        if stem and stem[0] in want.words:
            between = sentence[m.end():span.start] if m.start() < span.start else sentence[span.stop:m.start()]
            total += 1.0 / (1 + len(between.split()))
    return total


def mentions(text: str, kind: str) -> list[str]:
    """What `text` writes of span kind `kind` (PATTERNS), as written, trailing punctuation aside: the versions,
    options and identifiers a question names."""
    return [m.group(0).strip().rstrip("?.,") for m in _RX[kind].finditer(text)]


def contains(text: str, span: str) -> bool:
    """Whether `text` names `span` (as a whole word)."""
    pre = r"(?<![\w-])" if span[:1].isalnum() else ""
    post = r"(?![\w])" if span[-1:].isalnum() else ""
    return re.search(pre + re.escape(span) + post, text) is not None
