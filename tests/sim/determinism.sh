#!/bin/sh
# SPDX-License-Identifier: MIT
# Same seed and build -> byte-identical trace and the same hash; another seed -> another hash.
# Usage: determinism.sh /path/to/elk-sim
set -eu
sim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args="--runs 1 --gateways 4 --nodes 3 --faults harsh --duration-ms 8000 --trace"
"$sim" --seed 7 $args > "$tmp/a" 2>&1 || true
"$sim" --seed 7 $args > "$tmp/b" 2>&1 || true
"$sim" --seed 8 $args > "$tmp/c" 2>&1 || true
# The wall-clock figures legitimately differ between runs; nothing else may.
for f in a b c; do grep -v 'simulated hours per wall second' "$tmp/$f" > "$tmp/$f.t"; done
lines=$(wc -l < "$tmp/a.t")
if [ "$lines" -lt 1000 ]; then
  echo "FAIL: trace of seed 7 is suspiciously short ($lines lines)"; exit 1
fi
if ! cmp -s "$tmp/a.t" "$tmp/b.t"; then
  echo "FAIL: two runs of seed 7 differ:"; diff "$tmp/a.t" "$tmp/b.t" | head -20; exit 1
fi
ha=$(grep 'trace hash' "$tmp/a" | tail -1)
hc=$(grep 'trace hash' "$tmp/c" | tail -1)
if [ -z "$ha" ] || [ "$ha" = "$hc" ]; then
  echo "FAIL: seeds 7 and 8 gave the same hash ($ha)"; exit 1
fi
# Many runs in one process must not leak state between runs: seed 9 alone and as the
# third of three runs must hash the same.
one=$("$sim" --seed 9 --runs 1 --faults mild --duration-ms 5000 --quiet --trace 2>/dev/null | grep '^run seed 9:' || true)
three=$("$sim" --seed 7 --runs 3 --faults mild --duration-ms 5000 --quiet --trace 2>/dev/null | grep '^run seed 9:' || true)
if [ -z "$one" ] || [ "$one" != "$three" ]; then
  echo "FAIL: seed 9 alone ($one) and after seeds 7, 8 ($three) differ"; exit 1
fi
# --multi: the set each gateway asks for is drawn per attempt; two runs must still agree.
margs="--seed 7 --runs 2 --gateways 6 --resources 4 --multi 2 --faults harsh --duration-ms 5000 --quiet"
m1=$("$sim" $margs 2>/dev/null | grep 'trace hash' || true)
m2=$("$sim" $margs 2>/dev/null | grep 'trace hash' || true)
if [ -z "$m1" ] || [ "$m1" != "$m2" ]; then
  echo "FAIL: --multi 2, seed 7 twice differs ($m1 / $m2)"; exit 1
fi
echo "OK: seed 7 twice identical ($lines trace lines, $ha); seed 8 $hc; $one"
