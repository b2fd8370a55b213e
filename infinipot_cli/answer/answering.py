"""Answering a question from the document as read: find the passages, let the model write, check what it wrote.

A small model shown the right passage still often misses its answer: it restates the question ("The document
above contains the answer to the question."), names the wrong one of two options, or a number from the line
above. So an answer is made in three steps, each measured (docs/results/qa.md):

1. **Find** (retrieve.py): the question's best passages in the whole document as read (the pot + its archive).
2. **Write**: the model answers over those passages alone, re-encoded (Engine.answer_over), greedy, with the
   decoding controls `ask` uses (controls.py: first sentence, no loops).
3. **Check** against the passages: when the question asks for a kind of thing (an option, a number, a version,
   an identifier...: spans.py), the spans of that kind in the passages are ranked by how close they stand to
   the question's words. The model's answer stands when it names the best of them (or one as close), or names
   none where none stands out. It gives way to the best span, shown with the sentence it comes from, when it
   names a weaker one or none where a strong one stands. An answer naming a number, name or identifier its
   passages lack (honesty.py), or saying they lack the answer, gives way to a strong span, else to "The document
   does not seem to say." (as does any answer to a question naming a version, option or identifier the document
   never names: `absent`); one that names nothing beyond the question, to the best span or sentence; one that
   strays from its passage (a sentence fewer than SUPPORTED of whose new words it holds: `support`; a list's
   items are no sentence), to its best sentence — and one naming the best span whose other words stray, to
   that span. A question after a value or a person gets no quoted sentence that names none (`_quote_for`); a
   value asked of a name is the value the document binds to it (`binding`: "#define CHUNK 16384"). With no
   passage found a document of a few lines is its own passage (`_whole`), a longer one is not answered: no
   path shows the model's words unchecked (grounding.ground checks an answer written over the pot alike). What
   a quote shows, and its answer line: quotes.py.

A question asking for the words that occur most ("What are the 10 most common words?"), or how often one occurs
("How many lines contain ERROR?"), is a count over the whole text, which no passage holds: it is answered by
counting the document as read (counts.py, `_worked_out`); one asking
which names hold a value ("Which variables are set to 8080?"), by following the document's assignments
(assignments.py).

    reply = answer(engine, prompts, question, sources, max_new_tokens=256)
    reply.text     # the answer line: "-J — “-J, --xz Filter the archive through xz(1).” [tar.1.txt · line 612]"
    reply.how      # "written" | "extracted" | "quoted" | "not-said"
    reply.short    # what answers: the model's sentence, the span, or the quoted sentence
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Sequence

from . import evidence as ev
from .evidence import sentence_units
from . import assignments, counts, honesty, judge, retrieve, spans
from .quotes import quote_line, quote_units, quoted
from ..pot.archive import STOPWORDS, count_words, words

MARGIN = 0.5       # the model's own span stands when it ranks within this of the best span
WRITE_FROM = 1     # passages the model writes from (the best alone: more passages, more look-alikes to confuse)
MANY = 8           # ... for a question asking for several things: the passages scoring at least half the best
SPECIFIC = ("option", "number", "version", "date", "key", "email", "url", "path", "ident", "shell", "symbol")  # not a quoted word
STRONG = 1.0       # a span this close to the question's words replaces an answer that names no span
SUPPORTED = 0.6    # a written answer whose passage holds less than this share of its new words gives way to a quote
# words that say something about the document or the question rather than answer it
_FILLER = frozenset(words("document documents text passage manual page above below answer answers question "
                          "questions contain contains contained state states stated mention mentions mentioned "
                          "suggest suggests suggested say says describe describes provide provides discuss "
                          "discusses explain explains refer refers ask asks asking information following end ends "
                          "require requires response"))
_QUOTED = re.compile(r"[\"\u201c'`]([^\"\u201d'`\n]{1,40})[\"\u201d'`]")


@dataclass
class Reply:
    text: str                  # the answer line
    how: str                   # "written" | "extracted" | "quoted" | "not-said"
    short: str                 # the model's sentence, the span taken from the document, or the quoted sentence
    written: str               # what the model wrote
    quote: dict | None = None  # the document sentence shown: {"text", "source", page/chapter/section/line}
    unsupported: list | None = None  # "not-said": what the model named that its passages do not contain
    evidence: list | None = None     # [evidence.Passage]: the passages found for the question, the answer's first


def new_words(answer: str, question: str) -> list[str]:
    """The content words of `answer` that the question does not have (quoted words count even when it has
    them: 'The password is "live".'), filler about the document left out."""
    asked = set(words(question))
    out = [w for w in words(answer) if w not in STOPWORDS and w not in asked and w not in _FILLER]
    for q in _QUOTED.findall(answer):
        out += [w for w in words(q) if w not in STOPWORDS]
    return list(dict.fromkeys(out))


_DOCUMENT = r"(?:based on the document,? )?(?:the|this) (?:document|text|manual|page|passage)\b"
_REPORTS = re.compile(_DOCUMENT + r" (?:states|mentions|says|notes|explains|suggests|recommends|indicates|shows)"
                      r"(?: that)?\s+")
_ABOUT = re.compile(_DOCUMENT)


def support(answer: str, question: str, text: str) -> float:
    """The share of the answer's new content words (`new_words`) that `text` holds: how far the model's answer
    keeps to the passage it was written from (1.0 when it names nothing new). "To restrict an argument to a
    fixed set of allowed values, you can use the `with-statement` in Python." over a passage on `choices`: 0.5."""
    new = new_words(answer, question)
    if not new:
        return 1.0
    held = set(words(text))
    return sum(w in held for w in new) / len(new)


