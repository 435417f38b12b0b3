# SPDX-License-Identifier: MIT
# The one shell library of the end-to-end tests: a private temp dir, every process started
# through it tracked and stopped on exit (even when a check fails or the test is
# interrupted), checks that count failures, and launchers for redis-server (plain or TLS,
# 127.0.0.1 only, no persistence) and elkd. tests/agent/lib.sh and tests/scenarios/lib.sh
# source it and add their own flavour of start_redis / start_elkd / rcli on top.
#
# Set before sourcing (all optional):
#   SUP_PREFIX    name of the temp dir under /tmp (default elk-test)
#   SUP_KEEP      "1" keeps the temp dir for debugging (each flavour maps its own variable)
#   SUP_STAMP=1   prefix ok/FAIL lines with the time since the start
# Waits are bounded by time, never by a count of tries: on a loaded machine every try is
# slower, and a test asserts that an event happens, not how fast.
set -u
SUP_DIR=$(mktemp -d "/tmp/${SUP_PREFIX:-elk-test}.XXXXXX")
SUP_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUP_PIDS=""
SUP_FAILS=0
SUP_T0=$(date +%s%3N)

sup_cleanup() {
  local p
  for p in $SUP_PIDS; do kill -CONT "$p" 2>/dev/null; done
  for p in $SUP_PIDS; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.3
  for p in $SUP_PIDS; do kill -KILL "$p" 2>/dev/null; done
  for p in $SUP_PIDS; do wait "$p" 2>/dev/null; done
  if [ "${SUP_KEEP:-0}" = 1 ]; then echo "kept $SUP_DIR"; else rm -rf "$SUP_DIR"; fi
}
trap sup_cleanup EXIT
trap 'exit 130' INT TERM

track() { SUP_PIDS="$SUP_PIDS $1"; }
untrack() { SUP_PIDS=$(echo " $SUP_PIDS " | sed "s/ $1 / /"); }

