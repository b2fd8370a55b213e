#!/bin/bash
# 8K read, the commit before the expected words (pre: 4dc1671) and the current tree (new), alternated; runs 1-3 also
# had the expected words' first build (head: 00121f2). Each from its own folder: `python -m` puts the working folder
# first on sys.path. 64K: one run each (pre-64k, new-64k).
#   git worktree add /tmp/wt-pre 4dc1671
for r in 1 2 3 4 5 6 7; do
  for v in pre new; do
    case $v in pre) P=/tmp/wt-pre;; new) P=$PWD;; esac
    (cd $P && .venv/bin/python -m infinipot_cli bench speed --lengths 8k --methods infinipot --dtype bfloat16 --out /tmp/speed/$v-$r)
  done
done
