"""The pot configuration, declared once: every knob with its default, type, range and one-line help.

The CLI flags, their validation and `--help`, the method-spec parser (`--method infinipot+segment=32`), the
`--json` policy block and a pot file's saved settings all come from `PotConfig`'s field declarations below.
Everyday knobs have a CLI flag (`flag`); the research options live only in the method spec. Why each default
is what it is: docs/results/needle.md. This module imports no torch, so `--help` stays fast.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from .scoring.policies import REGISTRY as _POLICIES

# Selection methods, from the policy registry (scoring/policies/: one module per method, no torch imported)
METHODS = [n for n, c in _POLICIES.items() if c.reader]       # the product, the paper's ablation, the baselines
UNBOUNDED = {n for n, c in _POLICIES.items() if not c.bounded}  # references that read without a memory cap
REFERENCES = {n for n, c in _POLICIES.items() if not c.reader}  # `bench speed`'s speed limit, not a reader
INFINIPOT_METHODS = {n for n, c in _POLICIES.items() if c.pot_options}  # methods that take the InfiniPot options

# `--dtype`, shared by the reading commands and `bench` (model.pick_dtype implements it)
DTYPE_HELP = ("auto, float32, bfloat16 or float16. Default (auto): bfloat16 on CUDA and on CPUs with native bf16 "
              "(AVX-512 BF16 or AMX), float32 on other CPUs.")


def knob(default, help: str, *, flag: str | None = None, lo: float | None = None, hi: float | None = None,
         hi_open: bool = False, infinipot: bool = False, panel: str = "Pot", kind: type | None = None,
         shown: str | None = None, choices: tuple[str, ...] = ()):
    """A declared option: `flag` gives it a CLI flag; `infinipot` marks an InfiniPot option of the method spec.
    A default of None (derived from other settings) needs its `kind` and the `shown` text --help gives for it."""
    return field(default=default, metadata={"help": help, "flag": flag, "lo": lo, "hi": hi, "hi_open": hi_open,
                                            "infinipot": infinipot, "panel": panel,
                                            "kind": kind or type(default), "shown": shown or str(default),
                                            "choices": choices})


@dataclass
class PotConfig:
    size: int | None = knob(2048, "M: KV entries per layer and KV head the pot may hold.", flag="--pot-size", lo=1)
    keep: int | None = knob(None, "C: entries kept by each distillation, pinned header included.", flag="--keep",
                            lo=1, kind=int, shown="half the pot")
    alpha: float = knob(0.5, "Share of the kept entries chosen by novelty (NuC); the rest by the catalyst (CaP).",
                        flag="--nuc-ratio", lo=0.0, hi=1.0)
    method: str = knob("infinipot", "Selection method (see --method).")
    chunk: int = knob(1024, "Most tokens per forward pass.", flag="--chunk", lo=1)
    final_keep: int = knob(512, "Before answering a question the pot was read with, distill the pot to N entries "
                                "with it as the catalyst; a question it was not read with (read once, ask many) "
                                "keeps C (0 = only when the pot is too full, as the paper).",
                           flag="--final-keep", lo=0, infinipot=True)
    segment: int = knob(48, "Keep whole sentence segments of at most N entries (0 = single tokens, as the paper).",
                        lo=0, infinipot=True)
    relevance: bool = knob(True, "With a question as the catalyst, rank by the attention the question gives beyond "
                                 "the prompt template's (off = the paper's CaP sum).", infinipot=True)
    share: bool = knob(True, "One score per entry for every layer and head (off = per-head selection, the paper).",
                       infinipot=True)
    share_from: float = knob(0.5, "With share, average the layers from this depth fraction on (0 = all layers).",
                             lo=0.0, hi=1.0, hi_open=True, infinipot=True)
    reencode: bool = knob(True, "Answer a question over a fresh prefill of the text the pot holds (off = from its "
                                "KV states as read, the paper).", infinipot=True)
    spread: int = knob(0, "A general read (no question) keeps its entries spread evenly over N stretches of the "
                          "document read so far (0 = off: the newest text wins, as the paper). `summarize` uses "
                          "16 unless given.", lo=0, infinipot=True)
    nuc_sample: bool = knob(True, "With a vocabulary too large for a small model's read (Gemma 3 270M's 262K), NuC's "
                                  "log-sum-exp over a sample of it (off = the whole vocabulary, as the paper).",
                            infinipot=True)
    retrieve: str = knob("auto", "How a question's passages are found and judged: model (the words find them; where "
                                 "the best sentence shares few of the question's words, the model judges which "
                                 "sentence answers it: the likelihood of the question given each; with the question "
                                 "known while reading, the evidence's last passage is the read's own), words (the "
                                 "words alone: BM25 with answer typing) or auto: model with the built-in model, words with "
                                 "others (Gemma 3 270M measured no gain). docs/results/model-retrieval.md.",
                         infinipot=True, choices=("auto", "model", "words"))
    recall: int = knob(1024, "A question the pot was not read with first recalls up to N tokens of evicted "
                             "sentences from the pot's archive (0 = off, the paper).", lo=0, infinipot=True)

    @classmethod
    def resolve(cls, spec: str | None, knobs: dict | None = None) -> "PotConfig":
        """The validated configuration of a method spec (a name, preset or spec such as infinipot+segment=32)
        and the knobs given on a command line (flags override the spec): what `ask` and `bench` both read with."""
        base, opts = split_method_spec(spec or "infinipot")
        return cls(method=base, **{**opts, **(knobs or {})}).validate()

    @property
    def archive_segment(self) -> int:
        """Tokens per archived segment at most: the `segment` setting (single-token selection archives whole
        sentences in pieces of the declared default)."""
        return self.segment or default("segment")

    def __post_init__(self):
        self._keep_from_size = self.keep is None and bool(self.size)  # C not given: half the pot
        if self._keep_from_size:
            self.keep = self.size // 2

    def keep_named(self) -> str:
        """C as the user set it, for messages: "--keep (300)", or "the 30 entries --pot-size 60 keeps (half of
        it)" when --keep was not given."""
        if getattr(self, "_keep_from_size", False):
            return f"the {self.keep} entries --pot-size {self.size} keeps (half of it)"
        return f"--keep ({self.keep})"

    @property
    def bounded(self) -> bool:
        return self.method not in UNBOUNDED

    def validate(self) -> "PotConfig":
        """Raise UsageError naming the flag (or spec option) of the first value out of its range."""
        if self.method not in METHODS and self.method not in REFERENCES:
            raise UsageError(f"unknown method {self.method!r}; choose one of {', '.join([*METHODS, *PRESETS])}")
        for f in dataclasses.fields(self):
            lo, hi, v = f.metadata.get("lo"), f.metadata.get("hi"), getattr(self, f.name)
            if f.metadata.get("choices") and v not in f.metadata["choices"]:
                raise UsageError(f"{option_name(f.name)} must be one of {', '.join(f.metadata['choices'])}, not {v!r}")
            if v is None or isinstance(v, (bool, str)) or (f.name == "keep" and self._keep_from_size):
                continue  # a C derived from the pot's size: the size is named below when it is too small
            if (lo is not None and v < lo) or (hi is not None and (v >= hi if f.metadata["hi_open"] else v > hi)):
                raise UsageError(f"{option_name(f.name)} must be {_range_text(f)}, not {v}")
        if self.bounded:
            if self.keep >= self.size:
                raise UsageError(f"--keep ({self.keep}) must be smaller than --pot-size ({self.size})")
            if self.keep <= 0:
                raise UsageError(f"--pot-size {self.size} is too small: it keeps half of itself, {self.keep} entries"
                                 if self._keep_from_size else "--keep must be positive")
        return self

    def policy_block(self) -> dict:
        """What `--json` reports as the policy: the method and the options that apply to it."""
        out: dict[str, Any] = {"name": self.method, "alpha": self.alpha}
        if self.method in INFINIPOT_METHODS:
            out.update({k: getattr(self, k) for k in spec_options() if k != "alpha"})
        return out

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_saved(cls, saved: dict) -> "PotConfig":
        """The settings stored in a pot file. Options a pot was saved without take the paper's values (it was
        made before they existed); options no longer declared are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**PAPER_OPTIONS, **{k: v for k, v in saved.items() if k in names}})


SUMMARY_SPREAD = 16  # `summarize`'s spread when not given: its key points cover the whole document (summary.md)


def catalyst_room(cfg: PotConfig) -> int | None:
    """How many catalyst tokens a bounded pot can hold beside what it keeps and one token read (None: unbounded)."""
    return cfg.size - cfg.keep - 1 if cfg.bounded else None


def check_catalyst_room(cfg: PotConfig, catalyst_len: int, named: str = "", loaded: bool = False) -> None:
    """Raise UsageError when a catalyst of `catalyst_len` tokens (0: the policy forwards none) leaves a bounded
    pot no room to read. `named`: "question" or "--catalyst text" when the user wrote the catalyst: the message
    then names it as too long (`loaded`: the pot was loaded, its size is fixed); otherwise the pot is too small."""
    room = catalyst_room(cfg)
    if room is None or catalyst_len <= room:
        return
    if named:
        fix = f"shorten the {named}" + ("" if loaded else " (or raise --pot-size)")
        raise UsageError(f"the {named} is too long: {catalyst_len:,} tokens as a catalyst, and a pot of "
                         f"{cfg.size:,} entries keeping {cfg.keep:,} has room for {room:,}; {fix}")
    raise UsageError(f"the pot is too small: pot size {cfg.size} - keep {cfg.keep} - catalyst {catalyst_len} "
                     "tokens leaves no room to read; raise --pot-size or lower --keep")


def default(name: str):
    """The declared default of a field."""
    return next(f.default for f in dataclasses.fields(PotConfig) if f.name == name)


def declared() -> list[dataclasses.Field]:
    return list(dataclasses.fields(PotConfig))


def cli_knobs() -> list[dataclasses.Field]:
    """The fields with a CLI flag, in declaration order."""
    return [f for f in declared() if f.metadata.get("flag")]


def spec_options() -> dict[str, type]:
    """Options a method spec may set: alpha and the InfiniPot options, with their types."""
    out: dict[str, type] = {"alpha": float}
    for f in declared():
        if f.metadata.get("infinipot"):
            out[f.name] = type(f.default)
    return out


def option_name(name: str) -> str:
    """How a user names a field: its flag, else the method-spec option."""
    for f in declared():
        if f.name == name:
            return f.metadata.get("flag") or f"method option {name}"
    return name


def _range_text(f: dataclasses.Field) -> str:
    lo, hi = f.metadata.get("lo"), f.metadata.get("hi")
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}{')' if f.metadata['hi_open'] else ']'}"
    return f"at least {lo}" if lo is not None else f"at most {hi}"


# The paper's exact selection (InfiniPot §3.3.3: per-head top-k of single tokens by the CaP sum, answering
# from the pot's KV), one flag away as `--method infinipot-paper`.
PAPER_OPTIONS = {"share": False, "share_from": 0.0, "segment": 0, "relevance": False, "final_keep": 0,
                 "reencode": False, "recall": 0,
                 "spread": 0, "nuc_sample": False, "retrieve": "words"}
PRESETS = {"infinipot-paper": ("infinipot", PAPER_OPTIONS), "cap-paper": ("cap", PAPER_OPTIONS)}


def _parse(kind: type, val: str):
    if kind is bool:
        low = val.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(val)
    return kind(val)


def split_method_spec(spec: str) -> tuple[str, dict]:
    """"infinipot+segment=16+alpha=0.25" -> ("infinipot", {"segment": 16, "alpha": 0.25});
    "infinipot-paper+final_keep=512" -> ("infinipot", {**PAPER_OPTIONS, "final_keep": 512})."""
    parts = [p.strip() for p in spec.strip().split("+")]
    base, preset = PRESETS.get(parts[0].lower(), (parts[0].lower(), {}))
    opts = dict(preset)
    known = spec_options()
    for p in parts[1:]:
        key, _, val = p.partition("=")
        key = key.strip().replace("-", "_")
        if key not in known or not val:
            raise UsageError(f"bad method option {p!r} in {spec!r}; options: {', '.join(known)} "
                             "(e.g. infinipot+segment=32)")
        try:
            opts[key] = _parse(known[key], val.strip())
        except ValueError as e:
            raise UsageError(f"bad value in {p!r}") from e
    return base, opts


def method_help() -> str:
    opts = ", ".join(f"{k}" for k in spec_options())
    return (f"Selection method: {' | '.join(METHODS)}; infinipot-paper = the paper's exact selection. Options "
            f"as a spec: infinipot+segment=32+relevance=off (options: {opts}).")
