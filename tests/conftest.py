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


@pytest.fixture(scope="session")
def builtin():
    """The built-in model (SmolLM2-135M-Instruct), converted once into the user cache, loaded once per session."""
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


@pytest.fixture(scope="session")
def story_part(tmp_path_factory):
    """The first ~900 words of sample_docs/lighthouse.txt (whole paragraphs): enough for several distillations of a
    512-entry pot, a third of the story's read, for tests of saving and resuming rather than of answers."""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs", "lighthouse.txt")
    out, words = [], 0
    for para in open(src, encoding="utf-8").read().split("\n\n"):
        out.append(para)
        words += len(para.split())
        if words >= 900:
            break
    path = tmp_path_factory.mktemp("story") / "lighthouse-part.txt"
    path.write_text("\n\n".join(out) + "\n", encoding="utf-8")
    return str(path)
