import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
torch.set_num_threads(min(2, os.cpu_count() or 1))
# The pot cache is off in tests (a command on a document read before would answer from it, not read):
# tests/test_pot_cache.py turns it on in a folder of its own. Subprocesses inherit this.
os.environ["INFINIPOT_CACHE_BUDGET"] = "0"


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true",
                     help="also run the slow real-model checks, the benches' end-to-end runs and the tests that build "
                          "native code (make test-all)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long real-model check; runs with --run-slow (make test-all)")
    config.addinivalue_line("markers", "bench: a bench run end to end (tables, JSON, figures), its parts tested "
                                       "apart; runs with --run-slow (make test-all)")
    config.addinivalue_line("markers", "native: builds a native library (a C++ compile, tens of seconds); runs with "
                                       "--run-slow (make test-all)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = {"slow": pytest.mark.skip(reason="slow real-model check: make test-all runs it"),
            "bench": pytest.mark.skip(reason="a bench end to end: make test-all runs it"),
            "native": pytest.mark.skip(reason="builds native code: make test-all runs it")}
    for item in items:
        for mark in ("slow", "bench", "native"):
            if mark in item.keywords:
                item.add_marker(skip[mark])
                break


# What loading a model reads besides its arguments and its folder.
_LOAD_ENV = ("INFINIPOT_MODEL", "INFINIPOT_DECODE", "INFINIPOT_CPU_BF16", "INFINIPOT_CUDA_GRAPHS")
_SHARED: dict = {}  # _shared_key -> what load_model / load_tokenizer returned for it


def _shared_key(kind: str, name):
    """What load_model / load_tokenizer (`kind`) of -m `name` is shared under, or None where it is loaded anew: the
    built-in model (by any of its names) from its converted folder, under the same environment; and a model
    folder's tokenizer, as the folder's files are now (a test that changes them gets a new load)."""
    from infinipot_cli.runtime import catalogue, loading

    env = tuple(os.environ.get(k) for k in _LOAD_ENV)
    if (name or os.environ.get("INFINIPOT_MODEL") or loading.BUILTIN_NAME) in loading.BUILTIN_ALIASES:
        folder = catalogue.find_converted(catalogue.BUILTIN.folder)  # None: not converted yet (it converts)
        return None if folder is None else (kind, env, str(folder))
    if kind == "tokenizer" and name and os.path.isdir(name):
        files = tuple(sorted((e.name, e.stat().st_mtime_ns, e.stat().st_size) for e in os.scandir(name)))
        return (kind, env, os.path.realpath(name), files)
    return None


@pytest.fixture(scope="session", autouse=True)
def _shared_load():
    """One load of the built-in model per session, for the `builtin` fixture and for every command run in-process
    (CliRunner), and one load of each model's tokenizer: `load_model` of the built-in model on the default device
    and dtype gives the model loaded before (a load takes ~1.5 s of CPU, the tokenizer's another ~0.4 s, once for
    every command the in-process tests run). Another model, device or dtype, another
    $INFINIPOT_DECODE, a cache without the converted model, a model folder whose files changed: loaded as they
    would be. The commands run as subprocesses load their own."""
    from infinipot_cli.runtime import loading

    real_model, real_tokenizer = loading.load_model, loading.load_tokenizer

    def load_model(name=None, device=None, dtype=None, progress=None, tokenizer=None):
        key = _shared_key("model", name) if device is None and dtype is None else None
        if key is not None and key in _SHARED:
            return _SHARED[key]
        lm = real_model(name, device, dtype, progress=progress, tokenizer=tokenizer)
        if key is not None:
            _SHARED[key] = lm
        return lm

    def load_tokenizer(name=None, progress=None):
        key = _shared_key("tokenizer", name)
        if key is not None and key in _SHARED:
            return _SHARED[key]
        got = real_tokenizer(name, progress=progress)
        if key is not None:
            _SHARED[key] = got
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loading, "load_model", load_model)
        mp.setattr(loading, "load_tokenizer", load_tokenizer)
        yield


@pytest.fixture(scope="session")
def builtin(_shared_load):
    """The built-in model (SmolLM2-135M-Instruct), converted once into the user cache, loaded once per session
    (and shared with the commands run in-process: _shared_load)."""
    from infinipot_cli.runtime.loading import load_model

    return load_model(None)


@pytest.fixture(scope="session")
def builtin_tok():
    """The built-in model's tokenizer alone (no weights loaded); skips when the model package is absent."""
    from transformers import AutoTokenizer

    from infinipot_cli.runtime.loading import builtin_model_path

    try:
        path = builtin_model_path()
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"built-in tokenizer unavailable: {e}")
    return AutoTokenizer.from_pretrained(str(path))


def _story_paragraphs(words_at_least: int) -> str:
    """The first whole paragraphs of sample_docs/lighthouse.txt that hold `words_at_least` words (a prefix of it)."""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs", "lighthouse.txt")
    out, words = [], 0
    for para in open(src, encoding="utf-8").read().split("\n\n"):
        out.append(para)
        words += len(para.split())
        if words >= words_at_least:
            break
    return "\n\n".join(out) + "\n"


@pytest.fixture(scope="session")
def story_opening(tmp_path_factory):
    """The first ~270 words of sample_docs/lighthouse.txt (its title and first three paragraphs, ~380 tokens: a
    512-entry pot holds them without distilling), for tests of the command line's mechanics, not of reading."""
    path = tmp_path_factory.mktemp("story") / "lighthouse-opening.txt"
    path.write_text(_story_paragraphs(270), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def story_part(tmp_path_factory):
    """The first ~900 words of sample_docs/lighthouse.txt (whole paragraphs): enough for several distillations of a
    512-entry pot, a third of the story's read, for tests of saving and resuming rather than of answers."""
    path = tmp_path_factory.mktemp("story") / "lighthouse-part.txt"
    path.write_text(_story_paragraphs(900), encoding="utf-8")
    return str(path)
