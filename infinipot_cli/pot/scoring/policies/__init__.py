"""The selection methods, one module each, and their registry built from the classes (scoring/policy.py says what
a policy is). Adding a method is adding a module here with one Policy subclass naming itself; config.py,
`--help`, `--method` and the bench read the names from here. Imports no torch."""

from __future__ import annotations

import importlib
import pkgutil

from ..policy import Policy


def _discover() -> dict[str, type[Policy]]:
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    found: dict[str, type[Policy]] = {}
    todo = list(Policy.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.name and cls.__module__.startswith(__name__ + "."):
            found[cls.name] = cls
    # the product first, then the rest by name
    return {k: found[k] for k in sorted(found, key=lambda n: (n != "infinipot", n))}


REGISTRY: dict[str, type[Policy]] = _discover()


def make_policy(cfg) -> Policy:
    """The policy of `cfg.method` (a PotConfig), its options taken from `cfg`."""
    if cfg.method not in REGISTRY:
        raise ValueError(f"unknown method {cfg.method!r}")
    return REGISTRY[cfg.method].from_config(cfg)
