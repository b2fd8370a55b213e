"""Which answer-token path runs: one switch for the hand-written fast runtime, ``$INFINIPOT_DECODE``.

Answers are written through hand-written pieces that each fall back by themselves: the eager decode step
(``decode_step.py``), its ahead-of-time compiled libraries (``compiled_step.py``, which call ``exact_ops.py``), the
4-bit matrices of a converted GGUF (``q4.py``) and, on CUDA, the step replayed as a graph (``graphed_step.py``). Each
is tested to give the forward's tokens; this switch turns them off, to compare when an answer looks wrong:

- ``hf``: transformers' forward for every token, none of the pieces (no 4-bit matrices either: dense weights);
- ``eager``: the eager decode step (with the 4-bit matrices), never a compiled library or a CUDA graph;
- ``compiled`` (unset: this): the fastest path there is, each piece falling back as it does.

Declared here without torch, so ``infinipot models`` shows it at once; loading.py and decode_step.py read it when a
model loads and when an answer starts. An unknown value is a usage error (exit 2).
"""

from __future__ import annotations

import os

from ..errors import UsageError

ENV = "INFINIPOT_DECODE"
MODES = ("hf", "eager", "compiled")
DEFAULT = "compiled"


def decode_mode() -> str:
    """The answer path $INFINIPOT_DECODE asks for (unset or empty: ``compiled``); UsageError on another value."""
    raw = os.environ.get(ENV)
    if raw is None or not raw.strip():
        return DEFAULT
    mode = raw.strip().lower()
    if mode not in MODES:
        raise UsageError(f"{ENV}={raw!r} is not a decode path: use hf, eager or compiled (the default)")
    return mode


def describe(caches) -> dict:
    """What `infinipot models` shows of the runtime, without loading torch: the mode, and per piece whether the
    mode lets it run and what it needs is here. ``compiled_step`` / ``exact_ops``: a compiled layer library / the
    exact operations' library is built in one of `caches` (the folders of compiled libraries looked in, the cache
    in force's first: compiled_step.folders), ``compiled_in`` the folder holding them (None: none; whether they fit
    a given model and this torch is known only when the model loads) and ``compiled_for`` the cache in force's
    folder, where ``models --compile`` builds; ``q4``: converted GGUF matrices in 4 bits (bf16 on the CPU);
    ``graphed``: CUDA graphs unless INFINIPOT_CUDA_GRAPHS=0 (used on CUDA only)."""
    from pathlib import Path

    folders = [Path(c) for c in ([caches] if isinstance(caches, (str, os.PathLike)) else caches)]
    mode = decode_mode()
    fast = mode == "compiled"
    holding = next((f for f in folders if f.is_dir() and any(f.glob("decode-step-*.so"))
                    and any(f.glob("exact-ops-*.so"))), None)
    built = lambda pattern: any(f.is_dir() and any(f.glob(pattern)) for f in folders)  # noqa: E731
    return {"decode": mode, "env": ENV, "decode_step": mode != "hf",
            "compiled_step": fast and built("decode-step-*.so"), "exact_ops": fast and built("exact-ops-*.so"),
            "compiled_in": str(holding) if fast and holding else None, "compiled_for": str(folders[0]),
            "q4": mode != "hf", "graphed": fast and os.environ.get("INFINIPOT_CUDA_GRAPHS", "1") != "0"}


def describe_line(info: dict) -> str:
    """One line for `infinipot models`' listing: what answers run on, and, under the default mode, where the
    compiled step was found or that it is not built (and how to build it)."""
    on = [name for name, key in (("decode step", "decode_step"), ("compiled step", "compiled_step"),
                                 ("exact ops", "exact_ops"), ("4-bit matrices", "q4"), ("CUDA graphs on a GPU", "graphed"))
          if info[key]]
    what = ", ".join(on) if on else "transformers' forward only"
    line = f"answer runtime: {ENV}={info['decode']} ({what}; hf, eager or compiled)"
    if info["decode"] != "compiled":
        return line
    where, home = info.get("compiled_in"), info.get("compiled_for")
    if where is None:
        return (f"{line}\nno compiled answer step is built in {home}: answers use the eager step (~1.7x slower); "
                "`infinipot models --compile` builds it (once, ~30 s)")
    if where != home:
        return f"{line}\ncompiled answer step: {where} (the default cache; {home} has none)"
    return f"{line}\ncompiled answer step: {where}"
