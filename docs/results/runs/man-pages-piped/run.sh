#!/bin/bash
# Asks each question of qs.tsv (man page, question, acceptable answers) over `man PAGE | col -b` piped on stdin,
# as a user would, with a pot cache of its own (OUTDIR.cache) so that runs of two versions share nothing.
# usage: run.sh OUTDIR   (then: python3 grade.py before after)
here=$(cd "$(dirname "$0")" && pwd)
out=$1; mkdir -p "$out" "$out.cache/pots"
ln -sfn ~/.cache/infinipot/models "$out.cache/models"   # the converted model, not converted again
export INFINIPOT_CACHE=$(cd "$out.cache" && pwd)
i=0
while IFS=$'\t' read -r doc q gold; do
  i=$((i+1))
  man "$doc" 2>/dev/null | col -b | infinipot ask - "$q" --json > "$out/$i.json" 2> "$out/$i.err"
done < "$here/qs.tsv"
