"""The focus (scoring/focus.py): while `ask DOC Q` reads, where the question's attention has been strongest so far;
the live display and --json name it. Following it changes nothing the engine reads or keeps."""

import pytest
import torch

from infinipot_cli.cli.display import FOCUS_LABEL, Display
from infinipot_cli.pot.engine import Engine, Event, PotConfig
from infinipot_cli.pot.scoring.focus import WINDOW, Focus
from tiny_models import ARCHS, VOCAB, LetterTokenizer, make_model

HEADER = [1, 2, 3, 4]
PROMPT = [21, 22, 23, 24, 25, 26]
QUESTION = (1, 3)  # the question's rows inside the catalyst / prompt


def _read(model, focus: Focus | None, question=QUESTION, n: int = 600, events=None) -> Engine:
    eng = Engine(model, LetterTokenizer(), PotConfig(size=256, keep=128, chunk=32), catalyst_ids=PROMPT,
                 catalyst_focus=question, on_event=events.append if events is not None else None)
    eng.focus = focus
    eng.pin(HEADER)
    eng.expect(PROMPT, question)
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(30, VOCAB, (n,), generator=g).tolist()
    for part in range(0, n, 200):  # three labelled pieces, as the reader labels pages
        eng.feed(ids[part:part + 200], where=f"p. {part // 200 + 1}")
    eng.finish()
    return eng


def test_the_strongest_window_is_the_focus_and_it_only_moves_up():
    f = Focus()
    n = 4 * WINDOW
    shared = torch.zeros(n)
    shared[2 * WINDOW:3 * WINDOW] = 1.0                       # one stretch the question attends to
    src = torch.arange(n).flip(0)                               # entries in pot order, not document order
    assert f.observe(torch.cat([torch.tensor([-1]), src]), torch.cat([torch.tensor([99.0]), shared.flip(0)]))
    assert 2 * WINDOW <= f.pos < 3 * WINDOW and f.score == pytest.approx(1.0)  # the pinned header's 99 skipped
    assert not f.observe(torch.arange(n), torch.full((n,), 0.5))  # a weaker distillation leaves it
    assert 2 * WINDOW <= f.pos < 3 * WINDOW
    assert f.observe(torch.arange(3), torch.full((3,), 2.0)) and f.pos == 1  # fewer entries than a window


@pytest.mark.parametrize("arch", ARCHS)
def test_a_question_read_has_a_focus_and_reads_the_same(arch):
    model = make_model(arch)
    plain = _read(model, None)
    events: list[Event] = []
    eng = _read(model, Focus(), events=events)
    assert eng.cycles == plain.cycles > 0
    assert torch.equal(eng.pot.src, plain.pot.src) and torch.equal(eng.pot.tok, plain.pot.tok)
    assert 0 <= eng.focus.pos < eng.tokens_read and eng.focus_where in ("p. 1", "p. 2", "p. 3")
    shown = [e.focus for e in events if e.focus]
    assert shown and set(shown) <= {"p. 1", "p. 2", "p. 3"}  # (the last piece's, scored by the expected
    # prompt after the read's last event, reaches the display with the answer's first event)
    assert not any(e.focus for e in events[:3])               # nothing before the first distillation


def test_no_focus_without_a_question():
    f = Focus()
    _read(make_model("llama"), f, question=None)
    assert f.pos == -1 and f.score == float("-inf")


def test_the_live_view_names_the_focus():
    import io

    d = Display(mode="plain", stream=io.StringIO())
    ev = Event(kind="read", tokens_read=500, cycles=2, entries=200, pinned=4, distilled=128, size=256,
               where="p. 3", elapsed_s=1.0, kv_bytes=1, focus="p. 2 · Options")
    d.on_event(ev)
    assert f"{FOCUS_LABEL} p. 2 · Options" in d.progress_line()
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=120).print(d.renderable())
    assert "p. 2 · Options" in out.getvalue()
