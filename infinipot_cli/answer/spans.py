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
    # a time of day, one span: "7:45", "19:30", "07:45:10", "7:45 pm", "7 a.m." (its "7" is no number: spans())
    "time": r"(?<![\w.:])(?:(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s?[AaPp]\.?[Mm]\b\.?)?"
            r"|(?:1[0-2]|0?[1-9])\s?[AaPp]\.?[Mm]\b\.?)(?![\w:])",
    # an option as GNU and man pages write it: "-i[SUFFIX]", "--in-place[=SUFFIX]", "--opt=VALUE", "-o VALUE" are
    # the options -i, --in-place, --opt, -o (spans() keeps a literal value: "--format=posix")
    "option": r"(?<![\w/.\-])(?:--?[A-Za-z0-9][\w-]*(?:=[^\s,;)\[\]]+)?|\+[A-Za-z])(?![\w])",
    "key": r"\b(?:CTRL|Ctrl|ALT|Alt|META|Meta|SHIFT|Shift|CMD|Cmd)-\S\w*|<[A-Za-z][\w-]*>",
    # "... was 5.92." ends a sentence; a number a title or a sentence calls a version is one ("Version 3")
    "version": r"(?<![\w.])v?\d+(?:\.\d+)+(?:-\d+)?[a-z]?(?!\w|\.\w)"
               r"|(?:(?<=\b[Vv]ersion )|(?<=\bVERSION ))\d+(?:\.\d+)*(?!\w|\.\w)",
    "number": r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:\s{0,3}(?:%|KB|MB|GB|KiB|MiB|GiB|bytes|characters|seconds|minutes|hours|days))?"
              r"(?![\w]|\.[A-Za-z_])",  # not the "5" of "5.x" or of "5.txt"
    "path": r"(?<![\w<])(?:~|\.{1,2})?/[\w.+-]+(?:/[\w.+-]+)*/?|(?<![\w/.-])\.[A-Za-z][\w]{0,5}\b|"
            r"\b[\w-]+\.(?:[a-z]{1,4})\b(?=[\s,;:)]|\.\s|$)",
    # (first: a hex identifier with a digit, whole: "dc778b88-df7d-4c6a-…", "3f2a9c1e")
    "ident": r"(?<![\w-])(?!(?:e\.g|i\.e|etc|vs)\b)(?:(?=[\da-f-]*[a-f])[\da-f]*\d[\da-f]*(?:-[\da-f]+)+"
             r"|(?=[\da-f]{7,}(?![\w]))\d[\da-f]*[a-f][\da-f]*|[A-Z]+-\d+(?:-\d+)*|[A-Za-z_]\w*(?:\.\w+)+(?:\(\))?"
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
    # a span of time asked for: a number with its unit ("30 days"), a date or a time
    **dict.fromkeys(("period", "duration", "interval", "delay", "age", "amount", "price", "cost", "fee", "rate",
                     "percentage", "frequency"), ("number", "date", "time")),
    **dict.fromkeys(("version", "release", "revision", "edition"), ("version", "number")),
    **dict.fromkeys(("date", "year", "day", "deadline"), ("date", "number")),
    **dict.fromkeys(("time", "hour"), ("time", "number", "date")),
    **dict.fromkeys(("user", "account", "group", "owner", "name", "label", "password", "channel", "license",
                     "standard", "recommendation", "algorithm", "protocol", "service", "daemon"),
                    ("ident", "quoted", "name")),
    # (no number among them: retrieve.typed would raise the units holding one, not the identifier's)
    **dict.fromkeys(("uuid", "guid", "hash", "checksum", "digest", "fingerprint"), ("ident", "quoted")),
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
    if re.search(r"\bwhat time\b", low):  # "When / at what time does the ferry leave?": "7:45", not the "7" of it
        return Want(("time", "date", "number"), "time", content)
    # "When ...", "Since when ...", not "... when X" nor "What happens when X" (a wh-word before it: a clause)
    if re.match(r"(?:(?!what\b|which\b|who\b|how\b|where\b|why\b)\w+\s+){0,2}?when\b", low) \
            or re.search(r"\bwhat (?:date|day|year)\b", low):
        return Want(("date", "time", "version", "number"), "date", content)
    if re.match(r"(?:\w+\s+){0,2}?who\b", low) or re.search(r"\bby whom\b", low):
        return Want(("name", "ident", "email"), "owner", content)
    if re.match(r"(?:\w+\s+){0,2}?where\b", low):
        return Want(("path", "url", "ident"), "location", content)
    m = _WH.search(q)
    if m:
        first = re.findall(r"[\w'-]+", q[m.start(1):])[:3]
        copula = bool(first) and first[0].lower() in ("is", "are", "was", "were")
        tail = [] if copula else [w for w in first if w.lower() not in _COPULA]
        # "which short OPTION", "which exit CODE", "what new PROGRAM": the first head noun, or the last of a run of
        # them, the compound's head ("what license VERSION is this": a version, not a license's name)
        h = None
        for w in tail:
            got = _head(w)
            if got is None and h is not None:
                break
            h = got or h
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


