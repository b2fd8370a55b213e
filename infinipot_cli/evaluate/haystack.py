"""Haystacks for the needle test: endless streams of text, cut into tokens lazily.

A haystack is an iterator of *units* — short strings (about a sentence each, carrying their own leading
space or paragraph break) that can be tokenized on their own and concatenated. Three sources, chosen by
`haystack_units(spec, seed)` (the bench's `--haystack`):

  builtin_units(seed)        (default, "builtin") varied, natural-ish prose generated deterministically from
                             a seed: a dozen topics, two dozen sentence templates, word lists per topic
  python_docs_units(seed)    ("python-docs") real prose that every Python installation carries: the Python
                             language reference's topics (``pydoc_data.topics``, ~465 KB of English text),
                             starting at a topic chosen by the seed and repeated as needed
  file_units(path, seed)     any text file (real prose: a novel, a report), read in blocks (never whole) from
                             an offset chosen by the seed, wrapping around as often as needed

`token_pieces` turns a unit stream into token-id pieces of about `piece` tokens whose total is exactly
`length`, with the needle's tokens inserted at a sentence boundary `depth` of the way through (by token
count, as in Kamradt's test). Nothing holds more than one piece in memory, so a 1M-token haystack costs
no more memory than a 4K one.
"""

from __future__ import annotations

import io
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import UsageError

# ---- the built-in haystack --------------------------------------------------------------------------

