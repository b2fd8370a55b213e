"""Read one `bench needle` cell into a pot, the way the bench does (shared by final_keep.py and reencode.py)."""
import time

from infinipot_cli.engine import Engine, PotConfig
from infinipot_cli.evaluate.haystack import Placement, haystack_units, token_pieces
from infinipot_cli.evaluate.needle import NeedleConfig, cell_needle
from infinipot_cli.prompts import Prompts


def read_cell(lm, length, depth, trial, spec, hay=None, seed=0, method="infinipot", lengths=None):
    """The cell's needle read with the method spec `spec` (M = 2048, C = 1024, chunk 1024); prints one line.
    `lengths`: the bench run's `-l` list (the needle kind rotates with the length's place in it; default [length]).
    Returns (engine, needle, placement, prompts, ask ids, the question's range in them)."""
    cfg = NeedleConfig(lengths=list(lengths or [length]), depths=[0.1, 0.5, 0.9], trials=max(3, trial + 1), methods=[method],
                       haystack=hay, seed=seed)
    prompts = Prompts(lm.tokenizer)
    needle = cell_needle(cfg, length, depth, trial)
    ask, ask_focus = prompts.ask(needle.question, answer_prefix=needle.answer_prefix)
    cat, cat_focus = prompts.catalyst("question", needle.question)
    pcfg = PotConfig.from_spec(spec, size=2048, keep=1024, chunk=1024)
    eng = Engine(lm.model, lm.tokenizer, pcfg, catalyst_ids=cat, catalyst_focus=cat_focus)
    pl = Placement()
    eng.pin(prompts.header_ids())
    t0 = time.perf_counter()
    for ids in token_pieces(haystack_units(hay, f"{cfg.seed}:{length}:{depth}:{trial}"), lm.tokenizer, length, depth,
                            needle.text, piece=1024, placement=pl):
        eng.feed(ids)
    eng.finish()
    print(f"read {length} in {time.perf_counter()-t0:.0f}s, pot {len(eng.pot)}; needle {needle.text!r} "
          f"expect {needle.expect!r}", flush=True)
    return eng, needle, pl, prompts, ask, ask_focus