LEAD = 0.5  # an option heading its line (where a man page defines it) over one mentioned in passing


def spans(sentence: str, want: Want, question: str = "", after: str = "", before: str = "") -> list[Span]:
    """The spans of `sentence` of the kinds `want` asks for (none that the question names already, none from a
    heading line but a version or date, no placeholder such as FILE in "-f FILE", no piece of a time, no number
    that names rather than counts: `_not_a_quantity`), best first: by closeness to the question's words in the
    sentence (`closeness`), the kinds the question names first weighing more ("exit code": a number before an
    identifier), an option of the shape asked for ("short option": -x) more than the other. An option heading
    its line ("-w[EXT], --write-back[=EXT]": `leads`) is the option the line defines: it weighs LEAD more than
    one mentioned in passing, and its closeness counts the words of its description, the rest of its line and
    `after` (the lines under it in a man page). `before`: the text before the sentence (a unit cut inside
    "CVE-2006-|4336" begins with a piece of a name)."""
    out: list[Span] = []
    taken: list[tuple[int, int]] = []
    asked = question.lower()
    times = [m.span() for m in _RX["time"].finditer(sentence)] if "number" in want.kinds else []
    for kind in want.kinds:
        for m in _RX[kind].finditer(sentence):
            g = 1 if kind in ("quoted", "shell") else 0
            a, b = m.start(g), m.end(g)
            text = m.group(g).strip()
            if kind in ("path", "url") and len(text) > 2 and text[-1] in ".," and text[-2] != ".":
                text, b = text[:-1], b - 1  # the sentence's full stop or comma after it
            if kind == "option" and "=" in text and (_placeholder_value(text) or leads(sentence, a)):
                text = text.split("=", 1)[0]  # "--line-width=N" is the option --line-width
                b = a + len(text)
            if kind == "number":
                # the "7" of "7:45" is no number; nor are "CVE-2006-4334", "utf-8", "ssh_config(5)", "4.6 The …"
                if any(x <= a and b <= y for x, y in times) or \
                        _not_a_quantity(before + sentence, len(before) + a, len(before) + b):
                    continue
                text = " ".join(text.split())  # "1024  bytes" as a justified man page line spaces it: "1024 bytes"
            if (not text or any(a < y and x < b for x, y in taken) or _named(text, asked)
                    or _inside_named(sentence, a, b, asked)
                    or (kind not in ("version", "date") and _heading(sentence, a))
                    or _placeholder(sentence, a, text) or (kind != "option" and _argument(sentence, a))
                    or (kind == "ident" and (_opening_word(sentence, a, text) or _phrase(text)))
                    or (kind == "option" and _optional(sentence, a, b))):
                continue
            taken.append((a, b))
            out.append(Span(text, kind, a, b))
    entry = sentence + after
    for s in out:
        lead = s.kind == "option" and leads(sentence, s.start)
        s.score = closeness(s, entry if lead else sentence, want) + \
            0.5 * (1 - want.kinds.index(s.kind) / len(want.kinds)) + (LEAD if lead else 0.0)
        if want.shape and s.kind == "option":
            s.score += 0.5 if (want.shape == "long") == s.text.startswith("--") else -0.5
        if s.kind == "shell":  # a command line shown ("$ git bisect reset") is the command itself
            s.score += 1.0
    return sorted(out, key=lambda s: -s.score)


def _placeholder_value(option: str) -> bool:
    """Whether the value of "--opt=VALUE" is a placeholder: capitals ("N", "WHEN") or in angle brackets."""
    value = option.split("=", 1)[1]
    return value.isupper() or value.startswith("<")


_ARGUMENT_OF = re.compile(r"(?<![\w-])--?[A-Za-z0-9][\w-]*(?:[ \t]|\[?=)$")


def _argument(sentence: str, at: int) -> bool:
    """Whether position `at` starts the argument of an option heading its line, a placeholder however written
    ("-R rules-file, --rules-file=rules-file": not the name of a file)."""
    m = _ARGUMENT_OF.search(sentence[max(0, at - 60):at])
    return m is not None and leads(sentence, max(0, at - 60) + m.start())


_OPTION_LED = re.compile(r"\s*(?:--?[A-Za-z0-9][\w-]*|\+[A-Za-z])(?![\w])")


