"""Read speed and memory (InfiniPot Figure 7 / Table 5): tok/s, time split, peak RSS and KV bytes per length.

Configurations ("methods"):

  any engine policy   the CCD loop (`infinipot`, `streaming`, `h2o`, ... — `full`/`snapkv` only where the
                      document fits the model's positions)
  plain               the speed limit: the engine's own schedule with the `plain` policy (scoring/policies/plain.py):
                      cropped back to `keep` entries (pinned header + most recent) with no catalyst, no
                      scoring, no NuC and no re-rotation
  prefill             one forward of the whole document (only where it fits the model's positions and memory)
  streaming-tbt       StreamingLLM as published: one token per forward, one eviction (with re-rotation) per
                      token — slow, so only run at the smallest length asked for

Each (method, length) runs in a fresh process (`python -m infinipot_cli.evaluate.speed_worker`, one JSON line
on stdout) so peak RSS (`ru_maxrss`) belongs to that configuration alone; on Linux the worker also restarts the
peak after loading the model (`read_rss_mb`: what reading and answering hold, the model's pages included, without
the load's transient peak, which varies by ~200 MB between runs and hid the length's effect). After reading,
every configuration answers a short prompt with `gen_tokens` greedy tokens (no early stop): time to first token
and decode tok/s.

Display overhead: engine events are fed to `infinipot_cli.cli.display.Display(mode="plain", stream=StringIO())`
and the time inside `on_event` (and leaving its context) is the display share — `display` while reading,
`display_answer` while answering; without that module it is recorded as 0 with a note.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..pot.config import METHODS, UNBOUNDED, PotConfig, cli_knobs, split_method_spec
from ..runtime.devices import free_bytes, peak_mb, reset_peak, sync
from ..runtime.compat import text_config, with_cache
from ..pot.prompts import Prompts
from ..session import Catalyst, Session
from .haystack import haystack_units, token_pieces
from .progress import Progress, fmt_tokens

PSEUDO = ["plain", "prefill", "streaming-tbt"]
SPEED_METHODS = METHODS + PSEUDO
QUESTION = "What is the document above about?"
SPLIT = ["forward", "nuc", "cap", "select", "rerotate", "display", "other"]


@dataclass
class SpeedConfig:
    methods: list[str]
    lengths: list[int]
    pot: dict = field(default_factory=dict)  # the pot knobs given (config.py: --pot-size, --keep, --chunk, ...)
    model: str | None = None
    device: str | None = None
    dtype: str | None = None
    haystack: str | None = None
    seed: int = 0
    gen_tokens: int = 64
    piece: int = 1024
    threads: int | None = None        # torch CPU threads in each worker (None: torch's default)
    synthetic: str | None = None      # a synthetic model (evaluate/synthetic.py) instead of --model

    def pot_config(self, method: str | None = None) -> PotConfig:
        """The configuration `method` reads with: its spec and the knobs given, as `infinipot ask` resolves them;
        `plain` the default's sizes; `streaming-tbt` one token per forward, one eviction per token."""
        if method == "streaming-tbt":
            size = self.pot_config().size
            return PotConfig(size=size, keep=size - 1, chunk=1, method="streaming").validate()
        return PotConfig.resolve(None if method in PSEUDO and method != "plain" else method, self.pot)

    def describe(self) -> dict:
        pot = self.pot_config()
        return {"methods": self.methods, "lengths": self.lengths, "pot_size": pot.size, "keep": pot.keep,
                "chunk": pot.chunk, **{k: getattr(self, k) for k in ("model", "device", "dtype", "haystack", "seed",
                                                                     "gen_tokens", "threads", "synthetic")}}


