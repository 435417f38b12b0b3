#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo: a local TLS Redis fleet and agents contending for a simulated actuator.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
if [ -x tests/demo/run-demo.sh ]; then
  exec tests/demo/run-demo.sh build
fi
echo "demo: the agent (elkd) and the demo fleet are not built yet; the library and its tests are."
echo "demo: run scripts/test.sh to see what works today."
