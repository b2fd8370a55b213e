"""Benchmarks: `infinipot bench needle` and `infinipot bench speed` (options, JSON fields, `--trace`: docs/bench.md)."""