def rss_mb() -> float:
    """Peak resident set size of this process so far (MiB); ru_maxrss is KB on Linux, bytes on macOS."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(r / (1 << 20) if sys.platform == "darwin" else r / 1024, 1)


def reset_peak_rss() -> bool:
    """Start the peak RSS anew (Linux: /proc/self/clear_refs), so that `peak_rss_since_reset_mb` measures what
    reading and answering hold, without the transient peak of loading the model. It resets `ru_maxrss` too: the
    process's whole peak is then the larger of the two. False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_since_reset_mb() -> float | None:
    """VmHWM of this process (MiB): its peak RSS since the last reset_peak_rss(); None where /proc is absent."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def kv_bytes_per_token(model) -> int:
    c = text_config(model)
    hkv = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
    hd = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    elem = next(model.parameters()).element_size()
    return 2 * c.num_hidden_layers * hkv * hd * elem


def cache_bytes(cache) -> int:
    total = 0
    for layer in cache.layers:
        k = getattr(layer, "keys", None)
        if k is not None and k.numel():
            total += k.numel() * k.element_size() + layer.values.numel() * layer.values.element_size()
    return total


def cache_len(cache) -> int:
    return cache.get_seq_length() if len(cache.layers) else 0


def make_display(total_tokens: int | None = None):
    """(display, note): the project's plain display writing into a StringIO, entered; or (None, why not)."""
    try:
        from ..cli.display import Display  # type: ignore[attr-defined]
    except ImportError:
        return None, "infinipot_cli.cli.display not available: display time recorded as 0"
    try:
        try:
            d = Display(mode="plain", stream=io.StringIO(), total_tokens=total_tokens)
        except TypeError:
            d = Display(mode="plain", stream=io.StringIO())
        if hasattr(d, "__enter__"):
            d.__enter__()
        return d, ""
    except Exception as e:  # noqa: BLE001 - the benchmark must not die on another module's API change
        return None, f"Display(mode='plain', stream=StringIO()) failed ({type(e).__name__}: {e}): display time 0"


def close_display(display) -> None:
    if display is not None and hasattr(display, "__exit__"):
        display.__exit__(None, None, None)


def _units(cfg: SpeedConfig, length: int):
    return haystack_units(cfg.haystack, f"speed:{cfg.seed}:{length}")


def prefill_fits(model, n: int) -> str | None:
    """None when one forward of `n` tokens fits the device's memory, else the skip reason ("OOM: ...").

    On CUDA, SDPA / FlashAttention never build the n x n attention map: the estimate is the KV cache plus a
    layer's activations against the GPU's free memory. On the CPU the math path may, so one map is counted
    against the host's available memory."""
    c = text_config(model)
    p = next(model.parameters())
    elem = p.element_size()
    act = n * (c.intermediate_size * 3 + c.hidden_size * 8) * elem
    need = n * kv_bytes_per_token(model) + act
    gpu = free_bytes(p.device)
    if gpu is not None:
        avail, where = gpu, "free on the GPU"
    else:
        need += n * n * c.num_attention_heads * 4  # one attention map (math path)
        avail, where = available_bytes(), "available"
    if avail is not None and need > 0.8 * avail:
        return f"OOM: needs ~{need / 2**30:.1f} GiB, {avail / 2**30:.1f} GiB {where}"
    return None


# ---- one measurement (runs inside the worker process) ---------------------------------------------------

def measure(lm, cfg: SpeedConfig, method: str, length: int, progress: Progress | None = None) -> dict:
    """Read `length` haystack tokens with `method`, then generate; returns the run record."""
    prompts = Prompts(lm.tokenizer)
    header = prompts.header_ids()
    ask = prompts.ask_ids(QUESTION)
    limit = getattr(text_config(lm.model), "max_position_embeddings", None)
    pot = cfg.pot_config(method)
    rec = {"method": method, "length_target": length, "length": 0, "pot_size": pot.size, "keep": pot.keep,
           "chunk": pot.chunk, "skipped": None, "note": ""}
    if split_method_spec(method)[0] in UNBOUNDED or method == "prefill":
        # the document must fit the model's positions; the header, prompt and answer may run a little past
        if limit and length > limit:
            rec["skipped"] = f"OOD: {fmt_tokens(length)} tokens exceed the model's {limit} positions"
            return rec
        over = len(header) + length + len(ask) + cfg.gen_tokens - (limit or 1 << 62)
        if over > 0:
            rec["note"] = f"header + prompt + answer run {over} positions past the model's {limit}"
    if method == "prefill":
        skip = prefill_fits(lm.model, len(header) + length)
        if skip:
            rec["skipped"] = skip
            return rec
    dev = getattr(lm, "device", None)
    reset_peak(dev)
    if progress is not None:
        progress.start(f"{method} {fmt_tokens(length)}", length)
    if method == "prefill":
        out = _run_prefill(lm, cfg, header, ask, length, progress)
    else:
        out = _run_engine(lm, cfg, method, length, progress)
    note = rec["note"]
    rec.update(out)
    rec["note"] = "; ".join(n for n in (note, out.get("note", "")) if n)
    t = rec["timings"]
    t["other"] = round(max(0.0, t["read_s"] - sum(t.get(k, 0.0) for k in SPLIT if k != "other")), 4)
    rec["read_tok_s"] = round(rec["length"] / t["read_s"], 1) if t["read_s"] > 0 else None
    rec["kv_per_token"] = kv_bytes_per_token(lm.model)
    rec["kv_peak_bytes"] = rec["peak_entries"] * rec["kv_per_token"]
    rec["gpu_peak_mb"] = peak_mb(dev)  # weights included, as in peak RSS; None off CUDA
    rec["complete_answer_s"] = complete_answer_s(rec["ttft_s"], rec.get("gen_tok_s"))
    if progress is not None:
        progress.cur = rec["length"]
        progress.finish(f"{rec['read_tok_s']} tok/s")
    return rec