# Per topic: places, people/things that act (agents), things (objects), actions (verbs, 3rd person),
# qualities (adjectives), and a few abstract nouns (ideas).
TOPICS: dict[str, dict[str, list[str]]] = {
    "gardening": {
        "places": ["the walled garden", "the allotment by the river", "the greenhouse", "the herb bed", "the orchard"],
        "agents": ["the gardener", "an old neighbour", "the head grower", "a volunteer", "my aunt"],
        "objects": ["the tomato seedlings", "a row of leeks", "the compost heap", "the climbing roses",
                    "a basket of runner beans", "the pear trees", "the rain barrel"],
        "verbs": ["waters", "prunes", "mulches", "checks on", "ties up", "harvests", "divides"],
        "adjs": ["sheltered", "damp", "crowded", "sunny", "overgrown", "tidy"],
        "ideas": ["patience", "the soil", "the changing seasons", "good drainage", "slugs"],
    },
    "astronomy": {
        "places": ["the hilltop observatory", "the dark field outside town", "the rooftop", "the planetarium"],
        "agents": ["the amateur astronomer", "a retired physicist", "the club secretary", "a curious student"],
        "objects": ["the reflecting telescope", "a star chart", "the faint galaxy", "the ringed planet",
                    "a meteor shower", "the lunar craters", "the old logbook"],
        "verbs": ["observes", "sketches", "photographs", "catalogues", "waits for", "points the lens at"],
        "adjs": ["cloudless", "freezing", "quiet", "moonlit", "hazy", "patient"],
        "ideas": ["light pollution", "the slow turn of the sky", "careful notes", "the weather forecast"],
    },
    "cooking": {
        "places": ["the small kitchen", "the market stall", "the bakery on the corner", "the village hall"],
        "agents": ["the cook", "a baker", "the apprentice", "my grandfather", "the restaurant owner"],
        "objects": ["a pot of lentil soup", "the sourdough starter", "a tray of roasted vegetables",
                    "the cast iron pan", "fresh pasta", "a jar of pickled onions", "the spice drawer"],
        "verbs": ["stirs", "kneads", "tastes", "seasons", "slices", "slowly simmers", "sets aside"],
        "adjs": ["warm", "fragrant", "busy", "steamy", "cramped", "cheerful"],
        "ideas": ["timing", "good ingredients", "a sharp knife", "family recipes", "practice"],
    },
    "sailing": {
        "places": ["the harbour", "the narrow channel", "the open bay", "the boatyard", "the old jetty"],
        "agents": ["the skipper", "a deckhand", "the harbour master", "the crew", "an instructor"],
        "objects": ["the mainsail", "a coil of rope", "the tiller", "the wooden dinghy", "the tide table",
                    "a brass compass", "the anchor chain"],
        "verbs": ["hoists", "trims", "repairs", "checks", "coils", "studies", "lowers"],
        "adjs": ["choppy", "calm", "windswept", "grey", "crowded", "bright"],
        "ideas": ["the tides", "a steady wind", "knots", "the weather", "seamanship"],
    },
    "railways": {
        "places": ["the branch line", "the signal box", "the junction", "the engine shed", "the platform"],
        "agents": ["the signalman", "the driver", "a station porter", "the ticket clerk", "a railway historian"],
        "objects": ["the steam locomotive", "the timetable", "a goods wagon", "the level crossing",
                    "the points lever", "the old carriage", "a lamp"],
        "verbs": ["inspects", "oils", "polishes", "switches", "records", "waves at", "restores"],
        "adjs": ["sooty", "punctual", "deserted", "noisy", "draughty", "orderly"],
        "ideas": ["the schedule", "safety", "coal", "the long gradient", "the history of the line"],
    },
    "bees": {
        "places": ["the apiary", "the clover meadow", "the lime avenue", "the honey shed"],
        "agents": ["the beekeeper", "a neighbour", "the new queen", "the worker bees", "the honey judge"],
        "objects": ["the hive", "a frame of capped honey", "the smoker", "the swarm", "a jar of heather honey",
                    "the wax foundation", "the veil"],
        "verbs": ["inspects", "lifts", "calms", "feeds", "extracts", "labels", "moves"],
        "adjs": ["humming", "golden", "warm", "sticky", "busy", "fragrant"],
        "ideas": ["the nectar flow", "swarming", "a mild winter", "varroa mites", "forage"],
    },
    "libraries": {
        "places": ["the reading room", "the town library", "the archive basement", "the map room"],
        "agents": ["the librarian", "a visiting scholar", "the archivist", "a schoolboy", "the bookbinder"],
        "objects": ["a box of old letters", "the card catalogue", "a worn atlas", "the parish records",
                    "a rare pamphlet", "the returns trolley", "the leather ledger"],
        "verbs": ["sorts", "repairs", "reads", "catalogues", "shelves", "copies out", "searches"],
        "adjs": ["hushed", "dusty", "orderly", "dim", "crowded", "cool"],
        "ideas": ["memory", "careful handling", "local history", "silence", "the index"],
    },
    "mountains": {
        "places": ["the upper valley", "the ridge path", "the mountain hut", "the scree slope", "the pass"],
        "agents": ["the guide", "a walker", "the hut warden", "two climbers", "a shepherd"],
        "objects": ["the map", "a heavy rucksack", "the cairn", "the frozen stream", "a flask of tea",
                    "the summit", "the rope"],
        "verbs": ["climbs toward", "rests beside", "follows", "crosses", "photographs", "packs"],
        "adjs": ["steep", "misty", "rocky", "windy", "silent", "high"],
        "ideas": ["altitude", "the changing light", "a slow pace", "good boots", "the descent"],
    },
    "pottery": {
        "places": ["the studio", "the kiln shed", "the craft fair", "the clay pit"],
        "agents": ["the potter", "a student", "the glaze maker", "the studio manager", "a collector"],
        "objects": ["the wheel", "a lump of stoneware clay", "the glaze bucket", "a tall vase",
                    "the wood-fired kiln", "a set of bowls", "the trimming tool"],
        "verbs": ["throws", "trims", "glazes", "fires", "wedges", "inspects", "wraps"],
        "adjs": ["dusty", "warm", "cluttered", "bright", "quiet", "muddy"],
        "ideas": ["centering", "the firing", "glaze chemistry", "a steady hand", "cracks"],
    },
    "weather": {
        "places": ["the coast", "the weather station", "the flat fields", "the hill farm", "the town square"],
        "agents": ["the forecaster", "a farmer", "the fishermen", "a weather watcher", "the children"],
        "objects": ["the barometer", "a bank of clouds", "the rain gauge", "the first frost",
                    "a sudden squall", "the wind vane", "the morning fog"],
        "verbs": ["watches", "measures", "records", "waits out", "describes", "predicts"],
        "adjs": ["damp", "blustery", "mild", "overcast", "crisp", "humid"],
        "ideas": ["pressure", "the jet stream", "old sayings", "the long drought", "forecasts"],
    },
    "markets": {
        "places": ["the covered market", "the fish quay", "the square", "the flower stall", "the cheese shop"],
        "agents": ["the stallholder", "a regular customer", "the market inspector", "a fishmonger", "the florist"],
        "objects": ["a crate of apples", "the scales", "the striped awning", "a wheel of cheese",
                    "the chalkboard prices", "a bunch of tulips", "the cash tin"],
        "verbs": ["arranges", "weighs", "sells", "unloads", "bargains over", "wraps"],
        "adjs": ["noisy", "colourful", "early", "crowded", "busy", "wet"],
        "ideas": ["good prices", "the regulars", "freshness", "the early start", "trust"],
    },
    "music": {
        "places": ["the rehearsal room", "the chapel", "the bandstand", "the music shop", "the concert hall"],
        "agents": ["the conductor", "a violinist", "the choir", "the piano tuner", "a young composer"],
        "objects": ["the old piano", "a folder of scores", "the cello", "a brass band", "the metronome",
                    "the tuning fork", "a hymn book"],
        "verbs": ["tunes", "rehearses", "practises", "plays", "repairs", "listens to"],
        "adjs": ["echoing", "warm", "nervous", "hushed", "lively", "bright"],
        "ideas": ["rhythm", "harmony", "the long practice", "a steady tempo", "the audience"],
    },
}

