"""Needles: the sentence hidden in the haystack, the question that asks for it and the expected answer.

Kinds (each trial draws a fresh needle from a seed, so no single needle string gets tuned for):

  passkey  "The pass key is 48213. Remember it. 48213 is the pass key."  (the paper's Table 4 / Figure 5 task)
  name     "The keeper of the Marrow Point lighthouse is named Ilse Brandt."
  fact     "The secret ingredient in the harbour café's fish stew is smoked paprika."
  year     "The Saltmarsh lighthouse was first lit in the year 1743."
  quantity "The old ferry Silver Heron carries 340 litres of fuel."  (a number with its unit)
  role     "The new head librarian of the Ostrava reading room is a woman named Ilse Brandt."  (a person by role)

The answer prefix ends the prompt (e.g. "The pass key number in the document is"), so a small model continues
with the answer instead of chatting; an answer is correct when it contains the expected words (answer_has: case, punctuation and spacing
ignored, whole words only).

The pass-key question is not the paper's "What is the pass key?" / "The pass key is": after that prefix the
built-in SmolLM2-135M defines what a pass key is ("a small wooden tool used to ...") even with the needle in
full context — measured 0 of 6 at 1.5K tokens, against 6 of 6 with the question and prefix used here (same
needle sentence, same haystacks). A bench that the model fails in full context measures nothing about the pot.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import asdict, dataclass

from ..errors import UsageError

KINDS = ["passkey", "name", "fact", "year", "quantity", "role"]


@dataclass
class Needle:
    kind: str
    text: str           # inserted into the haystack
    question: str
    expect: str         # correct = this appears in the answer (case-insensitive)
    answer_prefix: str  # appended after the question to start the answer

    def as_dict(self) -> dict:
        return asdict(self)

    def check(self, answer: str) -> bool:
        return answer_has(answer, self.expect)


def _norm_words(text: str) -> str:
    """Case, accents' composed forms, punctuation, thousands separators and runs of spaces folded away:
    "48,213." -> "48213", "Sea-Buckthorn" -> "sea buckthorn", "4  8" -> "4 8"."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"(?<=\d)[,\u202f\u00a0'](?=\d{3}\b)", "", text)
    return " ".join(re.findall(r"\w+", text))


def answer_has(answer: str, expect: str) -> bool:
    """The expected words appear in the answer as whole words, in order, ignoring case, punctuation and
    spacing ("Ilse Brandt's" has "Ilse Brandt"; "48,213" has "48213"; "17430" does not have "1743")."""
    want = _norm_words(expect)
    return bool(want) and f" {want} " in f" {_norm_words(answer)} "


FIRST = ["Ilse", "Tomasz", "Amara", "Desmond", "Ines", "Rufus", "Yara", "Casimir", "Leontine", "Oskar", "Mireille",
         "Bartholomew", "Nadia", "Fergus", "Solveig", "Emeka"]
LAST = ["Brandt", "Kowalczyk", "Okafor", "Pemberton", "Vasquez", "Thornbury", "Haddad", "Lindqvist", "Ferreira",
        "Achterberg", "Moreau", "Quill", "Nakashima", "Dunmore", "Halvorsen", "Abernathy"]
ROLES = ["keeper of the Marrow Point lighthouse", "head archivist of the Saltmarsh museum",
         "captain of the ferry Silver Heron", "founder of the Blue Finch bakery",
         "conductor of the Eastbridge town band", "warden of the Greyhollow mountain hut"]
DISHES = ["the harbour café's fish stew", "the Eastbridge summer pie", "grandmother Odile's lentil soup",
          "the mountain hut's hot chocolate", "the Blue Finch bakery's rye bread"]
INGREDIENTS = ["smoked paprika", "candied ginger", "black cardamom", "roasted chestnuts", "sour cherries",
               "dried lavender", "pickled lemon", "toasted fennel seeds", "juniper berries", "burnt honey",
               "green walnuts", "sea buckthorn", "wild garlic", "star anise"]
OBJECTS = ["the spare key to the signal box", "the old brass telescope", "the parish map of 1790",
           "the choir's lost hymn book", "the harbour master's logbook"]
HIDING = ["the blue biscuit tin", "the hollow oak stump", "the bottom drawer of the chart table",
          "the hayloft above the stables", "the clock tower stairwell", "the piano bench", "the empty beehive",
          "the coal bunker", "the umbrella stand", "the cellar behind the cider barrels"]


EVENTS = [("the Saltmarsh lighthouse", "was first lit", "When was the Saltmarsh lighthouse first lit?",
           "The Saltmarsh lighthouse was first lit in"),
          ("the Eastbridge town band", "gave its first concert", "In which year did the Eastbridge town band give its "
           "first concert?", "The Eastbridge town band gave its first concert in"),
          ("the stone bridge at Greyhollow", "was built", "When was the stone bridge at Greyhollow built?",
           "The stone bridge at Greyhollow was built in"),
          ("the Blue Finch bakery", "opened its doors", "In which year did the Blue Finch bakery open its doors?",
           "The Blue Finch bakery opened its doors in")]
AMOUNTS = [("the ferry Silver Heron", "carries", "litres of fuel", "How much fuel does the ferry Silver Heron carry?",
            "The ferry Silver Heron carries"),
           ("the Marrow Point lighthouse", "stands", "metres tall", "How tall is the Marrow Point lighthouse?",
            "The Marrow Point lighthouse stands"),
           ("the Saltmarsh museum's oldest anchor", "weighs", "kilograms", "How much does the Saltmarsh museum's "
            "oldest anchor weigh?", "The Saltmarsh museum's oldest anchor weighs"),
           ("the walk from the harbour to the mountain hut", "is", "kilometres long", "How long is the walk from "
            "the harbour to the mountain hut?", "The walk from the harbour to the mountain hut is")]
POSTS = [("head librarian", "the Ostrava reading room"), ("chief engineer", "the Eastbridge waterworks"),
         ("night nurse", "the Greyhollow cottage hospital"), ("stationmaster", "the Saltmarsh branch line"),
         ("choir director", "the harbour chapel")]


def make_needle(kind: str, seed: int | str) -> Needle:
    """A needle of `kind`, drawn deterministically from `seed`."""
    rng = random.Random(f"needle:{kind}:{seed}")
    if kind == "passkey":
        n = str(rng.randint(10000, 99999))
        return Needle(kind, f"The pass key is {n}. Remember it. {n} is the pass key.",
                      "What is the pass key number in the document?", n, "The pass key number in the document is")
    if kind == "name":
        role, name = rng.choice(ROLES), f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        return Needle(kind, f"The {role} is named {name}.", f"What is the name of the {role}?", name,
                      f"The {role} is named")
    if kind == "fact":
        if rng.random() < 0.5:
            dish, ing = rng.choice(DISHES), rng.choice(INGREDIENTS)
            return Needle(kind, f"The secret ingredient in {dish} is {ing}.",
                          f"What is the secret ingredient in {dish}?", ing, f"The secret ingredient in {dish} is")
        obj, where = rng.choice(OBJECTS), rng.choice(HIDING)
        place = where.removeprefix("the ")
        return Needle(kind, f"{obj[0].upper() + obj[1:]} is hidden in {where}.", f"Where is {obj} hidden?", place,
                      f"{obj[0].upper() + obj[1:]} is hidden in the")
    if kind == "year":
        what, verb, q, prefix = rng.choice(EVENTS)
        year = str(rng.randint(1620, 1890))
        return Needle(kind, f"{what[0].upper() + what[1:]} {verb} in the year {year}.", q, year, prefix)
    if kind == "quantity":
        what, verb, unit, q, prefix = rng.choice(AMOUNTS)
        n = str(rng.choice([rng.randint(12, 95), rng.randint(120, 980)]))
        return Needle(kind, f"{what[0].upper() + what[1:]} {verb} {n} {unit}.", q, n, prefix)
    if kind == "role":
        post, place = rng.choice(POSTS)
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        return Needle(kind, f"The new {post} of {place} is a person named {name}.",
                      f"Who is the new {post} of {place}?", name,
                      f"The new {post} of {place} is")
    raise UsageError(f"unknown needle kind {kind!r}; choose from {', '.join(KINDS)}")


def custom_needle(text: str | None, question: str | None, expect: str | None, answer_prefix: str | None) -> Needle | None:
    """The user's needle (--needle/--question/--expect[/--answer-prefix]); None when none was given."""
    given = [x is not None for x in (text, question, expect)]
    if not any(given):
        if answer_prefix is not None:
            raise UsageError("--answer-prefix goes with --needle, --question and --expect")
        return None
    if not all(given):
        raise UsageError("--needle, --question and --expect go together: give all three")
    if not text.strip() or not expect.strip():
        raise UsageError("--needle and --expect must not be empty")
    if expect.strip().lower() not in text.lower():
        raise UsageError(f"--expect {expect!r} does not appear in the --needle text")
    return Needle("custom", text.strip(), question.strip(), expect.strip(), (answer_prefix or "").strip())


def parse_kinds(spec: str) -> list[str]:
    kinds = [k.strip().lower() for k in spec.split(",") if k.strip()]
    if kinds == ["all"]:
        return list(KINDS)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise UsageError(f"--kinds: unknown needle kind {', '.join(bad) or '(none)'}; choose from {', '.join(KINDS)} or all")
    return kinds