# what an answer may open with before it answers: "The answer to the question is: \"The answer is: ..."
_PREAMBLE = re.compile(r"(?:[\"'\u201c`\s]*(?:the |my )?answer(?: to (?:the|this|your) question)?(?: is)?\s*[:,-]?)+"
                       r"[\"'\u201c`\s]*")


def _about_document(low: str) -> bool:
    """Whether a (lower-case) answer tells about the document rather than what it says: "the document provides
    a description of ...", "the document mentions that the document ...", not "the document states that X" —
    after any preamble ("the answer to the question is: the document is not a helpful tool.")."""
    m = _PREAMBLE.match(low)
    low = low[m.end():] if m else low
    m = _REPORTS.match(low)
    return bool(_ABOUT.match(low[m.end():] if m else low))


def non_answer(answer: str, question: str) -> bool:
    """An answer that names nothing beyond the question (a restatement, "The document above contains the
    answer to the question."), tells about the document instead of answering ("The document provides a detailed
    description of ..."; "The document mentions that ..." reports an answer and is one), or asks a question back
    ("Question: What is ...?")."""
    text = answer.strip()
    low = text.lower()
    return (not new_words(text, question) or text.endswith("?") or low.startswith("question:")
            or _about_document(low))


def _sentences(found: list[retrieve.Found], texts: list[str]) -> list[tuple[float, int]]:
    """(weight, unit) of the sentences to look for spans in: each passage's top unit (with the unit after it when
    it ends with a colon: "issue the following command:" | "$ git bisect reset"), then its other units and its
    part's heading (a little less), passages weighted by their score relative to the best."""
    if not found:
        return []
    best = max(found[0].score, 1e-9)
    out = []
    for f in found:
        w = f.score / best
        out.append((w, f.top))
        after = [u for u in f.units if u > f.top and texts[u].strip()][:1]
        led = set(after) if texts[f.top].rstrip().endswith(":") else set()
        out += [(w if u in led else w - 0.5, u) for u in f.units if u != f.top]
        if f.heading is not None:  # the part's heading: "Noteworthy changes in release 8.26"
            out.append((w - 0.5, f.heading))
    return out


_IDENT = re.compile(r"[A-Za-z0-9][\w.\-/:@+]*[A-Za-z0-9]")  # a word, number or identifier, punctuation inside
NEAR = 0.8  # an identifier miscopied: its passage's token at least this alike (difflib's ratio) stands for it


def completed(written: str, text: str) -> str:
    """`written` with each identifier the model cut short or miscopied written as its passages (`text`) hold it: a
    token of at least 6 characters with a digit, "-" or "_" that `text` does not hold as a token but begins
    exactly one longer token of ("79fd3d1d-6" → "79fd3d1d-681e-4af2-b209-9f3a51745e1f"; a small model copies the
    head of a long identifier), else one with a letter (not a number alone) that is like one token of `text`
    more than any other, at least NEAR alike ("778b888-df7d-4c6a" → "dc778b88-df7d-4c6a": a character dropped
    or doubled)."""
    held = set(_IDENT.findall(text))
    for t in dict.fromkeys(_IDENT.findall(written)):
        if len(t) < 6 or t in held or not re.search(r"[\d_-]", t):
            continue
        longer = {h for h in held if len(h) > len(t) and h.startswith(t)}
        whole = longer.pop() if len(longer) == 1 else None if longer else _nearest(t, held)  # two heads: neither
        if whole:  # (a head cut at a hyphen keeps it: "5e0a9c31-7b2d-")
            cut = "-?" if whole[len(t):len(t) + 1] == "-" else ""
            written = re.sub(rf"(?<![\w.]){re.escape(t)}{cut}(?![\w-])", whole, written)
    return written


def _nearest(token: str, held: set[str]) -> str | None:
    """The token of `held` most like `token` (an identifier with a letter and a digit, "-" or "_"; not a number,
    which a small change makes another number), when at least NEAR alike and more than any other."""
    if not re.search(r"[A-Za-z]", token):
        return None
    alike = sorted(((SequenceMatcher(None, token, h).ratio(), h) for h in held
                    if abs(len(h) - len(token)) <= 3 and re.search(r"[A-Za-z]", h) and re.search(r"[\d_-]", h)),
                   reverse=True)
    if not alike or alike[0][0] < NEAR or (len(alike) > 1 and alike[1][0] == alike[0][0]):
        return None
    return alike[0][1]


