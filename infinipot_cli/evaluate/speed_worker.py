"""One speed measurement in a fresh process: `python -m infinipot_cli.evaluate.speed_worker --method M --length N`.

Prints exactly one JSON line on stdout (the run record, with peak RSS of this process); progress and errors
go to stderr. Exit code 0 also when the run is skipped (the record says why).
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="speed_worker")
    ap.add_argument("--method", required=True)
    ap.add_argument("--length", type=int, required=True)
    from ..pot.config import cli_knobs

    for f in cli_knobs():  # the pot knobs, as declared (not given: the declared default)
        ap.add_argument(f.metadata["flag"], dest=f.name, type=f.metadata["kind"], default=None)  # None: derived
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--haystack", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--piece", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--synthetic", default=None)
    ap.add_argument("--profile", default=None, metavar="DIR",
                    help="run under torch.profiler and write its report to DIR (evaluate/profile.py)")
    a = ap.parse_args(argv)

    def torch_threads() -> int:
        import torch

        return torch.get_num_threads()

    def torch_interop() -> int:
        import torch

        return torch.get_num_interop_threads()

    from ..errors import InfinipotError
    from ..runtime.loading import load_model
    from .progress import Progress
    from ..runtime.devices import gpu_name, peak_mb
    from .speed import SPEED_METHODS, SpeedConfig, measure, peak_rss_since_reset_mb, reset_peak_rss, rss_mb

    from ..runtime.threads import configure

    configure(a.threads)
    rec: dict = {"method": a.method, "length_target": a.length, "length": 0, "skipped": None}
    try:
        from ..pot.config import split_method_spec

        if split_method_spec(a.method)[0] not in SPEED_METHODS:
            raise ValueError(f"unknown method {a.method!r}")
        knobs = {f.name: getattr(a, f.name) for f in cli_knobs() if getattr(a, f.name) is not None}
        cfg = SpeedConfig(methods=[a.method], lengths=[a.length], pot=knobs,
                          model=a.model, device=a.device, dtype=a.dtype, haystack=a.haystack, seed=a.seed,
                          gen_tokens=a.gen_tokens, piece=a.piece, threads=a.threads, synthetic=a.synthetic)
        if a.synthetic:
            from .synthetic import load_synthetic

            lm = load_synthetic(a.synthetic, a.device, a.dtype, seed=a.seed)
        else:
            lm = load_model(a.model, a.device, a.dtype)
        load_rss = rss_mb()
        load_gpu = peak_mb(lm.device)
        reset = reset_peak_rss()
        if a.profile:
            from pathlib import Path

            from .profile import profiled, report

            with profiled(lm.device) as held:
                rec = measure(lm, cfg, a.method, a.length, Progress(a.length))
            name = f"profile-{(a.synthetic or 'model').replace('/', '_')}-{a.method}-{a.length}.txt"
            rec["profile"] = report(held, rec, Path(a.profile) / name)
        else:
            rec = measure(lm, cfg, a.method, a.length, Progress(a.length))
        rec["read_rss_mb"] = peak_rss_since_reset_mb() if reset else None
        rec.update({"model": lm.name, "device": str(lm.device), "dtype": str(lm.dtype).removeprefix("torch."),
                    "load_s": round(lm.load_s, 2), "threads": torch_threads(), "interop_threads": torch_interop(), "load_rss_mb": load_rss,
                    "peak_rss_mb": max(load_rss, rss_mb()), "load_gpu_mb": load_gpu,
                    "gpu_name": gpu_name(lm.device)})
    except InfinipotError as e:
        rec["error"] = str(e)
    except Exception as e:  # noqa: BLE001 - report, do not crash the benchmark
        rec["error"] = f"{type(e).__name__}: {e}"
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