TIMES = ["In the early morning", "Later that afternoon", "Every spring", "On most evenings", "Last winter",
         "After the long summer", "Before dawn", "Once a week", "During the holidays", "Over the years",
         "At the end of the season", "On rainy days"]
CONNECT = ["Still", "Even so", "Of course", "In fact", "As a rule", "Sometimes", "Now and then", "Naturally"]

# Slots: {Agent}/{agent}, {object}, {object2}, {place}, {verb}, {adj}, {idea}, {idea2}, {Time}, {Connect}
TEMPLATES = [
    "{Agent} {verb} {object} in {place}.",
    "{Time}, {agent} {verb} {object} before anyone else arrives.",
    "In {place}, everything depends on {idea}.",
    "{Agent} often says that {idea} matters more than {idea2}.",
    "{Connect}, {place} is {adj} at this time of year.",
    "Nobody remembers exactly when {object} first appeared in {place}.",
    "{Time}, {place} felt {adj}, and {agent} was glad of it.",
    "It is said that {agent} once spent a whole day with {object}.",
    "{Connect}, {object} needs attention, and {agent} knows it.",
    "There is a story about {object}, though few people believe it.",
    "Visitors to {place} usually notice {object} first.",
    "{Agent} keeps a notebook about {idea}, filled with small observations.",
    "The trouble with {idea} is that it never stays the same for long.",
    "{Time}, {agent} {verb} {object} and then {verb2} {object2}.",
    "If you ask {agent} about {idea}, expect a long answer.",
    "{Place} is {adj}, and {object} sits where it always has.",
    "Most people who come to {place} stay longer than they planned.",
    "{Agent} learned about {idea} from an older friend, many years ago.",
    "It takes time to understand {idea}, and even longer to explain it.",
    "{Connect}, {agent} prefers {place} when it is {adj}.",
    "Some say {object} is the heart of {place}; others disagree.",
    "{Time}, the talk in {place} turned to {idea}.",
    "Without {idea}, {agent} would hardly know where to begin.",
    "{Agent} {verb} {object} slowly, as if there were no hurry at all.",
    "Why {object} matters so much to {agent} is hard to say.",
    "A small sign near {place} mentions {idea}, but the letters have faded.",
]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _sentence(rng: random.Random, topic: dict[str, list[str]]) -> str:
    objs = rng.sample(topic["objects"], 2)
    ideas = rng.sample(topic["ideas"], 2)
    verbs = rng.sample(topic["verbs"], 2)
    agent = rng.choice(topic["agents"])
    place = rng.choice(topic["places"])
    tpl = rng.choice(TEMPLATES)
    return tpl.format(Agent=_cap(agent), agent=agent, object=objs[0], object2=objs[1], place=place, Place=_cap(place),
                      verb=verbs[0], verb2=verbs[1], adj=rng.choice(topic["adjs"]), idea=ideas[0], idea2=ideas[1],
                      Time=rng.choice(TIMES), Connect=rng.choice(CONNECT))