def _text(units: set[int], texts: list[str]) -> str:
    """The text of `units` in document order: units in a row joined as they stand (a word may be cut between
    them), others with a space."""
    out = []
    for i, u in enumerate(sorted(units)):
        out.append(texts[u] if i == 0 or u - 1 in units else " " + texts[u])
    return "".join(out)


def decide(question: str, written: str, found: list[retrieve.Found], texts: list[str]
           ) -> tuple[str, str, int | None, list[str]]:
    """(how, short, unit, unsupported): keep the model's answer ("written"), take a span of the passages
    ("extracted"), quote the best sentence ("quoted") or say the document does not seem to say it ("not-said");
    `unit` is the sentence a span or quote comes from, `unsupported` what the model named that its passages do
    not contain. No passage found: the answer was written from nothing the document says, "not-said"."""
    if not found:
        return "not-said", "", None, honesty.unsupported(written, question, "")
    want = spans.wanted(question)
    sents = _sentences(found, texts)
    held = _text({u for _, u in sents}, texts)
    written = completed(written, held)
    invented = honesty.unsupported(written, question, held)
    bound = binding(question, texts, found)
    if bound is not None:  # a value asked of a name the document binds ("#define CHUNK 16384"): that value
        value, unit = bound
        if spans.contains(written, value) and not invented and any(u == unit for _, u in sents):
            return "written", written, None, []
        return "extracted", value, unit, []  # (with its line as the evidence, where the passages lack it)
    cands = _candidates(want, question, sents, texts, held)  # (score, span, unit), best first
    best = cands[0] if cands else None
    strong = best is not None and best[1].score >= STRONG
    own = [c for c in cands if spans.contains(written, c[1].text)]  # the spans the model's answer names
    if invented or honesty.refused(written):  # the model named what its passages lack, or said they lack it
        if strong:
            return "extracted", best[1].text, best[2], invented
        # a specific the passage holds only as part of, or a little unlike, one of its spans ("7" of "7:45"):
        # that span
        near = [c for c in cands if any(_near(x, c[1].text) for x in invented)]
        if near:
            return "extracted", near[0][1].text, near[0][2], invented
        if invented and not (want.kinds and want.kinds[0] in SPECIFIC):
            # a question after a description, not a value ("What does exit code 23 mean?"): the passage's best
            # sentence, quoted; one after a number, date or version the passage lacks is not answered
            return (*quoted(question, found, texts), invented)
        agreed = [c for c in own if want.kinds and c[1].kind == want.kinds[0]] if invented else []
        if agreed and agreed[0][0] >= best[0] - MARGIN and not any(_attached(written, agreed[0][1].text, x)
                                                                   for x in invented):
            # the answer names the span asked for, as close as the best, and adds a claim of its own apart from
            # it ("… (1.3.12-9) was released on 2012-01-01"): the span stands, the claim does not
            return "extracted", agreed[0][1].text, agreed[0][2], []
        return "not-said", "", None, invented
    single = "\n" not in written.strip()  # a list's items are judged as items, not as a sentence
    if own and own[0][0] >= best[0] - MARGIN:  # the model named a span that stands as close to the question
        span, unit = own[0][1].text, own[0][2]
        rest = re.sub(r"(?<![\w-])" + re.escape(span) + r"(?![\w])", " ", written)
        if single and support(rest, question, _text(set(found[0].units) | {unit}, texts)) < SUPPORTED:
            return "extracted", span, unit, []  # what it adds to the span its passage lacks ("a renowned expert")
        return "written", written, None, []
    if non_answer(written, question):  # the passage's strong span, else its best sentence
        if strong:
            return "extracted", best[1].text, best[2], []
        return _quote_for(question, want, found, texts)
    if best is not None and (own or (strong and best[1].kind in SPECIFIC)):
        return "extracted", best[1].text, best[2], []  # a weaker span than the best, or none where one stands out
    if _asks_value(want) and not spans.spans(written, want, question):
        # a value or a person asked for, a sentence naming none of its kind written: the passage's strong span
        return ("extracted", best[1].text, best[2], []) if strong else _quote_for(question, want, found, texts)
    if found and single and support(written, question, _text(set(found[0].units), texts)) < SUPPORTED:
        return _quote_for(question, want, found, texts)  # the sentence strays from its passage
    return "written", written, None, []


def _candidates(want: spans.Want, question: str, sents: list[tuple[float, int]], texts: list[str], held: str = ""
                ) -> list[tuple[float, spans.Span, int]]:
    """(score, span, unit) of every span of the kinds `want` asks for in the units `sents` ((weight, unit)),
    best first. An option heading its line is read with its description (the lines under it, `_described`),
    weighed as the most of its own unit's and theirs: where a man page's description line is what the question
    matches, the option it describes ("-w[EXT], --write-back[=EXT]" | "rewrite files in place"), not one of a
    neighbouring line. A span a unit boundary cut (a long sentence is cut into units, perhaps inside a UUID) is
    written whole from `held`, the units' text (`completed`)."""
    if not want.typed:
        return []
    weight: dict[int, float] = {}
    for w, u in sents:
        weight[u] = max(w, weight.get(u, w))
    out = []
    for u, w in weight.items():
        under = _described(texts, u) if "option" in want.kinds else []
        after = "".join(texts[j] for j in under)
        w = max([w] + [weight[j] for j in under if j in weight])
        for s in spans.spans(texts[u], want, question, after, texts[u - 1][-80:] if u else ""):
            if held and (s.start == 0 or s.stop == len(texts[u])):  # at the unit's edge: perhaps cut
                s.text = completed(s.text, held)
            out.append((s.score + w, s, u))
    out.sort(key=lambda c: -c[0])
    return out


