#!/bin/sh
# `cmake --install` must lay out what a gateway package needs: both programs, the sample
# config, the systemd unit, and the docs the unit points at.
# Usage: test_install.sh BUILD_DIR
set -eu
build=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
cmake --install "$build" --prefix "$dest/usr" >/dev/null
fail=0
for f in usr/bin/elkd usr/bin/elk usr/etc/elkd.conf.sample usr/lib/systemd/system/elkd.service \
         usr/share/doc/edgelock/README.md usr/share/doc/edgelock/control-protocol.md; do
  if [ -f "$dest/$f" ]; then echo "ok: $f"; else echo "FAIL: $f not installed"; fail=1; fi
done
for p in elkd elk; do
  if "$dest/usr/bin/$p" --help >/dev/null 2>&1; then echo "ok: $p --help runs"; else echo "FAIL: $p --help"; fail=1; fi
done
grep -q '^ExecStart=/usr/bin/elkd ' "$dest/usr/lib/systemd/system/elkd.service" ||
  { echo "FAIL: unit does not start /usr/bin/elkd"; fail=1; }
exit $fail
