"""The built-in model over documents twice as long as its 8K window, read through a 2K pot.

Pass-key retrieval (Mohtashami & Jaggi 2023; InfiniPot Table 4) in low-information filler: the engine must keep
the pass-key sentence through ~15 distillation cycles. SmolLM2-135M itself rarely answers pass-key questions
even with the key in full context (measured: 1.5K-token document, full context, wrong), so the answering test
uses a name needle, which it does answer.
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


SPANS = dict(span=32, share=True, alpha=0.0)  # contiguous spans, one CaP score shared by all heads (issue 6)


def read(builtin, ids, question, cfg):
    P = Prompts(builtin.tokenizer)
    eng = Engine(builtin.model, builtin.tokenizer, cfg, catalyst_ids=P.catalyst_ids("question", question))
    eng.pin(P.header_ids())
    for i in range(0, len(ids), 1000):
        eng.feed(ids[i:i + 1000])
    eng.finish()
    return eng, P


def test_passkey_survives_every_cycle_beyond_window(builtin):
    """A 16K-token document (2x the window) through a 2K pot: the whole pass-key sentence is still held by
    every (layer, head) after 15 distillations."""
    tok = builtin.tokenizer
    key = "29571"
    ids = haystack_ids(tok, 16_000, 0.5, key)
    assert len(ids) > builtin.model.config.max_position_embeddings
    eng, _ = read(builtin, ids, "What is the pass key?", PotConfig(size=2048, keep=1024, **SPANS))
    needle = tok.encode(f" The pass key is {key}. Remember it. {key} is the pass key. ", add_special_tokens=False)
    start = next(i for i in range(len(ids)) if ids[i:i + len(needle)] == needle)
    held = ((eng.pot.src >= start) & (eng.pot.src < start + len(needle))).sum(-1)  # (L, H)
    assert eng.cycles >= 15 and eng.pot.peak_entries <= 2048
    assert int(held.min()) == len(needle)


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
    eng, P = read(builtin, ids, q, PotConfig(size=2048, keep=1024, **SPANS))
    ans = eng.answer(P.ask_ids(q, "The keeper of the Marrow Point lighthouse is named"), max_new_tokens=8,
                     stop_ids=P.stop_ids())
    assert eng.cycles >= 15 and eng.pot.peak_entries <= 2048
    assert "Ilse Brandt" in ans, ans