def _described(texts: list[str], u: int, lines: int = 3) -> list[int]:
    """The units under unit `u` when its last line defines an option ("  -q, --hush, --mute"): the description
    below it, up to `lines` units with text, ending at the next line defining an option, at a heading, or after
    a blank line that follows text."""
    last = [ln for ln in texts[u].split("\n") if ln.strip()][-1:]
    if not last or not spans.option_led(last[0]):
        return []
    out: list[int] = []
    n = 0
    for j in range(u + 1, min(len(texts), u + 4 * lines)):
        t = texts[j]
        if t.strip():
            first = t.strip().split("\n")[0]
            if spans.option_led(t) or (first.isupper() and len(first.split()) <= 4) or n >= lines:
                break
            n += 1
        out.append(j)
        if n and t.endswith("\n\n"):
            break
    return out


def _near(claim: str, span: str) -> bool:
    """Whether `span` is what an answer's `claim` miscopied: it begins with it, cut at a mark ("7" of "7:45"),
    or is at least NEAR alike."""
    if span.startswith(claim) and len(span) > len(claim) and not span[len(claim)].isalnum():
        return True
    return len(claim) >= 4 and SequenceMatcher(None, claim, span).ratio() >= NEAR


VALUE = ("number", "date", "time", "version")  # kinds a sentence answers only by naming one


def _asks_value(want: spans.Want) -> bool:
    """Whether a question asks for what a sentence answers only by naming it: a number, date, time or version
    and nothing else ("How many ...", "When ...", "What is the notice period"; not "the default value", which may
    be a word such as True), or a person ("Who designed ...?")."""
    return bool(want.kinds) and (all(k in VALUE for k in want.kinds) or want.head == "owner")


def _quote_for(question: str, want: spans.Want, found: list[retrieve.Found], texts: list[str]
               ) -> tuple[str, str, int | None, list[str]]:
    """The passage's best sentence, quoted (`quoted`) — unless the question asks for a value (a number, date,
    time or version, or a person: `_asks_value`) and the sentence names none of its kind: then "not-said" (a
    sentence beside the question is no answer to "What is the notice period?")."""
    how, text, unit = quoted(question, found, texts)
    if _asks_value(want):
        lo, hi = sentence_units(texts, unit)
        if not spans.spans("".join(texts[lo:hi + 1]), want, question):
            return "not-said", "", None, []
    return how, text, unit, []


_BIND = (r"^[ \t]*#[ \t]*define[ \t]+{x}[ \t]+(\"[^\"\n]*\"|[^\s]+)[ \t]*(?:/[*/].*)?$",  # #define X 16384, X "a b"
         r"(?<![\w.]){x}[ \t]*:?=(?!=)[ \t]*((?:VAR[ \t]+)?[^\s;,]+)[ \t]*[;,]?[ \t]*(?:(?://|#|/\*|--).*)?$",  # X = 16384;
         r"(?<![\w.]){x}[ \t]+(?:is[ \t]+)?(?:set|defaults?|defined)[ \t]+(?:to|as)[ \t]+([^\s,;]+?)[.,;]?(?:\s|$)")
_VALUE_ASKED = re.compile(r"\bvalue of\b|\b(?:set|defaults?|defined|equal)\s+(?:to|as)\b|\bdefault\b"
                          r"|^what is the \w+ of\b.*\([a-z][a-z0-9]*_\w+\)")  # "What is the name of ... (X_GROUP)?"


def binding(question: str, texts: list[str], found: list[retrieve.Found]) -> tuple[str, int] | None:
    """(value, unit) when `question` asks for the value of a name it names ("What is the value of CHUNK?",
    "What is CHUNK set to?") and the document binds that name to one value ("#define CHUNK 16384", "CHUNK =
    16384;", "CHUNK is set to 16384"): looked for in every unit, not only the passages found (a name on every
    line of an example ranks its definition no higher than the rest). Several values: the one in the passages
    found, else none. A value naming another name is followed to that name's (`_bound`)."""
    if not _VALUE_ASKED.search(question.lower()):
        return None
    named = re.findall(r"\bvalue of (?:the )?`?([A-Za-z_][\w.]*)", question) + \
        re.findall(r"\b(?:is|are|was) `?([A-Za-z_][\w.]*)`? (?:set|defined|equal|default)", question)
    names = [n for n in dict.fromkeys(spans.mentions(question, "ident") + re.findall(r"`([^`\s]+)`", question)
                                      + re.findall(r"\b[A-Z][A-Z0-9_]+\b", question) + named)
             if len(n) >= 2 and n.lower() not in STOPWORDS]
    units = {u for f in found for u in f.units}
    for name in names:
        got = _bound(name, texts, units)
        if got is not None:
            return got
    return None


