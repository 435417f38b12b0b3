#!/bin/bash
# SPDX-License-Identifier: MIT
# Every shipped configs/*_defconfig must build lib/ and the ports it names: README tells
# users to start from them (cmake -DELK_DEFCONFIG=...), and a defconfig whose pool
# blocks cannot hold the longest request fails lib/lock's build-time check.
# Usage: defconfigs_build.sh ROOT OUTDIR
set -u
ROOT=$1 OUT=$2
mkdir -p "$OUT"
fail=0 n=0
for cfg in "$ROOT"/configs/*_defconfig; do
  name=$(basename "$cfg")
  dir="$OUT/$name"
  rm -rf "$dir"
  n=$((n + 1))
  if cmake -S "$ROOT" -B "$dir" -DELK_LIB_ONLY=ON -DELK_DEFCONFIG="$cfg" >"$dir.log" 2>&1 &&
     cmake --build "$dir" -j2 >>"$dir.log" 2>&1; then
    echo "ok: $name"
  else
    echo "FAIL: $name (log: $dir.log)"; grep -E 'error' "$dir.log" | head -5
    fail=$((fail + 1))
  fi
done
[ "$n" -gt 0 ] || { echo "FAIL: no defconfig found under $ROOT/configs"; exit 1; }
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
