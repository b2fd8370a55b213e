"""Questions for the names that hold a value, answered by following the document's assignments.

"Which variables are set to 8080?", "Find all variables that are assigned the value 93008": the answer is every
name bound to the value, directly (`PORT=8080`, `VAR LNSDG = 93008`) or through a chain of names
(`BACKUP=$PORT`, `VAR GZESA = VAR LNSDG`), anywhere in the text: a multi-hop question no single passage
answers, which the small model does not follow even when every link is before it. The pot and its archive hold
every token read, so the document as read is searched for its assignments and the chains are followed exactly.
The reverse question, a name's value, is answering.binding's (which follows a chain the other way). RULER's
variable tracking (vt) asks this; so does a reader of a configuration file or a script.

    value = asked("Which variables are set to 8080?")   # "8080", or None: not such a question
    names = holding(text, value)                         # ["PORT", "BACKUP"], in the order they are assigned
"""

from __future__ import annotations

import re

_ASKED = re.compile(r"\b(?:variables?|names?|constants?|settings?|keys?|identifiers?)\b[^?]*?"
                    r"\b(?:assigned|set|bound|equal)\b(?:\s+to)?(?:\s+the\s+value(?:\s+of)?)?\s+"
                    r"[`'\"]?([^\s`'\"?,;]+?)[`'\"]?(?=[\s?,;]|$)", re.I)
_NAME = r"[A-Za-z_][\w.]*"
# an assignment: "[VAR|export|let|const|set|...] NAME = VALUE" at a line's start, or "VAR NAME = VALUE" anywhere;
# the value a name ("VAR X", "$X", "${X}") or a token
_KEYWORD = r"(?:(?:VAR|var|let|const|export|set|local|readonly|declare|define)\s+)"
_VALUE = r"((?:VAR\s+)?\$?\{?[\w.:/@+-]+\}?)"
_AT_LINE = re.compile(r"^[ \t]*" + _KEYWORD + r"?(" + _NAME + r")[ \t]*:?=[ \t]*" + _VALUE + r"[ \t]*[;,]?[ \t]*$", re.M)
_ANYWHERE = re.compile(r"\bVAR\s+(" + _NAME + r")\s*=\s*" + _VALUE)
_REFERENCE = re.compile(r"(?:VAR\s+|\$\{?)(" + _NAME + r")\}?")
MAX_HOPS = 64   # links followed from a name at most (a loop of names binds none)


def asked(question: str) -> str | None:
    """The value `question` asks the names of ("Which variables are set to 8080?" → "8080"), or None."""
    m = _ASKED.search(question)
    if not m:
        return None
    value = m.group(1).rstrip(".")
    return value or None


def reference(value: str) -> str | None:
    """The name a value names instead of a value of its own ("$PORT", "${PORT}", RULER's "VAR PORT"), or None."""
    m = _REFERENCE.fullmatch(value)
    return m.group(1) if m else None


def assignments(text: str) -> list[tuple[str, str, int]]:
    """(name, what it is assigned: a value or "$NAME" for another name, character offset) of every assignment of
    `text`, in order."""
    found: dict[int, tuple[str, str, int]] = {}
    for rx in (_AT_LINE, _ANYWHERE):
        for m in rx.finditer(text):
            name, rhs = m.group(1), m.group(2).strip()
            ref = reference(rhs)
            found.setdefault(m.start(1), (name, "$" + ref if ref else rhs, m.start(1)))
    return [found[k] for k in sorted(found)]


def holding(text: str, value: str) -> list[tuple[str, int]]:
    """(name, offset of its assignment) of every name `text` binds to `value`, directly or through other names
    (a name's last assignment counts), in the order they are assigned."""
    last: dict[str, tuple[str, int]] = {}
    for name, rhs, at in assignments(text):
        last[name] = (rhs, at)

    def resolve(name: str) -> str | None:
        seen = set()
        while name in last and name not in seen and len(seen) < MAX_HOPS:
            seen.add(name)
            rhs = last[name][0]
            if not rhs.startswith("$"):
                return rhs
            name = rhs[1:]
        return None

    out = [(n, at) for n, (_, at) in last.items() if resolve(n) == value]
    return sorted(out, key=lambda x: x[1])
