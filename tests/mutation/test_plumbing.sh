#!/bin/bash
# SPDX-License-Identifier: MIT
# The mutation runner's own plumbing, without building anything: the catalog applies to
# this tree (every snippet exactly once), broken catalogs are refused loudly (exit 2),
# and a sample is reproducible from its seed.
set -u
D=$(dirname "$0")
RUN="python3 $D/mutate.py"
fails=0
check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi; }
$RUN --check; check "the catalog applies to this tree" 0 $?
n=$(python3 -c "import importlib.util as u; s=u.spec_from_file_location('c','$D/catalog.py'); m=u.module_from_spec(s); s.loader.exec_module(m); print(len(m.MUTANTS))")
[ "$n" -ge 40 ]; check "at least 40 mutants ($n)" 0 $?
for k in missing twice nofile; do
  out=$(MUTATION_SELFTEST=$k $RUN --catalog "$D/selftest_catalogs.py" --only selftest.$k 2>&1)
  check "a $k snippet stops the runner (exit 2)" 2 $?
  case "$out" in *"CATALOG DOES NOT APPLY"*) echo "ok: it says why" ;; *) echo "FAIL: no reason: $out"; fails=$((fails + 1)) ;; esac
done
# A snippet survives reformatting (white space changed, e.g. by clang-format), applies at
# the one place it stands, and stays refused where it is ambiguous or absent.
fmt=$(python3 - "$D" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import mutate
text = "if (a &&\n        b) {\n    x = y + 1;\n}\nz = y+1;\n"
m = {"old": "if (a && b) {", "new": "if (a || b) {"}
print(len(mutate.find_snippet(text, m["old"])), mutate.apply_mutant(text, m).splitlines()[0],
      len(mutate.find_snippet(text, "y + 1")), len(mutate.find_snippet(text, "q = 2")),
      len(mutate.find_snippet(text, "y+1;")))
PY
)
check "a reformatted snippet is found once and applied" "1 if (a || b) { 1 0 1" "$fmt"
a=$($RUN --sample 8 --seed 0123abc --dry-run | grep 'would run')
b=$($RUN --sample 8 --seed 0123abc --dry-run | grep 'would run')
c=$($RUN --sample 8 --seed 4567def --dry-run | grep 'would run')
check "the same seed picks the same sample" "$a" "$b"
check "8 mutants in a sample of 8" 8 "$(echo "$a" | wc -l)"
[ "$a" != "$c" ]; check "another seed picks another sample" 0 $?
[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
