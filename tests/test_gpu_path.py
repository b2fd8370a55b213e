"""The GPU path, checked on the CPU: the pot's preallocated buffer, a reading loop that never reads a value on the
host off the CPU (devices.as_if_on_accelerator runs those code paths here, against the CPU's own results), the
CUDA-graph decode step's position-from-tensor arithmetic, and the prepared GPU check's smoke run. Tests that need
CUDA itself skip without it."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode

from infinipot_cli.runtime.devices import as_if_on_accelerator
from infinipot_cli.pot.engine import Engine, PotConfig
from tiny_models import VOCAB, make_model

HEADER = list(range(3, 9))
CATALYST = [20, 21, 22, 23, 24, 25, 26]
FOCUS = (3, 6)  # the question's rows inside the catalyst

HOST_READS = {"item", "tolist", "__bool__", "__int__", "__float__", "__index__", "cpu", "numpy", "nonzero", "unique",
              "masked_select", "bincount", "unique_consecutive"}
# CPU-only by construction (they return before reading anything for a tensor on an accelerator), or work on the
# host copies of the evicted positions (archive.py), which are CPU tensors on a GPU too
CPU_ONLY = {"attention.py:_plain_causal", "archive.py:_evict", "archive.py:add"}


class SentenceTok:
    """A tokenizer whose every seventh id ends a sentence."""

    def decode(self, ids, skip_special_tokens=True):
        return "".join(" w." if i % 7 == 0 else f" w{i}" for i in ids)

    def batch_decode(self, batch, skip_special_tokens=True):
        return [self.decode(x) for x in batch]


class HostReads(TorchFunctionMode):
    """Records every call that reads tensor values on the host (on CUDA: a wait for the queue) made from
    infinipot's own code, as 'file.py:function'."""

    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        bool_index = name == "__getitem__" and any(
            isinstance(a, torch.Tensor) and a.dtype == torch.bool for a in (args[1:2] if len(args) > 1 else ()))
        if name in HOST_READS or bool_index:
            f = sys._getframe(1)
            while f is not None and "infinipot_cli" not in f.f_code.co_filename:
                if "/torch/" not in f.f_code.co_filename and "test_gpu_path" not in f.f_code.co_filename:
                    f = None  # called from transformers or another library: not ours
                    break
                f = f.f_back
            if f is not None:
                where = f"{f.f_code.co_filename.rsplit('/', 1)[-1]}:{f.f_code.co_name}"
                if where not in CPU_ONLY:
                    self.seen.append(where)
        return func(*args, **kwargs)