def leads(sentence: str, at: int) -> bool:
    """Whether the option at `at` heads its line, as a man page or `--help` defines one: only other options and
    their arguments before it on the line ("-f script, --file=script", "-i[SUFFIX], --in-place[=SUFFIX]",
    "-n, --quiet, --silent"), each comma-separated piece an option; not "given with -r or --rules".
    """
    line = sentence[sentence.rfind("\n", 0, at) + 1:at]
    return all(_OPTION_LED.match(piece) for piece in line.split(",")[:-1]) and not line.split(",")[-1].strip()


def option_led(text: str) -> bool:
    """Whether `text` begins (its first line with words) with an option it defines ("  -k, --keep  do not ...")."""
    for line in text.split("\n"):
        if line.strip():
            return _OPTION_LED.match(line) is not None
    return False


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


_LINKING = {"a", "an", "and", "the", "of", "or", "to", "in", "on", "for", "with", "by", "at", "from", "as"}


def _phrase(text: str) -> bool:
    """Whether a hyphenated word is an English phrase, not a name: lower-case words, one of them a linking word
    ("quit-and-throw-things-away", "end-of-line", "up-to-date"; not "apt-get", "ssh-keygen")."""
    parts = text.split("-")
    return len(parts) > 2 and all(p.isalpha() and p.islower() for p in parts) and any(p in _LINKING for p in parts)


def _heading(sentence: str, at: int) -> bool:
    """Whether position `at` is on a heading line: a short line of capitals only ("RETURN VALUE", "OPTIONS")."""
    a = sentence.rfind("\n", 0, at) + 1
    b = sentence.find("\n", at)
    line = sentence[a:b if b >= 0 else len(sentence)].strip()
    return bool(line) and line.upper() == line and any(c.isalpha() for c in line) and len(line.split()) <= 4 \
        and not any(c in line for c in "_-=/.")


_LABEL = re.compile(r"[A-Za-z][\w.]+[-_](?:[\w.]*[-_])?$")  # a name a number ends: "CVE-", "CVE-2006-", "utf-"
_SECTION = re.compile(r"[*#=\s\u00a7]*")                      # what may stand before a section's number
_TITLE = re.compile(r"\*?[ \t]+[A-Z]")                         # after it, its title: "4.6 The ...", "*10.4*\tThe ..."


def _not_a_quantity(sentence: str, a: int, b: int) -> bool:
    """Whether the number at [a, b) names something rather than counts: a piece of an identifier ("4334" of
    "CVE-2006-4334", the "8" of "utf-8"), a manual section ("ssh_config(5)") or a section's number before its
    title on a line of its own ("4.6 The 5.x Releases", "*10.4* The global command")."""
    lo = sentence.rfind("\n", 0, a) + 1
    token = re.split(r"[\s(\[\"'`]", sentence[lo:a])[-1]
    if _LABEL.search(token):
        return True
    if a >= 2 and sentence[a - 1] == "(" and (sentence[a - 2].isalnum() or sentence[a - 2] == "_") \
            and sentence[b:b + 1] == ")":
        return True
    numbered = "." in sentence[a:b] or sentence[a - 1:a] == "*"  # not "2  Fatal error." of a list of exit codes
    return numbered and bool(_SECTION.fullmatch(sentence[lo:a])) and _TITLE.match(sentence, b) is not None


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
    of 1 / (1 + distance in words); a number's unit inside the span counts at distance 0 ("2048 bytes" for "How
    many bytes ..."), the span's other words not at all."""
    total = 0.0
    for m in _WORDS.finditer(sentence):
        if m.start() >= span.start and m.end() <= span.stop:  # a word of the span: only a number's unit counts
            if span.kind != "number" or m.group(0)[0].isdigit():
                continue
            between = ""
        else:
            between = sentence[m.end():span.start] if m.start() < span.start else sentence[span.stop:m.start()]
        stem = words(m.group(0))
        if stem and stem[0] in want.words:
            total += 1.0 / (1 + len(between.split()))
    return total


def mentions(text: str, kind: str) -> list[str]:
    """What `text` writes of span kind `kind` (PATTERNS), as written, trailing punctuation aside: the versions,
    options and identifiers a question names; an option without its placeholder ("-i[SUFFIX]", "--in-place[=SUFFIX]",
    "--width=N", "-o FILE": -i, --in-place, --width, -o)."""
    out = []
    for m in _RX[kind].finditer(text):
        o = m.group(0).strip().rstrip("?.,")
        # "--line-width=N" and "-R file, --rules-file=file" name an option; "use --format=posix", one with its value
        if kind == "option" and "=" in o and (_placeholder_value(o) or leads(text, m.start())):
            o = o.split("=", 1)[0]
        out.append(o)
    return out


def contains(text: str, span: str) -> bool:
    """Whether `text` names `span` (as a whole word)."""
    pre = r"(?<![\w-])" if span[:1].isalnum() else ""
    post = r"(?![\w])" if span[-1:].isalnum() else ""
    return re.search(pre + re.escape(span) + post, text) is not None