def _bound(name: str, texts: list[str], units: set[int]) -> tuple[str, int] | None:
    """(value, unit) the document binds `name` to (`_bound_here`). A value naming another name
    ("BACKUP_PORT=$PORT", "VAR B = VAR A") is that name's, with the unit binding it, followed through at most
    assignments.MAX_HOPS names; a chain that ends in a loop or an unbound name gives the reference as written."""
    pick = _bound_here(name, texts, units)
    seen, cur = {name}, pick
    while cur is not None and len(seen) <= assignments.MAX_HOPS:
        ref = assignments.reference(cur[0])  # a value naming another name: $X, ${X}, VAR X
        if ref is None:
            return cur
        if ref in seen:
            break
        seen.add(ref)
        cur = _bound_here(ref, texts, units)
    return pick


def _bound_here(name: str, texts: list[str], units: set[int]) -> tuple[str, int] | None:
    """(value, unit) of the one value the document binds `name` to (`_BIND`); several values: the one in
    `units`, else None."""
    rx = [re.compile(p.format(x=re.escape(name)), re.M) for p in _BIND]
    got = []
    for k, t in enumerate(texts):
        if name not in t:
            continue
        for r in rx:
            m = r.search(t)
            if m:
                value = m.group(1).strip("\"'`")
                if value and value != name:
                    got.append((value, k))
                break
    if len(dict.fromkeys(v for v, _ in got)) == 1:
        return got[0]
    return next((g for g in got if g[1] in units), None)


def _attached(written: str, span: str, other: str) -> bool:
    """Whether `other` stands right against `span` in `written` (at most a few characters, no comma or semicolon
    between): part of the same claim, as "MB" of "168 MB"."""
    for m in re.finditer(re.escape(span), written):
        for n in re.finditer(re.escape(other), written):
            gap = written[m.end():n.start()] if m.end() <= n.start() else written[n.end():m.start()]
            if len(gap) <= 3 and not re.search(r"[,;]", gap):
                return True
    return False


def several(question: str, written: str, found: list[retrieve.Found], texts: list[str]
            ) -> tuple[str, str, int | None, list[str]]:
    """`decide` for a question asking for several things (written from several passages): the model's list
    stands, its items naming what the passages lack left out (honesty.supported_items) — unless each passage's top
    sentence has a strong span of the kind asked for ("One of the special magic numbers for X is: 4400417.";
    `listed`) and what would be shown misses one of them: then those spans, one per passage in their rank. Else a
    non-answer gives way to the best sentence, an answer naming what the passages lack and no list, to "does not
    seem to say"."""
    if not found:
        return "not-said", "", None, honesty.unsupported(written, question, "")
    held = _text({u for f in found for u in f.units}, texts)
    written = completed(written, held)
    invented = honesty.unsupported(written, question, held)
    kept = honesty.supported_items(written, question, held) if invented else written
    items = listed(question, found, texts)
    if len(items) >= 2 and not all(spans.contains(kept or "", t) for t in items):
        return "extracted", ", ".join(items), None, []
    if non_answer(written, question):
        return _quote_for(question, spans.wanted(question), found, texts)
    if not invented:
        return "written", written, None, []
    return ("written", kept, None, []) if kept else ("not-said", "", None, invented)


def listed(question: str, found: list[retrieve.Found], texts: list[str]) -> list[str]:
    """The best span of each passage's top sentence that has a strong one (closeness ≥ STRONG) of the kind the
    question asks for, the best passage's first; [] where the best passage has none (then the list is the
    model's)."""
    want = spans.wanted(question)
    out: list[str] = []
    for i, f in enumerate(found):
        got = spans.spans(texts[f.top], want, question) if want.typed else []
        if not got or got[0].score < STRONG:
            if i == 0:
                return []
            continue
        if got[0].text not in out:
            out.append(got[0].text)
    return out


_ABSENT_KINDS = ("version", "option", "ident")


def absent(question: str, text: str | None) -> list[str]:
    """The versions, options and identifiers `question` names that the document's `text` never does ("When was
    coreutils 9.2 released?" over a NEWS file that stops at 9.1): a question about something the document lacks
    is answered "does not seem to say", not with a near miss. An identifier counts when it is one unmistakably
    (with "_", "()", a dot or a digit inside, or in camel case; not a capitalised word or a hyphenated compound
    such as "single-line"), and is looked for as written, "()" aside ("g_key_file_to_data ()" names
    g_key_file_to_data())."""
    if not text:
        return []
    out: list[str] = []
    for kind in _ABSENT_KINDS:
        for name in spans.mentions(question, kind):
            if kind == "ident" and not _UNMISTAKABLE.search(name):
                continue
            if len(name) >= 2 and name not in out and name.removesuffix("()") not in text:
                out.append(name)
    return out


_UNMISTAKABLE = re.compile(r"_|\(\)|\w\.\w|\d|[a-z][A-Z]")