ANSWER_LENGTHS = (30, 300)  # a short answer and a summary, in tokens


def complete_answer_s(ttft_s: float, tok_s: float | None) -> dict[str, float] | None:
    """Seconds from the end of the read to a complete answer of each ANSWER_LENGTHS tokens: the first token's
    time plus the rest at the measured generation rate (over the run's own gen_tokens)."""
    if not tok_s:
        return None
    return {str(n): round(ttft_s + (n - 1) / tok_s, 2) for n in ANSWER_LENGTHS}


def _run_engine(lm, cfg: SpeedConfig, method: str, length, progress) -> dict:
    """Read with a pot (the session every command drives), then answer `gen_tokens` tokens."""
    pcfg = cfg.pot_config(method)
    disp = {"read": 0.0, "answer": 0.0}
    display, note = make_display(length)  # set-up (and the module import) is not counted
    stamps: dict[str, float] = {}
    phase = ["read"]

    def on_event(ev) -> None:
        if progress is not None and ev.kind == "read":
            progress.update(ev.tokens_read)
        if ev.kind == "token" and "first" not in stamps:
            stamps["first"] = time.perf_counter()
        if display is not None:
            t = time.perf_counter()
            display.on_event(ev)
            disp[phase[0]] += time.perf_counter() - t

    dev = next(lm.model.parameters()).device
    sync(dev)
    t0 = time.perf_counter()
    session = Session.start(lm, pcfg, Catalyst("question", QUESTION), on_event=on_event)
    session.expect(QUESTION)  # the question is known while reading, as in `infinipot ask`
    session.read_tokens(token_pieces(_units(cfg, length), lm.tokenizer, length, piece=cfg.piece))
    eng = session.engine
    sync(dev)
    read_s = time.perf_counter() - t0
    kv_read = eng.pot.kv_bytes()
    phase[0] = "answer"
    t1 = time.perf_counter()
    session.ask(QUESTION, max_new_tokens=cfg.gen_tokens, stop=False, guard=False,
                from_pot=True)  # the answer step over the pot, exactly gen_tokens: no stop token, no early end
    sync(dev)
    t2 = time.perf_counter()
    close_display(display)
    disp["answer"] += time.perf_counter() - t2
    first = stamps.get("first", t2)
    tm = eng.timings.as_dict()
    tm.update({"display": round(disp["read"], 4), "display_answer": round(disp["answer"], 4),
               "read_s": round(read_s, 4), "answer_s": round(t2 - t1, 4)})
    return {"length": eng.tokens_read, "timings": tm, "peak_entries": eng.pot.peak_entries, "cycles": eng.cycles,
            "kv_bytes": kv_read, "ttft_s": round(first - t1, 4), "gen_tokens": cfg.gen_tokens,
            "gen_tok_s": round((cfg.gen_tokens - 1) / (t2 - first), 1) if t2 > first and cfg.gen_tokens > 1 else None,
            "note": note, "graphs": eng.graphs.summary()}  # CUDA graphs of the cycle: captured, failed (graphs.py)


@torch.no_grad()
def _generate(lm, cache, ask, n_tokens: int) -> tuple[float, float | None, int]:
    """Greedy decode over a copy of `cache` with the engine's loop (decode.generate, no early stop): (time to first
    token, decode tok/s, entries at the end). The copy into a preallocated cache counts in the time to first token."""
    from ..runtime.answer_cache import AnswerCache, answer_room
    from ..runtime.generate import generate

    dev = next(lm.model.parameters()).device
    stamps: list[float] = []
    sync(dev)
    t0 = time.perf_counter()
    kv = AnswerCache.from_cache(cache, answer_room(len(ask), n_tokens))
    generate(lm.model, kv, ask, n_tokens, on_token=lambda _id, _text: stamps.append(time.perf_counter()))
    sync(dev)
    end = time.perf_counter()
    first = stamps[0] if stamps else end
    return first - t0, ((n_tokens - 1) / (end - first) if n_tokens > 1 and end > first else None), kv.get_seq_length()


