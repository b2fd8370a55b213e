"""The built-in model finds a pass key in a document ~2.5x longer than its 8K window, read through a 2K pot.

The classic pass-key retrieval test (Mohtashami & Jaggi 2023; InfiniPot Table 4): a pass key hidden in
repeated filler. The model's window is 8,192 positions; the document is ~20K tokens, so full context is
impossible, and the pot (M = 2048, C = 1024) goes through ~20 distillation cycles.
"""

import pytest

from infinipot_cli.engine import Engine, PotConfig
from infinipot_cli.prompts import Prompts

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "


def haystack_ids(tok, n_tokens, depth, key):
    unit = tok.encode(FILLER, add_special_tokens=False)
    needle = tok.encode(f"The pass key is {key}. Remember it. {key} is the pass key. ", add_special_tokens=False)
    reps = (n_tokens - len(needle)) // len(unit)
    at = int(reps * depth)
    return unit * at + needle + unit * (reps - at)


@pytest.mark.parametrize("depth,key", [(0.1, "68413"), (0.5, "29571"), (0.9, "90316")])
def test_passkey_beyond_window(builtin, depth, key):
    tok = builtin.tokenizer
    P = Prompts(tok)
    q = "What is the pass key?"
    ids = haystack_ids(tok, 20_000, depth, key)
    assert len(ids) > 2 * builtin.model.config.max_position_embeddings
    eng = Engine(builtin.model, tok, PotConfig(size=2048, keep=1024), catalyst_ids=P.catalyst_ids("question", q))
    eng.pin(P.header_ids())
    for i in range(0, len(ids), 1000):
        eng.feed(ids[i:i + 1000])
    ans = eng.answer(P.ask_ids(q, "The pass key is"), max_new_tokens=10, stop_ids=P.stop_ids())
    assert eng.pot.peak_entries <= 2048 and eng.cycles >= 15
    assert key in ans, ans
