"""Benchmarks: `infinipot bench needle` and `infinipot bench speed` (see README.md here)."""
