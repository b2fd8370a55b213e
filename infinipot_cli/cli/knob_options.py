"""The pot knobs declared in config.py as Typer options: the reading commands and `bench` take the same flags
with the same meaning, help and defaults (an option not given is None: the declared default applies)."""

from __future__ import annotations

import functools
from inspect import Parameter, signature
from typing import Optional

import typer

from ..pot.config import cli_knobs


def knob_option(f, panel: str | None = None, short: str | None = None) -> tuple[str, object, object]:
    """(parameter name, annotation, typer.Option) of a declared knob; `short`: an extra short flag."""
    default, kind = f.metadata["shown"], f.metadata["kind"]
    flags = [f.metadata["flag"]] + ([short] if short else [])
    return (f.name, Optional[kind],
            typer.Option(None, *flags, show_default=False, rich_help_panel=panel,
                         metavar="N" if kind is int else "X", help=f"{f.metadata['help']} Default: {default}."))


def knob(name: str, short: str | None = None):
    """The typer.Option of one declared knob, for a command that takes only some of them."""
    from .options import P_POT

    return knob_option(next(f for f in cli_knobs() if f.name == name), P_POT, short=short)[2]


def pop_knobs(kw: dict) -> dict:
    """The knobs given on the command line, taken out of a command's keyword arguments."""
    knobs = {f.name: kw.pop(f.name) for f in cli_knobs()}
    return {k: v for k, v in knobs.items() if v is not None}


def with_knobs(short: dict[str, str] | None = None):
    """Give a Typer command every knob's option; it receives the ones given as `knobs: dict`."""
    def wrap(fn):
        sig = signature(fn, eval_str=True)
        own = [p for name, p in sig.parameters.items() if name != "knobs"]
        from .options import P_POT

        extra = [Parameter(n, Parameter.KEYWORD_ONLY, default=opt, annotation=ann)
                 for n, ann, opt in (knob_option(f, P_POT, short=(short or {}).get(f.name)) for f in cli_knobs())]

        @functools.wraps(fn)
        def command(**kw):
            knobs = pop_knobs(kw)
            return fn(knobs=knobs, **kw)

        command.__signature__ = sig.replace(parameters=own + extra)
        return command
    return wrap
