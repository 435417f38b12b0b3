#!/bin/bash
# SPDX-License-Identifier: MIT
# `elk timeline` in a real browser: pages from known records (one where two gateways hold
# valve-1 at once, one where they take turns) rendered by headless Chromium (Debian's
# chromium); the DOM after the page's script ran must have the bars, tokens and overlap
# highlights the record implies, zoom must move the bars, and a screenshot of each page is
# kept in the build folder as an artefact.
# Usage: test_timeline_browser.sh ELK OUTDIR     exit 0 pass, 1 fail, 77 no chromium
set -u
elk=$1; out=$2
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "SKIP: chromium not found (apt-get install chromium)"; exit 77; }
mkdir -p "$out"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fails=0
check() { # name expected actual
  if [ "$2" = "$3" ]; then echo "ok   $1 ($3)"; else echo "FAIL $1: expected '$2', got '$3'"; fails=$((fails + 1)); fi
}

t0=1795000000000
rec() { # gw ev res t pid token [cause]
  printf '{"schema":1,"seq":%d,"t":%d,"gw":"%s","ev":"%s","res":"%s","token":%s,"deadline":0,"uid":0,"pid":%d,"cmd":"work.sh","cause":"%s"}\n' \
    "$RANDOM" $((t0 + $4)) "$1" "$2" "$3" "$6" "$5" "${7:-}"
}
# gw-b's grant comes at $1 ms; gw-a holds from 100 to 4000 ms.
record() {
  rec gw-a wait valve-1 0 10 0
  rec gw-b wait valve-1 50 20 0
  rec gw-a grant valve-1 100 10 1795000000100123
  rec gw-a suspect valve-1 3000 10 1795000000100123
  rec gw-a release valve-1 4000 10 1795000000100123
  rec gw-b grant valve-1 "$1" 20 1795000003500001
  rec gw-b lost valve-1 8000 20 1795000003500001 ELK_E_LOCK_LOST
  rec gw-a grant pump-3 200 11 77
  rec gw-a release pump-3 900 11 77
}

dom() { # page [hash] -> DOM after the scripts ran, on stdout
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --virtual-time-budget=5000 --dump-dom "file://$1${2:-}" 2>/dev/null
}
shot() { # page png
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --window-size=1400,420 --screenshot="$2" "file://$1" >/dev/null 2>&1
}
# What the chart holds: the DOM up to the legend.
chart() { perl -0pe 's/<table class="legend">.*//s' "$1"; }
count() { grep -o "$1" | wc -l; }

for case in overlap turns; do
  if [ $case = overlap ]; then grant=3500; else grant=4200; fi
  record $grant > "$work/$case.jsonl"
  "$elk" timeline -o "$work/$case.html" --title "timeline test: $case" "$work/$case.jsonl" > "$work/$case.out" ||
    { echo "FAIL elk timeline ($case): $(cat "$work/$case.out")"; fails=$((fails + 1)); continue; }
  dom "$work/$case.html" > "$work/$case.dom"
  check "$case: the page's script ran" 1 "$(grep -c 'data-ready="1"' "$work/$case.dom")"
  check "$case: lanes" 3 "$(chart "$work/$case.dom" | count 'class="lane"')"
  check "$case: lease bars" 3 "$(chart "$work/$case.dom" | count 'class="bar hold')"
  check "$case: wait bars" 2 "$(chart "$work/$case.dom" | count 'class="bar wait')"
  check "$case: tokens on the bars" 3 "$(chart "$work/$case.dom" | count 'class="token"')"
  check "$case: SUSPECT marked" 1 "$(chart "$work/$case.dom" | count 'class="mark suspect"')"
  check "$case: loss marked" 1 "$(chart "$work/$case.dom" | count 'class="mark lost"')"
  if [ $case = overlap ]; then want_bars=2; want_bands=1; else want_bars=0; want_bands=0; fi
  check "$case: bars highlighted as overlapping" $want_bars "$(chart "$work/$case.dom" | count 'class="bar hold overlap')"
  check "$case: overlap bands" $want_bands "$(chart "$work/$case.dom" | count 'class="overlap-band"')"
  # Zoom: opened with #zoom-in the page shows the middle half of the record; gw-b's lease
  # (bar4) starts 3.5 or 4.2 s into the 8 s record, so its bar must move.
  x_whole=$(grep -o 'id="bar4"[^>]* x="[0-9.]*"' "$work/$case.dom" | sed -E 's/.* x="([0-9.]+)"/\1/')
  x_zoom=$(dom "$work/$case.html" "#zoom-in" | grep -o 'id="bar4"[^>]* x="[0-9.]*"' | sed -E 's/.* x="([0-9.]+)"/\1/')
  check "$case: zoom moves gw-b's lease" yes \
    "$(awk -v a="${x_whole:-0}" -v b="${x_zoom:-0}" 'BEGIN { d = b - a; if (d < 0) d = -d; print (a > 0 && d > 10) ? "yes" : "no (" a " -> " b ")" }')"
  shot "$work/$case.html" "$out/timeline-$case.png"
  check "$case: screenshot taken" yes "$([ -s "$out/timeline-$case.png" ] && echo yes || echo no)"
  cp "$work/$case.html" "$out/timeline-$case.html"
done
echo "pages and screenshots: $out"
echo "timeline browser test: $((fails == 0 ? 1 : 0)) passed, $((fails == 0 ? 0 : 1)) failed"
[ $fails -eq 0 ]