def builtin_units(seed: int | str = 0) -> Iterator[str]:
    """Endless varied prose: paragraphs of 3-7 sentences on one topic, topics changing every 1-3 paragraphs.

    Deterministic for a given seed. Each unit is one sentence with its separator in front (" " inside a
    paragraph, "\\n\\n" between paragraphs), so units tokenize independently.
    """
    rng = random.Random(f"haystack:{seed}")
    names = list(TOPICS)
    first = True
    while True:
        topic = TOPICS[rng.choice(names)]
        for _ in range(rng.randint(1, 3)):
            for i in range(rng.randint(3, 7)):
                sep = "" if first else ("\n\n" if i == 0 else " ")
                first = False
                yield sep + _sentence(rng, topic)


# ---- a file haystack ----------------------------------------------------------------------------------

_SENT_END = re.compile(r"(?<=[.!?])(?=\s)|(?=\n\s*\n)")
BLOCK_CHARS = 1 << 16
MAX_UNIT = 600  # characters; longer runs without sentence ends are split at whitespace


def _split_units(text: str) -> list[str]:
    out = []
    for part in _SENT_END.split(text):
        while len(part) > MAX_UNIT:
            cut = part.rfind(" ", 1, MAX_UNIT)
            cut = cut if cut > 0 else MAX_UNIT
            out.append(part[:cut])
            part = part[cut:]
        if part:
            out.append(part)
    return out


def _seed_fraction(seed) -> float:
    return random.Random(f"haystack-offset:{seed}").random()


def file_units(path: str | Path, seed: int | str | None = None) -> Iterator[str]:
    """Units of a text file, read in 64 KB blocks and repeated forever (a blank line between repetitions).

    With a seed, the first pass starts at a seed-chosen line (so the cells of a bench read different
    stretches of a long file); None starts at the beginning.
    """
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--haystack {path}: no such file")
    with p.open("r", encoding="utf-8", errors="replace") as f:
        if not f.read(BLOCK_CHARS).strip():
            f.seek(0)
            if not f.read().strip():
                raise UsageError(f"--haystack {path} holds no text")
    start = int(_seed_fraction(seed) * p.stat().st_size) if seed is not None else 0
    while True:
        with p.open("rb") as raw:
            if start:
                raw.seek(start)
                raw.readline()  # to the next line start: never split a UTF-8 character or a word
            start = 0
            f = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
            carry = ""
            while True:
                block = f.read(BLOCK_CHARS)
                if not block:
                    break
                text = carry + block
                cut = max(text.rfind(" "), text.rfind("\n"))  # keep a partial word for the next block
                if cut <= 0 and len(text) > 4 * BLOCK_CHARS:
                    cut = len(text)  # no whitespace at all: cut anyway, memory stays bounded
                if cut <= 0:
                    carry = text
                    continue
                carry = text[cut:]
                yield from _split_units(text[:cut])
            if carry:
                yield from _split_units(carry)
        yield "\n\n"


# ---- real prose that ships with Python ---------------------------------------------------------------------

def python_docs_units(seed: int | str = 0) -> Iterator[str]:
    """Endless real prose: the Python language reference's topics (pydoc_data.topics, in the standard
    library), from a seed-chosen topic on, wrapping around."""
    try:
        from pydoc_data.topics import topics
    except ImportError as e:  # some distributions strip it
        raise UsageError("--haystack python-docs: this Python has no pydoc_data module; give a text file") from e
    names = sorted(topics)
    first = int(_seed_fraction(seed) * len(names))
    while True:
        for name in names[first:] + names[:first]:
            yield from _split_units("\n\n" + topics[name].strip())


