"""Options the reading commands and `bench` share, declared once: their panels, metavars and help.

The pot knobs come from their declaration in config.py (knob_options.py); the model options are here.
"""

from __future__ import annotations

import typer

P_POT, P_MODEL, P_IO = "Pot (InfiniPot)", "Model", "Input and output"

MODEL_HELP = ("A .gguf file, ollama:NAME[:TAG], gemma3-270m, a local folder or a cached Hugging Face id "
              "(`infinipot models` lists them). Default: the built-in SmolLM2-135M-Instruct.")


def model_option():
    return typer.Option(None, "-m", "--model", envvar="INFINIPOT_MODEL", rich_help_panel=P_MODEL, metavar="MODEL",
                        help=MODEL_HELP)


def device_option():
    return typer.Option(None, "--device", rich_help_panel=P_MODEL, metavar="DEVICE",
                        help="cpu, cuda, cuda:N or auto. Default: auto.")


def dtype_option():
    from ..pot.config import DTYPE_HELP

    return typer.Option(None, "--dtype", rich_help_panel=P_MODEL, metavar="DTYPE", help=DTYPE_HELP)
