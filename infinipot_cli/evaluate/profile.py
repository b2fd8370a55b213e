"""Where a read's time goes, op by op: one speed measurement under `torch.profiler` (`speed_worker --profile DIR`,
`gpu_check --profile`, `bash bench/gpu-check.sh run --profile`).

On a GPU the question is how many kernels the host launches per distillation and what the device spends its time
on (docs/results/speed.md: the selection's segment fill and the small model's forward are bound by the host, not
the arithmetic); on the CPU the same count of operator calls is the proxy. Writes one text report per run: the
launch and operator counts per distillation, then the operators by device time (CUDA) and by host time.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch")


@contextlib.contextmanager
def profiled(device):
    """Yield a holder whose `.prof` is the finished torch.profiler run of the block (CPU, and CUDA on a GPU)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU]
    cuda = torch.device(device).type == "cuda" and torch.cuda.is_available()
    if cuda:
        acts.append(ProfilerActivity.CUDA)

    class Holder:
        prof = None
        on_cuda = cuda

    h = Holder()
    with profile(activities=acts) as prof:
        yield h
        if cuda:
            torch.cuda.synchronize()
    h.prof = prof


def report(holder, rec: dict, path: Path, rows: int = 30) -> dict:
    """Write the report of a profiled run (`rec`: its speed record: cycles, length) to `path`; return the counts
    {launches, ops, cycles, launches_per_cycle, ops_per_cycle, path} for the record."""
    ka = holder.prof.key_averages()
    launches = sum(e.count for e in ka if e.key in LAUNCHES)
    ops = sum(e.count for e in ka if e.key.startswith("aten::"))
    cycles = int(rec.get("cycles") or 0)
    counts = {"launches": launches, "ops": ops, "cycles": cycles,
              "launches_per_cycle": round(launches / cycles, 1) if cycles else None,
              "ops_per_cycle": round(ops / cycles, 1) if cycles else None, "path": str(path)}
    lines = [f"# {rec.get('method')} {rec.get('length')} tokens, {cycles} distillations, "
             f"{'CUDA' if holder.on_cuda else 'CPU'}",
             f"kernel launches {launches:,} ({counts['launches_per_cycle']} per distillation); "
             f"aten operator calls {ops:,} ({counts['ops_per_cycle']} per distillation); the whole measurement: "
             "the read, then the answer", ""]
    if holder.on_cuda:
        lines += ["## by device time", ka.table(sort_by="self_cuda_time_total", row_limit=rows,
                                                 max_name_column_width=60), ""]
    lines += ["## by host time", ka.table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=60)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return counts
