"""`summarize`: the summary a reader gets from a pot, shared by the CLI and `bench summary`.

`write_summary(engine, prompts, max_new_tokens, on_text)` gives a :class:`Summary`:

    Key points:
    - <a sentence the pot judged most important> [page 4]      (keypoints.py: part by part, with the source)
    ...

    Overview: <the model's own summary>                        (controls.py: no loops, a complete last sentence)

Key points need a pot whose heads hold the same whole sentences (InfiniPot's shared, sentence-unit selection);
other methods (the paper's per-head tokens, the baselines) give the overview alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .controls import answer_controls

KEY_POINTS_TITLE = "Key points:"
OVERVIEW_TITLE = "Overview: "


@dataclass
class Summary:
    text: str                                      # the whole summary as printed
    overview: str = ""                             # the model's own summary
    key_points: list[dict] = field(default_factory=list)  # [{"text", "source", "page"/"chapter"/"line", ...}]


def has_key_points(engine) -> bool:
    pol = engine.policy
    return bool(pol.share) and getattr(pol, "segment", 0) > 0 and engine.tok is not None


def write_summary(engine, prompts, max_new_tokens: int, on_text: Callable[[str], None] | None = None,
                  source: str | None = None, key_points: bool = True) -> Summary:
    """The summary of what `engine`'s pot holds; `on_text` receives it as it forms (only complete sentences).
    `source`: the document's path, named in each key point (several sources: their labels name them)."""
    from .keypoints import key_points as find_points, render
    from .stopping import StopStream

    points = find_points(engine, prompts.summary_ids()) if key_points and has_key_points(engine) else []
    for p in points:
        if source and "source" not in p:
            p["source"] = source
    lead = f"{KEY_POINTS_TITLE}\n{render(points)}\n\n{OVERVIEW_TITLE}" if points else ""
    if lead and on_text is not None:
        on_text(lead)
    c = answer_controls("summarize", engine.tok, max_new_tokens)
    stream = StopStream(c.stopper, on_text) if on_text is not None else None
    raw = engine.answer(prompts.summary_ids(), c.mode, max_new_tokens=c.limit, stop_ids=prompts.stop_ids("summary"),
                        on_text=stream, should_stop=c.stopper.should_stop, logits_fn=c.guard)
    overview = stream.finish() if stream is not None else c.stopper.trim(raw).strip()
    return Summary(text=lead + overview, overview=overview, key_points=points)