def _doc(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(10, VOCAB, (n,), generator=g).tolist()


def _read(model, cfg, ids, focus=FOCUS, watch=False):
    eng = Engine(model, SentenceTok(), cfg, catalyst_ids=CATALYST, catalyst_focus=focus)
    eng.pin(HEADER)
    mode = HostReads() if watch else None
    if mode is not None:
        with mode:
            eng.feed(ids)
    else:
        eng.feed(ids)
    return eng, (mode.seen if mode is not None else [])


def _same_pot(a, b):
    assert a.cycles == b.cycles > 0
    assert torch.equal(a.pot.src, b.pot.src) and torch.equal(a.pot.tok, b.pot.tok)
    for x, y in zip(a.pot.cache.layers, b.pot.cache.layers):
        assert torch.equal(x.keys, y.keys) and torch.equal(x.values, y.values)
    assert torch.equal(a.archive.ids(), b.archive.ids()) and a.archive._segs == b.archive._segs


@pytest.fixture(scope="module")
def model():
    return make_model("llama3")


@pytest.mark.parametrize("segment", [48, 0])
def test_reading_reads_nothing_on_the_host_off_the_cpu(model, segment):
    """A question read (CaP-Q: scores, NuC, sentence units, selection, gather, CR-RoPE, archive) takes the
    accelerator's paths without one host read of our own, and keeps exactly what the CPU's paths keep."""
    cfg = PotConfig(size=128, keep=64, chunk=16, segment=segment, nuc_sample=False)
    ids = _doc(700)
    want, _ = _read(model, cfg, ids)
    with as_if_on_accelerator():
        got, reads = _read(model, cfg, ids, watch=True)
    assert sorted(set(reads)) == []
    _same_pot(got, want)


class NoHostReads:
    """While `armed`, any read of a tensor's values on the host raises HostRead: the Tensor methods that read
    (`item`, `tolist`, `__bool__`, `__int__`, `__float__`, `__index__`, `cpu`, `numpy`) patched, and the operations
    whose output size depends on the values (`nonzero`, `unique`, a boolean mask's index, ...) seen through a
    TorchFunctionMode. On CUDA each of these waits for the queue (the CPU analogue of
    torch.cuda.set_sync_debug_mode("error")); any caller counts, transformers' and torch's own Python included."""

    METHODS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "cpu", "numpy")
    OPS = {"nonzero", "unique", "unique_consecutive", "masked_select", "bincount", "repeat_interleave", "argwhere"}

    class HostRead(AssertionError):
        pass

    def __init__(self, monkeypatch):
        self.armed = False
        for name in self.METHODS:
            orig = getattr(torch.Tensor, name)

            def patched(t, *a, _orig=orig, _name=name, **kw):
                if self.armed:
                    raise self.HostRead(f"Tensor.{_name} inside a distillation cycle")
                return _orig(t, *a, **kw)
            monkeypatch.setattr(torch.Tensor, name, patched)
        outer = self

        class Ops(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = getattr(func, "__name__", "")
                bool_index = name == "__getitem__" and len(args) > 1 and isinstance(args[1], torch.Tensor) \
                    and args[1].dtype == torch.bool
                if outer.armed and (name in outer.OPS or bool_index):
                    raise outer.HostRead(f"{name or func} inside a distillation cycle")
                return func(*args, **(kwargs or {}))
        self.ops = Ops

    @contextlib.contextmanager
    def cycle(self):
        with self.ops():
            self.armed = True
            try:
                yield
            finally:
                self.armed = False


@pytest.mark.parametrize("accel", [False, True])
@pytest.mark.parametrize("arch", ["llama3", "gemma3"])
def test_a_distillation_cycle_reads_nothing_on_the_host(monkeypatch, accel, arch):
    """One whole cycle of the default method with a question (InfiniPot §3.2: the chunks that fill the pot, the last
    piece with the catalyst, CaP and relevance, NuC, sentence units, the segment fill, the gather and CR-RoPE, the
    evictions queued for the archive) reads no value on the host, on the CPU's paths as on the accelerator's; the
    archive's host work runs between cycles. Gemma 3: sliding-window layers, a rotation per layer type."""
    from infinipot_cli.runtime.devices import as_if_on_accelerator as accel_paths

    m = make_model(arch)
    cfg = PotConfig(size=128, keep=64, chunk=16)
    eng = Engine(m, SentenceTok(), cfg, catalyst_ids=CATALYST, catalyst_focus=FOCUS)
    guard = NoHostReads(monkeypatch)
    with accel_paths() if accel else contextlib.nullcontext():
        eng.pin(HEADER)
        eng.feed(_doc(200))  # a first cycle (and the archive's first segments) outside the guard
        assert eng.cycles >= 1
        cycle = eng._fill_and_distill

        def guarded(room):
            with guard.cycle():
                cycle(room)
        monkeypatch.setattr(eng, "_fill_and_distill", guarded)
        before = eng.cycles
        eng.feed(_doc(120, seed=2))
        assert eng.cycles > before  # the guarded cycles ran
        archived = len(eng.archive)  # read outside the cycle: the queued evictions archived now
    assert archived > 0


@pytest.mark.parametrize("arch", ["llama3", "gemma2", "gemma3", "phi3"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cap_of_all_layers_at_once_is_each_layers_bit_for_bit(arch, dtype):
    """Off the CPU the catalyst rows of every layer are scored in one batched sequence after the forward
    (capture.Capture.flush); on the CPU a layer at a time during it: the same scores and relevance, bit for bit
    (Gemma 2: soft-capping; Gemma 3: sliding and global layers, two groups)."""
    from infinipot_cli.pot.scoring import capture

    m = make_model(arch).to(dtype)
    x = torch.tensor([_doc(90, seed=8)])
    got = []
    for accel in (False, True):
        with as_if_on_accelerator() if accel else contextlib.nullcontext(), torch.no_grad():
            with capture.capture(rows=12, focus=(4, 9), from_layer=0) as capt:
                m.model(input_ids=x)
        got.append(capt)
    cpu, acc = got
    assert cpu.stacked is None and not cpu.pending and not acc.pending
    assert sorted(acc.scores) == sorted(cpu.scores) == list(range(m.config.num_hidden_layers))
    for l in cpu.scores:
        assert torch.equal(acc.scores[l], cpu.scores[l]) and torch.equal(acc.relevance[l], cpu.relevance[l])
    L = m.config.num_hidden_layers
    for kind in ("scores", "relevance"):
        assert torch.equal(acc.stack(kind, L, 3, 60, "cpu"), cpu.stack(kind, L, 3, 60, "cpu"))
    # one mask for every layer: one group, stacked (scores[l] its views); Gemma alternates sliding and global layers
    assert (acc.stacked is not None) == (arch in ("llama3", "phi3"))


def test_general_read_reads_on_the_host_once_a_distillation_to_spread(model):
    """A general read (no question) spreads its budget over the document (spread.py): its stretches' counts are
    the one host read a distillation still makes; its pot is the CPU path's."""
    cfg = PotConfig(size=128, keep=64, chunk=16, nuc_sample=False, spread=4)
    ids = _doc(500, seed=3)
    want, _ = _read(model, cfg, ids, focus=None)
    with as_if_on_accelerator():
        got, reads = _read(model, cfg, ids, focus=None, watch=True)
    assert reads == ["spread.py:spread_select"] * (2 * got.cycles)  # bincount's size, then its values: one wait
    _same_pot(got, want)


@pytest.mark.parametrize("method", ["h2o", "tova", "streaming"])
def test_per_head_policies_keep_the_same_off_the_cpu(model, method):
    cfg = PotConfig.resolve(method, {"size": 96, "keep": 48, "chunk": 16})
    ids = _doc(300, seed=5)
    want, _ = _read(model, cfg, ids)
    with as_if_on_accelerator():
        got, _ = _read(model, cfg, ids)
    _same_pot(got, want)


def test_sampled_novelty_reads_nothing_on_the_host_off_the_cpu(model):
    """NuC over a sample of the vocabulary (a head over NuC's budget) counts the chunk's own ids once each: off the
    CPU without `unique` (its size would be read on the host), the same values."""
    from infinipot_cli.pot.scoring.nuc import Sample

    w = model.lm_head.weight
    sample = Sample(w, 64)
    g = torch.Generator().manual_seed(7)
    h = torch.randn(40, w.shape[1], generator=g)
    targets = torch.randint(0, w.shape[0], (40,), generator=g)
    targets[5:9] = targets[4]  # repeats
    want = sample.nll(model, h, targets)
    mode = HostReads()
    with as_if_on_accelerator(), mode:
        got = sample.nll(model, h, targets)
    assert mode.seen == []
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_the_pot_is_one_buffer_written_in_place(model):
    """Reading and distilling write into the same preallocated (L, 1, H, M, D) buffers; every layer's keys are a
    view of them; the pot never holds more than M entries."""
    cfg = PotConfig(size=128, keep=64, chunk=16)
    eng = Engine(model, SentenceTok(), cfg, catalyst_ids=CATALYST, catalyst_focus=FOCUS)
    eng.pin(HEADER)
    eng.feed(_doc(40))
    cache = eng.pot.cache
    k, v = cache.k, cache.v
    assert k.shape[0] == model.config.num_hidden_layers and k.shape[3] == 128
    eng.feed(_doc(600, seed=2))
    assert eng.cycles > 0 and cache.k is k and cache.v is v  # never reallocated
    for i, layer in enumerate(cache.layers):
        assert layer.keys.data_ptr() == k[i].data_ptr() and layer.keys.shape[-2] == len(eng.pot)
    assert eng.pot.peak_entries <= 128


def test_an_unbounded_pot_grows_its_buffer(model):
    cfg = PotConfig.resolve("full", {})
    eng = Engine(model, SentenceTok(), cfg, catalyst_ids=CATALYST)
    eng.pot.cache.capacity = 64  # small, to see it grow
    eng.pin(HEADER)
    ids = _doc(300)
    eng.feed(ids)
    eng.finish()
    assert len(eng.pot) == len(HEADER) + 300 <= eng.pot.cache.capacity
    assert eng.pot.tok[0, 0, len(HEADER):].tolist() == ids


def test_the_graphed_steps_arithmetic_is_the_eager_steps(model):
    """The CUDA graph's body takes the position from a tensor (RoPE tables indexed, masks compared, the row
    written at it): run eagerly on the CPU it gives the eager step's hidden state and cache, bit for bit."""
    from infinipot_cli.runtime import decode_step
    from infinipot_cli.runtime.answer_cache import AnswerCache
    from infinipot_cli.runtime.graphed_step import GraphedStep
    from infinipot_cli.runtime.loading import with_cache

    step = decode_step.DecodeStep(model)
    prompt = torch.tensor([_doc(37, seed=9)])

    def cache():
        c = AnswerCache(64)
        model.model(input_ids=prompt, use_cache=True, **with_cache(model.model, c))
        return c

    a, b = cache(), cache()
    with torch.inference_mode():
        want = step(123, a)
        g = GraphedStep()
        rows = [b.layers[L.layer_idx].next_row() for L in step.layers]
        keys, values = [k for k, _, _ in rows], [v for _, v, _ in rows]
        cap = keys[0].shape[1]
        g.token = torch.tensor([123])
        g.pos = torch.tensor([rows[0][2]])
        x0 = step.embed(g.token)
        tables = step._rope_at(x0, torch.arange(cap)[None])
        got = g._body(step, tables, torch.arange(cap), keys, values)
    assert torch.equal(got, want)
    for la, lb in zip(a.layers, b.layers):
        assert torch.equal(la.buffers()[0], lb.buffers()[0]) and torch.equal(la.buffers()[1], lb.buffers()[1])


@pytest.mark.parametrize("arch", ["llama3", "gemma3"])
def test_a_read_with_graphed_forwards_and_selections_keeps_the_same_pot(arch):
    """The chunk forward (with its CaP capture) and the selection replayed from captured calls (runtime/graphs.py),
    the CPU's stand-in for a CUDA graph recomputing each replay into the captured tensors: the same pot, archive and
    answer as the eager read, bit for bit, with replays of both from the third cycle on."""
    from infinipot_cli.runtime.graphs import EagerGraph, Graphs

    m = make_model(arch)
    cfg = PotConfig(size=128, keep=64, chunk=64, nuc_sample=False)  # one forward a cycle: pot 64 -> 121 + catalyst
    ids = _doc(700, seed=6)
    want, _ = _read(m, cfg, ids)
    got = Engine(m, SentenceTok(), cfg, catalyst_ids=CATALYST, catalyst_focus=FOCUS)
    got.graphs = Graphs("cpu", factory=EagerGraph)
    got.pin(HEADER)
    got.feed(ids)
    _same_pot(got, want)
    assert torch.equal(got.pot.nov, want.pot.nov)
    kinds = {key[0]: graph.replays for key, (_, graph) in got.graphs.entries.items()}
    assert kinds.get("forward", 0) >= got.cycles - 3 and kinds.get("select", 0) >= got.cycles - 3, kinds
    for eng in (want, got):
        eng.finish()
    assert got.answer(CATALYST[:4], "question", max_new_tokens=6) == want.answer(CATALYST[:4], "question",
                                                                                 max_new_tokens=6)


def test_a_capture_that_fails_runs_eagerly_with_the_same_values():
    from infinipot_cli.runtime.graphs import Graphs

    class Refused:
        def __init__(self, fn, inputs, pool):
            raise RuntimeError("operation not permitted when stream is capturing")

    g = Graphs("cpu", factory=Refused)
    x = torch.arange(6.0)
    outs = [g.run("k", lambda t: t * 2, (x + i,)) for i in range(4)]
    assert [o.tolist() for o in outs] == [[(v + i) * 2 for v in range(6)] for i in range(4)]
    assert g.failed == {"k"} and not g.entries
    assert g.summary() == {"on": True, "captured": [], "failed": ["k"],
                           "errors": {"k": "RuntimeError: operation not permitted when stream is capturing"}}


def test_graphs_are_off_the_cpu_and_on_request():
    from infinipot_cli.runtime import graphed_step

    assert not graphed_step.wanted(torch.device("cpu"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_answers_are_the_eager_steps():  # pragma: no cover - CUDA only
    from infinipot_cli.runtime import decode_step
    from infinipot_cli.runtime.generate import generate
    from infinipot_cli.runtime.answer_cache import AnswerCache

    model = make_model("llama3").cuda()
    prompt = _doc(40, seed=4)
    outs = []
    for graphs in (False, True):
        decode_step.enable(model, True)
        step = decode_step.for_model(model)
        if not graphs:
            step.graphed = None
        outs.append(generate(model, AnswerCache(200), prompt, 150))
    assert outs[0] == outs[1]


def _smoke(tmp_path, cells=None, monkeypatch=None) -> dict:
    from infinipot_cli.evaluate import gpu_check

    if cells is not None:
        monkeypatch.setattr(gpu_check, "plan", lambda smoke, real: cells)
    assert gpu_check.main(["--smoke", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "gpu-check.json").read_text())
    got = {c["name"]: c for c in data["cells"]}
    assert all(c["status"] == "ok" for c in got.values()), got
    for c in got.values():
        if c["kind"] == "speed":
            assert c["read_tok_s"] > 0 and c["length"] == c["length_target"]
        else:
            assert c["n"] == 12 and c["compared"] == 0  # no CPU answers for the tiny model: nothing compared
    return data


@pytest.mark.bench
def test_the_gpu_check_runs_on_the_cpu(tmp_path, monkeypatch):
    """The prepared GPU check's smoke mode, one cell of each kind (a speed worker that distills, the needle bench
    compared with the CPU's answers): its table printed and its JSON written."""
    from infinipot_cli.evaluate import gpu_check

    cells = [c for c in gpu_check.plan(True, False) if c.kind == "needle" or c.name == "tiny-llama infinipot 1K"]
    data = _smoke(tmp_path, cells, monkeypatch)
    assert data["cells"][0]["cycles"] > 0


@pytest.mark.slow
def test_the_whole_gpu_check_runs_on_the_cpu(tmp_path):
    data = _smoke(tmp_path)
    assert len(data["cells"]) == 7
    assert set(data["summary"]) == {"tiny-llama 1K infinipot/plain", "tiny-llama 2K infinipot/plain"}


def test_a_cell_out_of_time_is_killed_and_the_run_goes_on(tmp_path, monkeypatch):
    from infinipot_cli.evaluate import gpu_check

    code, _, secs = gpu_check.spawn([sys.executable, "-c", "import time; time.sleep(60)"], 1.0, "sleeper")
    assert code is None and secs < 10
    cells = gpu_check.plan(True, False)[:2]
    monkeypatch.setattr(gpu_check, "plan", lambda smoke, real: cells)
    assert gpu_check.main(["--smoke", "--out", str(tmp_path), "--budget-s", "5"]) == 0  # too little for any cell
    got = json.loads((tmp_path / "gpu-check.json").read_text())["cells"]
    assert [c["status"] for c in got] == ["skipped", "skipped"]


def test_answers_are_compared_with_the_cpus():
    from infinipot_cli.evaluate.gpu_check import compare, expected_answers

    want = expected_answers()["needle-8k"]
    assert len(want) == 12
    same = compare([dict(w) for w in want], want)
    assert same["identical"] == same["compared"] == same["n"] == 12
    other = compare([{**want[0], "answer": "something else"}], want)
    assert other["identical"] == 0 and other["compared"] == 1


@pytest.mark.bench
def test_the_gpu_checks_profile_runs_on_the_cpu(tmp_path):
    """`gpu_check --profile`: two infinipot reads under torch.profiler, each with its report and its operator count
    per distillation in the record (on a GPU also the kernel launches: evaluate/profile.py)."""
    from infinipot_cli.evaluate import gpu_check

    assert gpu_check.main(["--smoke", "--profile", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "gpu-check.json").read_text())
    cells = [c for c in data["cells"] if c["kind"] == "speed"]
    assert len(cells) == 2 and all(c["status"] == "ok" for c in cells)
    for c in cells:
        p = c["profile"]
        assert p["cycles"] > 0 and p["ops_per_cycle"] > 0 and p["launches"] == 0  # the CPU launches no kernels
        text = Path(p["path"]).read_text()
        assert "per distillation" in text and "## by host time" in text and "aten::" in text
    assert data["summary"] == {}