def answer(engine, prompts, question: str, sources: Sequence[tuple[str, int]], write, room: int = 1 << 62,
           judging: bool = False, read=None) -> Reply | None:
    """The reply to `question`; `write(src, ids)` has the model answer over that text (Engine.answer_over with
    the caller's decoding controls) and returns its answer; `room`: the most document tokens the answer may be
    written from; `judging`: the model judges a paraphrase's sentences (judge.judges); `read`: the read's
    RelevanceRecord when it was read with this question (`ask DOC Q`), whose best passage is shown as the last
    evidence (`with_read`). None when the document is not held whole (the caller answers from the pot as the
    paper does)."""
    worked_out = _worked_out(engine, question, sources)  # a count or a chain over the whole text
    if worked_out is not None:
        return worked_out
    many = spans.wanted(question).many
    judged = None  # the passage whose sentence the model judged to answer, where it overruled the words
    got = retrieve.passages(engine, question, sources, n=max(MANY if many else retrieve.PASSAGES, ev.MAX_PASSAGES),
                            expected=judging)
    if got is None:
        return None
    found, (d_src, seg, texts) = got.found, got.doc
    if not found:  # no unit shares a word with the question: a document of a few lines is the passage itself
        found = _whole(d_src, seg, texts, question, engine)
    elif not many and judging:  # the model judges the sentences of a paraphrase's passages
        by_words = found[0]
        found = judge.rejudge(engine.model, engine.tok, question, found, (d_src, seg, texts))
        judged = found[0] if found[0].top != by_words.top else None
    shown_as_evidence = found[:ev.MAX_PASSAGES]
    found = found if many else found[:retrieve.PASSAGES]
    shown = [f for f in found if f.score >= found[0].score / 2][:MANY] if many else found[:WRITE_FROM]
    src, ids = retrieve.context(engine, shown, (d_src, seg, texts), prompts.encode("\n\n"), room)
    written = write(src, ids)
    if many:
        how, short, unit, invented = several(question, written, shown, texts)
    else:
        how, short, unit, invented = decide(question, written, found, texts)
        if judged is not None:  # the answer must stand in the sentence the model judged to answer
            how, short, unit, invented = from_judged(question, written, judged, texts, (how, short, unit, invented))
    if unit is not None and not any(unit in f.units for f in shown_as_evidence):
        # a span found outside the passages (a name's binding): its unit is the first evidence
        own = _unit_passage(got.doc, unit, found[0].score if found else 1.0)
        if own is not None:
            shown_as_evidence = [own] + shown_as_evidence[:ev.MAX_PASSAGES - 1]
    if read is not None and not many:
        shown_as_evidence = with_read(engine, read, shown_as_evidence, got, sources, unit)
    proof = evidence(engine, shown_as_evidence, (d_src, seg, texts), sources, unit)
    missing = absent(question, honesty.document_text(engine))
    if missing:  # the question asks about a version, option or identifier the document never names
        how, invented = "not-said", missing
    if how == "not-said":
        return Reply(honesty.NOT_SAID, how, "", written, unsupported=invented, evidence=proof)
    if unit is None:
        return Reply(short, how, short, written, evidence=proof)
    lo, hi = quote_units(texts, unit) if how == "quoted" else sentence_units(texts, unit)
    pos = d_src[(seg >= lo) & (seg <= hi)]
    start = int(pos.min()) if pos.numel() else 0
    source, where = ev.locate(engine, start, sources)
    sentence = "".join(texts[lo:hi + 1])
    if how == "quoted":
        short = " ".join(sentence.split())
    if "line" in where:  # the unit may start with the line break before its first word
        where["line"] += len(sentence) - len(sentence.lstrip("\n"))
    label = " · ".join(x for x in (source.rsplit("/", 1)[-1], ev.where_label(where)) if x)
    quote = {"text": " ".join(sentence.split()), "source": source, **where}
    return Reply(quote_line(short, how, sentence, label), how, short, written, quote, evidence=proof)


def _unit_passage(doc: tuple, unit: int, score: float) -> retrieve.Found | None:
    """A passage of the one unit `unit` of the document's units `doc` (src, seg, texts), scored `score`: the
    evidence of an answer found outside the ranked passages; None for a unit of no tokens."""
    d_src, seg, _ = doc
    pos = d_src[seg == unit]
    if not pos.numel():
        return None
    return retrieve.Found(int(pos.min()), int(pos.max()) + 1, [unit], unit, score)


