#!/bin/sh
# SPDX-License-Identifier: MIT
# elk-sim --timeline: the page of one run. A run of a negative control that breaks
# exclusion has its violations marked and the overlapping holds in red; a clean run has
# neither; drawing a run changes nothing in it (same trace hash with and without the page).
# Usage: timeline.sh /path/to/elk-sim
set -u
sim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name expected actual
  if [ "$2" = "$3" ]; then echo "ok   $1 ($3)"; else echo "FAIL $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}
attr() { grep -o "$1=\"[0-9]*\"" "$2" | head -1 | grep -o '[0-9]*'; }
control="--runs 1 --faults harsh --duration-ms 6000 --control drift-beyond-bound"
good="--seed 1 --runs 1 --faults mild --duration-ms 6000"

# the first seed whose run of the control breaks exclusion (a few in a hundred do)
seed=1
while [ $seed -le 200 ] && ! "$sim" --seed $seed $control --expect-violations --quiet >/dev/null 2>&1; do
  seed=$((seed + 1))
done
echo "control run: seed $seed"
"$sim" --seed $seed $control --expect-violations --timeline "$tmp/bad.html" > "$tmp/bad.out" 2>&1
check "control run: elk-sim found its violations" 0 "$?"
check "control run: violations marked on the page" yes \
  "$([ "$(attr data-violations "$tmp/bad.html")" -ge 1 ] 2>/dev/null && echo yes || echo no)"
check "control run: overlapping holds highlighted" yes \
  "$([ "$(attr data-overlaps "$tmp/bad.html")" -ge 1 ] 2>/dev/null && echo yes || echo no)"
check "control run: a red band per overlap" "$(attr data-overlaps "$tmp/bad.html")" \
  "$(grep -o 'class="overlap-band"' "$tmp/bad.html" | wc -l)"
check "control run: the checker's lanes" yes \
  "$(grep -q 'checker / mutual_exclusion' "$tmp/bad.html" && echo yes || echo no)"

"$sim" $good --timeline "$tmp/good.html" > "$tmp/good.out" 2>&1
check "clean run: elk-sim exit" 0 "$?"
check "clean run: no violation marked" 0 "$(attr data-violations "$tmp/good.html")"
check "clean run: no overlap" 0 "$(attr data-overlaps "$tmp/good.html")"
check "clean run: its leases drawn" yes \
  "$([ "$(attr data-holds "$tmp/good.html")" -ge 5 ] 2>/dev/null && echo yes || echo no)"
"$sim" $good > "$tmp/plain.out" 2>&1
check "drawing changes nothing in the run (trace hash)" \
  "$(grep 'trace hash' "$tmp/plain.out")" "$(grep 'trace hash' "$tmp/good.out")"
"$sim" $good --runs 2 --timeline "$tmp/x.html" > /dev/null 2>&1
check "--timeline with more than one run is refused" 2 "$?"
echo "sim timeline: $((fails == 0 ? 1 : 0)) passed, $((fails == 0 ? 0 : 1)) failed"
[ $fails -eq 0 ]