now_ms() { date +%s%3N; }
# log_ms: the time stamp of the elkd log line on stdin (HH:MM:SS.mmmZ at its start, UTC) in
# ms of the day; only the first line is read
log_ms() { awk -F'[:.Z ]' '{print (($1 * 60 + $2) * 60 + $3) * 1000 + $4; exit}'; }
say() {
  local now
  now=$(now_ms)
  printf '[%3d.%03ds] %s\n' $(((now - SUP_T0) / 1000)) $(((now - SUP_T0) % 1000)) "$*"
}
sup_print() { if [ "${SUP_STAMP:-0}" = 1 ]; then say "$*"; else echo "$*"; fi; }
ok() { sup_print "ok: $*"; }
bad() { sup_print "FAIL: $*"; SUP_FAILS=$((SUP_FAILS + 1)); }
check() { # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}
check_true() { # check_true DESCRIPTION STATUS (0 = holds)
  if [ "$2" -eq 0 ]; then ok "$1"; else bad "$1"; fi
}
check_contains() { # check_contains DESCRIPTION NEEDLE HAYSTACK
  case "$3" in
    *"$2"*) ok "$1" ;;
    *) bad "$1: '$2' not found in: $3" ;;
  esac
}
# figure NAME VALUE: one measured figure, in a fixed form the docs and the lead can grep
figure() { echo "FIGURE $(basename "$0" .sh) $1=$2"; }
# finish: exit 0 when every check held, else 1 after the tail of every log in the temp dir
finish() {
  if [ "$SUP_FAILS" -ne 0 ]; then
    echo "$SUP_FAILS check(s) failed"
    local f
    for f in "$SUP_DIR"/*.log; do
      [ -f "$f" ] || continue
      echo "--- $f (last 30 lines)"
      tail -30 "$f"
    done
    exit 1
  fi
  echo "all checks passed"
  exit 0
}

# wait_until SECONDS COMMAND...: until COMMAND succeeds (polled every 50 ms); 1 when
# SECONDS pass without it, or at once when COMMAND returns 2 (it never will, e.g. the
# process it waits for died). Give generous bounds: it is the event that is asserted.
wait_until() {
  local end=$(($(date +%s) + $1)) rc
  shift
  while :; do
    "$@"
    rc=$?
    [ $rc -eq 0 ] && return 0
    [ $rc -eq 2 ] && return 1
    [ "$(date +%s)" -ge "$end" ] && return 1
    sleep 0.05
  done
}

# file_has PATTERN FILE: grep -q that is simply false while FILE does not exist yet (grep's
# own 2 for a missing file would end a wait_until at once: a background writer's redirect
# may not have created the file when the wait starts).
file_has() { [ -f "$2" ] && grep -q -- "$1" "$2"; }

# wait_for SECONDS 'CONDITION': wait_until for a shell condition, evaluated afresh each time
# (single-quote it so that $(...) and variables are read on every try)
wait_for() { wait_until "$1" eval "$2"; }

# gone PID: 0 once PID has exited (for wait_until)
gone() { ! kill -0 "$1" 2>/dev/null; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# sup_redis NAME PORT plain|tls -> SUP_RPORT, SUP_RPID, SUP_RSOCK. PORT empty: a free port
# (another one is tried when it was taken meanwhile); given: that port, retried for a while
# (a restart: it may still be in use for a moment). TLS uses the certificates of gen_certs.
# Every server also listens on $SUP_DIR/redis-NAME.sock: readiness (PING) is asked there,
# so it works for TLS servers too. Its log is $SUP_DIR/redis-NAME.rlog.
sup_redis() {
  local name=$1 want=$2 mode=$3 port pid i
  local sock="$SUP_DIR/redis-$name.sock" tls=()
  for i in $(seq 1 10); do
    port=${want:-$(free_port)}
    if [ "$mode" = tls ]; then
      tls=(--port 0 --tls-port "$port" --tls-cert-file "$SUP_DIR/server.pem" --tls-key-file "$SUP_DIR/server.key"
        --tls-ca-cert-file "$SUP_DIR/ca.pem" --tls-auth-clients no)
    else
      tls=(--port "$port")
    fi
    rm -f "$sock"
    redis-server "${tls[@]}" --bind 127.0.0.1 --save '' --appendonly no --unixsocket "$sock" \
      --dir "$SUP_DIR" --logfile "$SUP_DIR/redis-$name.rlog" >/dev/null 2>&1 &
    pid=$!
    track "$pid"
    if wait_until 20 sup_redis_up "$sock" "$pid"; then
      SUP_RPORT=$port SUP_RPID=$pid SUP_RSOCK=$sock
      return 0
    fi
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    untrack "$pid"
    [ -n "$want" ] && sleep 0.3
  done
  echo "cannot start redis-server $name"
  cat "$SUP_DIR/redis-$name.rlog" 2>/dev/null
  exit 1
}
# sup_redis_up SOCK PID: 0 when PING answers, 2 when the server died (the port was taken:
# the caller tries another at once), else 1
sup_redis_up() {
  redis-cli -s "$1" ping >/dev/null 2>&1 && return 0
  kill -0 "$2" 2>/dev/null || return 2
  return 1
}

# sup_elkd SOCK LOG CONF [PREFIX-COMMAND...] -> SUP_EPID: starts elkd in the foreground
# (a prefix such as `env LD_PRELOAD=...` or valgrind wraps elkd only), output appended to
# LOG, and waits until its control socket answers. Exits the test when elkd dies or does
# not come up within 60 s.
sup_elkd() {
  local sock=$1 log=$2 conf=$3 pid
  shift 3
  "$@" "$ELKD" -c "$conf" -f >>"$log" 2>&1 &
  pid=$!
  SUP_EPID=$pid
  track "$pid"
  local end=$(($(date +%s) + 60))
  while :; do
    "$ELK" --socket "$sock" status >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { echo "elkd died:"; cat "$log"; exit 1; }
    [ "$(date +%s)" -ge "$end" ] && { echo "elkd did not come up"; cat "$log"; exit 1; }
    sleep 0.05
  done
}

# gen_certs: a CA, a server certificate for localhost/127.0.0.1 and an unrelated CA
# (other-ca), all EC P-256, in $SUP_DIR.
gen_certs() {
  (
    cd "$SUP_DIR" || exit 1
    for ca in ca other-ca; do
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $ca.key \
        -out $ca.pem -days 2 -subj "/CN=elk test $ca" || exit 1
    done
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key \
      -out server.csr -subj "/CN=localhost" || exit 1
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
      -extfile server.ext || exit 1
  ) >"$SUP_DIR/openssl.log" 2>&1 || { echo "openssl failed:"; cat "$SUP_DIR/openssl.log"; exit 1; }
}