def _worked_out(engine, question: str, sources: Sequence[tuple[str, int]]) -> Reply | None:
    """The reply to a question over the whole text that no passage answers, worked out from the document as read:
    the words that occur most and how often one occurs (counts.py), the names a value is assigned to
    (assignments.py); its evidence, the passage where the first word or the term stands, or where the first name
    is assigned. None: not such a question, none found, or the document is not held whole as text."""
    n = counts.wanted(question)
    term = counts.occurrences(question) if n is None else None
    value = assignments.asked(question) if n is None and term is None else None
    if n is None and term is None and value is None:
        return None
    text = honesty.document_text(engine)
    doc = ev.document_units(engine) if text is not None else None  # (cached: the passages' own units)
    if doc is None:
        return None
    word = r"(?<![^\W\d_]){}(?![^\W\d_])"
    if n is not None:
        top = counts.most_common(text, n)
        line = counts.answer_line(top)
        anchor = re.compile(word.format(re.escape(top[0][0])), re.I) if top else None
    elif term is not None:
        anchor = counts.pattern(term[0])
        line = counts.occurrence_line(term[0], anchor, text, term[1])
        if not anchor.search(text):  # none: the count is the answer, and no passage shows it
            return Reply(line, "extracted", line, "", evidence=[])
    else:
        names = [name for name, _ in assignments.holding(text, value)]
        line = ", ".join(names)
        anchor = re.compile(r"(?<![\w.])" + re.escape(names[0]) + r"\s*:?=") if names else None
    if anchor is None:
        return None
    unit = next((k for k, t in enumerate(doc[2]) if anchor.search(t)), None)
    own = _unit_passage(doc, unit, 1.0) if unit is not None else None
    proof = evidence(engine, [own], doc, sources, unit) if own is not None else []
    return Reply(line, "extracted", line, "", evidence=proof)


def with_read(engine, read, shown: list[retrieve.Found], ranked: retrieve.Passages,
              sources: Sequence[tuple[str, int]], unit: int | None) -> list[retrieve.Found]:
    """The evidence `shown` (best first) with its last place given to the read's own best passage: the units the
    question's attention scored highest while the document streamed through the pot (`read`: the read's
    RelevanceRecord, CaP-Q §3.3.1; each unit its tokens' mean record; InfiniRetri's finding, inside the CCD
    loop), widened as the words' passages are and overlapping none of those kept; `ranked`: the words' passages
    as `retrieve.passages` found them, whose ranking names its words score. Measured: the words' last
    passage almost never holds an answer the others lack, and the read's best holds paraphrases' answers the words
    miss (docs/results/model-retrieval.md). `shown` as it is when the read scored nothing or when its last passage
    holds the answer's unit (Session.ask passes a record only to the question the read was scored with)."""
    if getattr(read, "question", None) is None or not shown:
        return shown
    keep = shown if len(shown) < ev.MAX_PASSAGES else shown[:ev.MAX_PASSAGES - 1]
    if unit is not None and not any(unit in f.units for f in keep):
        return shown
    d_src, seg, texts = ranked.doc
    by_read = read.units(d_src, seg, len(texts), engine.tokens_read)          # (K,)
    if by_read is None or ranked.words is None:
        return shown
    got = retrieve.grouped(engine, ranked.doc, by_read, sources, 1, ranked.heading,
                           skip={u for f in keep for u in f.units})
    if not got:
        return shown
    f = got[0]
    return keep + [dataclasses.replace(f, score=float(ranked.words[f.top]), words=None, read=f.score)]


def from_judged(question: str, written: str, judged: retrieve.Found, texts: list[str], decided: tuple
                ) -> tuple[str, str, int | None, list[str]]:
    """The answer decided (`decide`) over the sentence the model judged to answer alone (`judged`: its top unit):
    the written answer where it stands in that sentence, else a span of it of the kind asked for, else the
    sentence quoted; `decided` (over all the passages) where that sentence answers nothing of the kind asked."""
    lo, hi = sentence_units(texts, judged.top)
    one = retrieve.Found(judged.start, judged.stop, list(range(lo, hi + 1)), judged.top, judged.score, None,
                         judged.core)
    how, short, unit, invented = decide(question, written, [one], texts)
    if how == "not-said":
        return decided
    return how, short, unit, invented


WHOLE = 2 * retrieve.WIDTH  # a document of at most this many tokens is its own passage when no unit matches


def _whole(d_src, seg, texts: list[str], question: str, engine) -> list[retrieve.Found]:
    """The whole document as one passage, when it is short (at most WHOLE tokens read) and no unit shares a word
    with the question ("What is the answer?" — every word of it common — over "deep text: the answer is 42"):
    its top unit the one sharing most of the question's words, common ones included; [] for a longer document
    (nothing found is nothing to answer from)."""
    if not d_src.numel() or engine.tokens_read > WHOLE or not any(t.strip() for t in texts):
        return []
    asked = set(words(question))
    top = max((k for k, t in enumerate(texts) if t.strip()), key=lambda k: len(asked & set(words(texts[k]))))
    units = [k for k in range(len(texts))]
    start, stop = int(d_src.min()), int(d_src.max()) + 1
    return [retrieve.Found(start, stop, units, top, 1.0, None, (start, stop))]


