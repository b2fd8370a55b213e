"""The built-in model over documents twice as long as its 8K window, read through a 2K pot.

Pass-key retrieval (Mohtashami & Jaggi 2023; InfiniPot Table 4) in low-information filler: the engine must keep
the pass-key sentence through ~15 distillation cycles. SmolLM2-135M answers pass-key questions only when asked
"What is the pass key number in the document?" with the answer prefix "The pass key number in the document is":
after the paper's "The pass key is" it explains what a pass key is, even in full context (evaluate/needles.py).
"""

import random

import pytest

from infinipot_cli.engine import Engine, PotConfig
from infinipot_cli.prompts import Prompts

WORDS = ("the river ran past old stone walls while farmers talked about rain and markets and the long winter "
         "ahead of them").split()


def haystack_ids(tok, n_tokens, depth, key, seed=0):
    """Low-information filler (sentences drawn from a 21-word vocabulary) with the pass key at `depth`."""
    rng = random.Random(seed)
    needle = tok.encode(f" The pass key is {key}. Remember it. {key} is the pass key. ", add_special_tokens=False)
    ids: list[int] = []
    while len(ids) < n_tokens - len(needle):
        ids += tok.encode(" " + " ".join(rng.choice(WORDS) for _ in range(60)) + ".", add_special_tokens=False)
    ids = ids[: n_tokens - len(needle)]
    at = int(len(ids) * depth)
    return ids[:at] + needle + ids[at:]


DEFAULT = PotConfig(size=2048, keep=1024)  # our defaults: contiguous spans, one score for all heads (issue 6)
PK_QUESTION, PK_PREFIX = "What is the pass key number in the document?", "The pass key number in the document is"


def read(builtin, ids, question, cfg):
    P = Prompts(builtin.tokenizer)
    eng = Engine(builtin.model, builtin.tokenizer, cfg, catalyst_ids=P.catalyst_ids("question", question))
    eng.pin(P.header_ids())
    for i in range(0, len(ids), 1000):
        eng.feed(ids[i:i + 1000])
    eng.finish()
    return eng, P


def test_passkey_survives_every_cycle_beyond_window(builtin):
    """A 16K-token document (2x the window) through a 2K pot: after 15 distillations every (layer, head)
    still holds the pass key, and the model answers it."""
    tok = builtin.tokenizer
    key = "29571"
    ids = haystack_ids(tok, 16_000, 0.5, key)
    assert len(ids) > builtin.model.config.max_position_embeddings
    eng, P = read(builtin, ids, PK_QUESTION, DEFAULT)
    needle = tok.encode(f" The pass key is {key}. Remember it. {key} is the pass key. ", add_special_tokens=False)
    start = next(i for i in range(len(ids)) if ids[i:i + len(needle)] == needle)
    in_needle = (eng.pot.src >= start) & (eng.pot.src < start + len(needle))  # (L, H, S)
    assert eng.cycles >= 15 and eng.pot.peak_entries <= 2048
    assert (in_needle == in_needle[:1, :1]).all()  # every (layer, head) holds the same needle tokens
    kept = eng.pot.src[0, 0][in_needle[0, 0]] - start
    assert key in tok.decode([needle[i] for i in kept.tolist()])  # the key itself is held
    ans = eng.answer(P.ask_ids(PK_QUESTION, PK_PREFIX), max_new_tokens=8, stop_ids=P.stop_ids())
    assert key in ans, ans


def test_answers_a_needle_question_beyond_window(builtin):
    """The built-in model answers from a 16K-token document read through a 2K pot (15 cycles)."""
    tok = builtin.tokenizer
    rng = random.Random(1)
    needle = tok.encode(" The keeper of the Marrow Point lighthouse is named Ilse Brandt.", add_special_tokens=False)
    ids: list[int] = []
    while len(ids) < 16_000:
        ids += tok.encode(" " + " ".join(rng.choice(WORDS) for _ in range(60)) + ".", add_special_tokens=False)
    ids = ids[:8_000] + needle + ids[8_000:16_000]
    q = "What is the name of the keeper of the Marrow Point lighthouse?"
    eng, P = read(builtin, ids, q, DEFAULT)
    ans = eng.answer(P.ask_ids(q, "The keeper of the Marrow Point lighthouse is named"), max_new_tokens=8,
                     stop_ids=P.stop_ids())
    assert eng.cycles >= 15 and eng.pot.peak_entries <= 2048
    assert "Ilse Brandt" in ans, ans
