"""What differs between the transformers releases (and model classes) the engine runs on, answered in one place.

- :func:`text_config`: a multimodal config (Gemma 3) keeps the language model's settings in a sub-config;
- :func:`with_cache`: transformers 5.24 renamed the forward's ``past_key_values`` to ``cache`` (the old name warns on
  every call there and goes in 5.40); earlier 5.x only know ``past_key_values``.
"""

from __future__ import annotations

import functools
import inspect


def text_config(model_or_config):
    """The language model's config of a model (or of a config)."""
    cfg = getattr(model_or_config, "config", model_or_config)
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg


@functools.lru_cache(maxsize=None)
def _cache_arg(cls: type) -> str:
    return "cache" if "cache" in inspect.signature(cls.forward).parameters else "past_key_values"


def with_cache(module, cache) -> dict:
    """{name: cache} for a model's forward, under the name its transformers release takes."""
    return {_cache_arg(type(module)): cache}
