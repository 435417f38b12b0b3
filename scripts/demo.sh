#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo: a local TLS Redis fleet and agents contending for a simulated actuator.
# JOBS=N sets the build's parallel jobs (default: every core). The build's own output goes
# to build/demo-build.log and is shown only when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
cat <<INTRO
demo: three Redis servers over TLS on 127.0.0.1, three gateways (elkd) contending for one
      valve with 'elk run', an actuator that checks fencing tokens; then a server killed under
      a held lease, a stale command refused, a lease lost with its quorum, a clean stop.
demo: first the Debian packages it needs (scripts/install-deps.sh: minutes when they are
      missing), then the build of elkd, elk and the actuator (about 15 s on 2 cores the first
      time, JOBS=$jobs; seconds when already built), then the run itself (about 20 s).
INTRO
scripts/install-deps.sh
log=build/demo-build.log
mkdir -p build
# step WHAT CMD...: CMD's output into the log; on failure the log's end, and the exit status
step() {
  local what=$1 t0=$SECONDS
  shift
  printf 'demo: %s... ' "$what"
  if "$@" >>"$log" 2>&1; then
    echo "done ($((SECONDS - t0)) s)"
  else
    local rc=$?
    echo "FAILED (exit $rc); the last lines of $log:"
    tail -n 40 "$log" | sed 's/^/  | /'
    exit $rc
  fi
}
: >"$log"
step configuring cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
step "building with $jobs jobs" cmake --build build -j"$jobs"
if [ -x tests/demo/run-demo.sh ]; then
  exec tests/demo/run-demo.sh build
fi
echo "demo: the agent (elkd) and the demo fleet are not built yet; the library and its tests are."
echo "demo: run scripts/test.sh to see what works today."
