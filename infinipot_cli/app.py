"""The `infinipot` command as installed: the product's commands (cli/) with the benches (evaluate/) mounted as
`infinipot bench` when they are installed.

This is the one module that imports both: the product's packages never import the benches (the layers contract in
pyproject.toml, `make lint`), so the benches can be left out without touching them.
"""

from __future__ import annotations

from .cli.commands import app


def _mount_bench() -> None:
    try:
        from .evaluate.cli import bench_app
    except ImportError:
        return
    app.add_typer(bench_app, name="bench", help="Benchmarks: needle-in-a-haystack accuracy, speed and memory.")


_mount_bench()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
