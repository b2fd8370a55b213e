"""`summarize`: the summary a reader gets from a pot, shared by the CLI and `bench summary`.

`write_summary(engine, prompts, max_new_tokens, on_text)` decodes the model's summary with the summary controls
(controls.py: no loops, a complete last sentence) and returns a :class:`Summary`: its text (what goes to
stdout), and its parts for `--json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .controls import answer_controls


@dataclass
class Summary:
    text: str                                      # the whole summary as printed
    overview: str = ""                             # the model's own summary
    key_points: list[dict] = field(default_factory=list)  # [{"text", "source", "page"/"chapter"/"line"}]


def write_summary(engine, prompts, max_new_tokens: int, on_text: Callable[[str], None] | None = None) -> Summary:
    """The summary of what `engine`'s pot holds; `on_text` receives it as it forms (only complete sentences)."""
    from .stopping import StopStream

    c = answer_controls("summarize", engine.tok, max_new_tokens)
    stream = StopStream(c.stopper, on_text) if on_text is not None else None
    raw = engine.answer(prompts.summary_ids(), c.mode, max_new_tokens=c.limit, stop_ids=prompts.stop_ids("summary"),
                        on_text=stream, should_stop=c.stopper.should_stop, logits_fn=c.guard)
    overview = stream.finish() if stream is not None else c.stopper.trim(raw).strip()
    return Summary(text=overview, overview=overview)