@torch.no_grad()
def _run_prefill(lm, cfg: SpeedConfig, header, ask, length, progress) -> dict:
    from transformers import DynamicCache

    dev = next(lm.model.parameters()).device
    ids = list(header)
    for piece in token_pieces(_units(cfg, length), lm.tokenizer, length, piece=cfg.piece):
        ids.extend(piece)
    cache = DynamicCache()
    x = torch.tensor([ids], device=dev)
    sync(dev)
    t0 = time.perf_counter()
    lm.model.model(input_ids=x, use_cache=True, **with_cache(lm.model.model, cache))
    sync(dev)
    read_s = time.perf_counter() - t0
    if progress is not None:
        progress.update(len(ids) - len(header), force=True)
    kv_read = cache_bytes(cache)
    t1 = time.perf_counter()
    ttft, gen, _ = _generate(lm, cache, ask, cfg.gen_tokens)
    answer_s = time.perf_counter() - t1
    tm = {"forward": round(read_s, 4), "nuc": 0.0, "cap": 0.0, "select": 0.0, "rerotate": 0.0, "display": 0.0,
          "answer": round(answer_s, 4), "read_s": round(read_s, 4), "answer_s": round(answer_s, 4)}
    return {"length": len(ids) - len(header), "timings": tm, "peak_entries": cache_len(cache), "cycles": 0,
            "kv_bytes": kv_read, "ttft_s": round(ttft, 4), "gen_tokens": cfg.gen_tokens,
            "gen_tok_s": round(gen, 1) if gen else None}


# ---- the benchmark (parent process) ----------------------------------------------------------------------

def worker_command(cfg: SpeedConfig, method: str, length: int) -> list[str]:
    cmd = [sys.executable, "-m", "infinipot_cli.evaluate.speed_worker", "--method", method, "--length", str(length),
           "--seed", str(cfg.seed), "--gen-tokens", str(cfg.gen_tokens), "--piece", str(cfg.piece)]
    for f in cli_knobs():  # the pot knobs given, by their declared flags
        if f.name in cfg.pot:
            cmd += [f.metadata["flag"], str(cfg.pot[f.name])]
    for flag, val in (("--model", cfg.model), ("--device", cfg.device), ("--dtype", cfg.dtype),
                      ("--haystack", cfg.haystack), ("--threads", cfg.threads), ("--synthetic", cfg.synthetic)):
        if val:
            cmd += [flag, str(val)]
    return cmd


def _relay(stream, sink) -> None:
    for line in iter(stream.readline, ""):
        try:
            sink.write(line)
            sink.flush()
        except (ValueError, OSError):  # the sink was closed (e.g. a test runner's capture)
            pass


def run_worker(cfg: SpeedConfig, method: str, length: int, stderr=None) -> dict:
    """Run one (method, length) in a fresh process; its progress is relayed to `stderr`."""
    sink = stderr if stderr is not None else sys.stderr
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    t0 = time.perf_counter()
    proc = subprocess.Popen(worker_command(cfg, method, length), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    tail: list[str] = []

    class Tee:
        def write(self, s):
            tail.append(s)
            del tail[:-20]
            sink.write(s)

        def flush(self):
            sink.flush()

    th = threading.Thread(target=_relay, args=(proc.stderr, Tee()), daemon=True)
    th.start()
    out = proc.stdout.read()
    proc.wait()
    th.join(timeout=5)
    wall = round(time.perf_counter() - t0, 2)
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                rec = json.loads(line)
                rec["worker_s"] = wall
                return rec
            except ValueError:
                break
    return {"method": method, "length_target": length, "length": 0, "skipped": None,
            "error": f"worker exited with {proc.returncode}: " + "".join(tail).strip()[-500:], "worker_s": wall}


def run_speed(cfg: SpeedConfig, stderr=None, on_run=None) -> list[dict]:
    """Every (length, method) in its own worker process; streaming-tbt only at the smallest length."""
    sink = stderr if stderr is not None else sys.stderr
    smallest = min(cfg.lengths)
    runs = []
    todo = [(length, m) for length in cfg.lengths for m in cfg.methods]
    for i, (length, method) in enumerate(todo, 1):
        if method == "streaming-tbt" and length != smallest:
            rec = {"method": method, "length_target": length, "length": 0,
                   "skipped": f"slow: token-by-token only at the smallest length ({fmt_tokens(smallest)})"}
        else:
            sink.write(f"[{i}/{len(todo)}] {method} {fmt_tokens(length)}: starting a fresh process\n")
            sink.flush()
            rec = run_worker(cfg, method, length, sink)
        runs.append(rec)
        if on_run is not None:
            on_run(rec)
    return runs
