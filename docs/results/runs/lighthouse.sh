#!/bin/bash
# 15 questions on sample_docs/lighthouse.txt, each asked from a saved pot and directly; run from the repository
# root: prints "question | pot:OK/bad answer | direct:OK/bad answer" (OK: the expected words are in the answer)
# EXTRA="--final-keep 384" bash lighthouse.sh: the same with extra options for read and the direct ask
inf() { .venv/bin/infinipot "$@" 2>/dev/null; }
inf read sample_docs/lighthouse.txt --save-pot /tmp/lh.pot $EXTRA >/dev/null
ok=0; dok=0
while IFS='|' read -r q want; do
  a=$(inf ask --load-pot /tmp/lh.pot "$q" | tr '\n' ' ')
  d=$(inf ask sample_docs/lighthouse.txt "$q" $EXTRA | tr '\n' ' ')
  ta=bad; td=bad
  echo "$a" | grep -qiE "$want" && { ta=OK; ok=$((ok+1)); }
  echo "$d" | grep -qiE "$want" && { td=OK; dok=$((dok+1)); }
  echo "$q | pot:$ta $a | direct:$td $d"
done <<'QS'
Who kept the lighthouse?|Fenwick
What is the island called?|Skerrow
When was the lighthouse built?|1871
How many steps lead to the lamp room?|137
What was the keeper's cat called?|Biscuit
What was the supply boat called?|Margaret Ann
How far can the light be seen?|twenty-two|22
Who came to count the seabirds in 1962?|Voss
Which ship got into trouble in the storm?|Aldebaran
When was the light automated?|1987
What was the name of the cat?|Biscuit
In what year was the tower built?|1871
What was the name of the Norwegian coaster?|Aldebaran
How tall is the tower?|seventy-four|74
Who skippered the supply boat?|Hamish
QS
echo "pot OK: $ok  direct OK: $dok"