HAYSTACKS = {"builtin": "built-in varied prose (generated)", "python-docs": "the Python language reference (real prose)"}


def haystack_units(spec: str | None, seed: int | str) -> Iterator[str]:
    """The haystack named by `spec` (None / "builtin", "python-docs", or a text file's path), seeded."""
    if spec in (None, "", "builtin"):
        return builtin_units(seed)
    if spec == "python-docs":
        return python_docs_units(seed)
    return file_units(spec, seed)


def check_haystack(spec: str | None) -> None:
    """A usage error now (not in the middle of a bench) for a haystack that is neither a name nor a file."""
    if spec in (None, "") or spec in HAYSTACKS:
        return
    if not Path(spec).is_file():
        raise UsageError(f"--haystack {spec}: no such file (or use one of: {', '.join(HAYSTACKS)})")


# ---- tokens -------------------------------------------------------------------------------------------

@dataclass
class Placement:
    """Where the needle ended up (filled in while the pieces are generated)."""

    length: int = 0           # total tokens produced (haystack + needle)
    needle_start: int = -1    # token index of the needle's first token
    needle_tokens: int = 0
    depth_actual: float = 0.0


def _encode_batch(tokenizer, texts: list[str]) -> list[list[int]]:
    return tokenizer(texts, add_special_tokens=False)["input_ids"]


def token_pieces(units: Iterable[str], tokenizer, length: int, depth: float = 0.0,
                 needle: str | None = None, piece: int = 1024, placement: Placement | None = None,
                 batch: int = 64) -> Iterator[list[int]]:
    """Yield token-id pieces (about `piece` tokens each) totalling exactly `length` tokens.

    With a needle, its tokens start at the first unit boundary at or after `depth` * (length - needle
    tokens) haystack tokens (so depth 0 puts it first and depth 1 last). The needle is separated from the
    text before it by a space (units bring their own leading separator). Units are tokenized in small batches as they are needed.
    """
    if length <= 0:
        return
    needle_ids = _encode_batch(tokenizer, [" " + needle.strip()])[0] if needle else []
    if len(needle_ids) > length:
        raise UsageError(f"the needle ({len(needle_ids)} tokens) is longer than the haystack length {length}")
    target = round(min(max(depth, 0.0), 1.0) * (length - len(needle_ids)))
    pl = placement if placement is not None else Placement()
    pl.needle_tokens = len(needle_ids)
    hay_budget = length - len(needle_ids)
    it = iter(units)
    buf: list[int] = []
    made = 0        # tokens yielded or buffered
    hay = 0         # haystack tokens so far
    placed = not needle_ids

    def place() -> None:
        nonlocal placed, made
        pl.needle_start = made
        buf.extend(needle_ids)
        made += len(needle_ids)
        placed = True

    while made < length:
        texts = [u for _, u in zip(range(batch), it)]
        if not texts:
            raise UsageError("the haystack ran out of text")
        for ids in _encode_batch(tokenizer, texts):
            if not placed and (hay >= target or hay + len(ids) > hay_budget):
                place()  # at the target, or before the last (cut) unit so depth 1.0 ends on the needle
            take = min(len(ids), hay_budget - hay)
            buf.extend(ids[:take])
            hay += take
            made += take
            if not placed and hay >= hay_budget:
                place()
            while len(buf) >= piece:
                yield buf[:piece]
                buf = buf[piece:]
            if made >= length:
                break
    if buf:
        yield buf
    pl.length = made
    if needle_ids:
        pl.depth_actual = pl.needle_start / max(1, length - len(needle_ids))


def sample_text(units: Iterable[str], chars: int = 2000) -> str:
    """The first `chars` characters of a unit stream (for README examples and tests)."""
    out, n = [], 0
    for u in units:
        out.append(u)
        n += len(u)
        if n >= chars:
            break
    return "".join(out)[:chars]