def evidence(engine, found: list[retrieve.Found], doc: tuple, sources: Sequence[tuple[str, int]],
             unit: int | None = None) -> list:
    """The passages found for the question as the answer's evidence (evidence.Passage, at most MAX_PASSAGES,
    at most MAX_WORDS words in all, headings and the "…" of a cut counted): the one holding the span or sentence
    shown (`unit`) first, else the best, with twice the words of each other (64 and 32: a long sentence's
    neighbour, where the answer often is, still fits); each its top unit widened in the document to its words
    (evidence.Neighbours: the units after and before it alternately, within its part, none another passage
    shows; "--max-ppsize=N" comes with "Currently the maximum value accepted is 100000." four lines below),
    after its part's heading when that stands apart ("Noteworthy changes in release 8.26 … b2sum is added"),
    cut to its words around the sentence that holds the answer (`unit`'s, else the passage's core: its top unit
    and a unit either side), located at its first word shown."""
    d_src, seg, texts = doc
    order = sorted(found, key=lambda f: unit is None or unit not in f.units)  # stable: the rest keep their rank
    share = ev.MAX_WORDS // (ev.MAX_PASSAGES + 1)
    near = ev.Neighbours(d_src, seg, texts, ev.part_starts(engine.provenance, sources))
    shown: set[int] = set()
    left = ev.MAX_WORDS
    out = []
    for f in order:
        if f.top in shown:  # an earlier passage, widened, shows it already
            continue
        per = min(2 * share if not out else share, left)
        if per < MIN_PASSAGE_WORDS:
            break
        head = _heading(texts, near, f.heading, f.top, per)
        units = near.widen(f.top, per - (count_words(head) + 1 if head else 0), shown)
        # with its core whole (a long unit widens no further: "-i, --spool=N" before it) and the answer's unit
        want = [u for u in f.units if f.core and f.core[0] <= near.first[u] and near.last[u] < f.core[1]]
        want += [unit] if unit in f.units else []
        lo, hi = units[0], units[-1]
        while want and lo > min(want) and lo - 1 not in shown and near.joins(lo - 1, lo):
            lo -= 1
        while want and hi < max(want) and hi + 1 not in shown and near.joins(hi, hi + 1):
            hi += 1
        units = list(range(lo, hi + 1))
        if head and head_unit(texts, near, f.heading, f.top) in units:
            head = ""  # the passage shows its heading itself
        shown.update(units)
        pos = d_src[(seg >= units[0]) & (seg <= units[-1])]
        a, b = int(pos.min()), int(pos.max()) + 1
        ids = ev.document_tokens(engine, a, b)
        whole = engine.tok.decode(ids, skip_special_tokens=True) if ids else "".join(texts[u] for u in units)

        def at(p: int) -> int:  # the character offset in `whole` of document position p (a <= p <= b)
            p = min(max(p, a), b)
            return len(engine.tok.decode(ids[:p - a], skip_special_tokens=True)) if ids else \
                sum(len(texts[u]) for u in units if near.last[u] < p)

        cuts = {u: at(near.first[u]) for u in units}
        keep = []
        if unit is not None and unit in units:  # the sentence the answer was taken from, then its unit
            lo, hi = sentence_units(texts, unit)
            keep = [(at(near.first[lo]), at(near.last[hi] + 1)), (cuts[unit], at(near.last[unit] + 1))]
        else:
            keep = [(at(f.core[0]), at(f.core[1]))] if f.core else []
            keep.append((cuts[f.top], at(near.last[f.top] + 1)))
        room = per - (count_words(head) + 1 if head else 0)
        text, off = ev.clip_to(whole, room, [(x, y) for x, y in keep if y > x], sorted(cuts.values()), lead=not head)
        if head:
            text = f"{head} {ev.ELLIPSIS} {text}"
        first = max((u for u in units if cuts[u] <= off), key=lambda u: cuts[u], default=units[0])
        start = a if first == units[0] else near.first[first]
        source, where = ev.locate(engine, start, sources)
        if "line" in where:  # the line of the first word shown (its unit may start with the line break before it)
            where["line"] += whole[cuts[first]:off].count("\n")
        left -= count_words(text)
        out.append(ev.Passage(text=text, start=start, stop=b, source=source, where=where, judged=f.judged,
                              score=f.score if f.words is None else f.words, read=f.read,
                              expected=f.expected))  # own scores, shown
    return out


MIN_PASSAGE_WORDS = 8    # evidence: a passage gets at least this many words, or is not shown
HEADING_SHARE = 4        # a part's heading shown before a passage takes at most 1/4 of its words


def head_unit(texts: list[str], near: ev.Neighbours, heading: int | None, top: int) -> int | None:
    """The unit of a passage's part heading (`heading`: retrieve.Found.heading; the unit where the part begins,
    which may be the blank line before its title: "\\n" then "Summary\\n"), its first unit with text in the part
    of the passage's top unit `top`; None when there is none."""
    if heading is None:
        return None
    k = heading
    while k < near.K and k <= top and near.part[k] == near.part[top] and not texts[k].strip():
        k += 1
    return k if k < near.K and k <= top and texts[k].strip() and near.part[k] == near.part[top] else None


def _heading(texts: list[str], near: ev.Neighbours, heading: int | None, top: int, per: int) -> str:
    """The text of a passage's part heading as shown before it, on one line, at most per / HEADING_SHARE words
    (the " … " after it marks a cut); "" when there is none (never an empty heading)."""
    k = head_unit(texts, near, heading, top)
    if k is None or k == top:
        return ""
    text = ev.clip_to(texts[k], max(1, per // HEADING_SHARE))[0].removesuffix(f" {ev.ELLIPSIS}")
    return "" if text == ev.ELLIPSIS else text
