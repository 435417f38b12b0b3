# Shared helpers for the fault scenarios (sourced by s*_*.sh; see docs/faults.md).
# Each scenario runs in its own temp dir. Every process started through these helpers
# (redis-server, elk-faultproxy, elkd, elk) is tracked and stopped by the EXIT trap, even
# when the scenario fails or is interrupted, so nothing is left listening.
#
# Callers set before sourcing: ELKD ELK FAULTPROXY (paths of the built binaries).
set -u
S_DIR=$(mktemp -d /tmp/elk-scen.XXXXXX)
S_PIDS=""
S_FAILS=0
S_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
S_T0=$(date +%s%3N)
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1

s_cleanup() {
  local p
  for p in $S_PIDS; do kill -CONT "$p" 2>/dev/null; done
  for p in $S_PIDS; do kill -TERM "$p" 2>/dev/null; done
  sleep 0.3
  for p in $S_PIDS; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ "${ELK_SCEN_KEEP:-0}" = 1 ]; then echo "kept $S_DIR"; else rm -rf "$S_DIR"; fi
}
trap s_cleanup EXIT
trap 'exit 130' INT TERM

track() { S_PIDS="$S_PIDS $1"; }
untrack() { S_PIDS=$(echo " $S_PIDS " | sed "s/ $1 / /"); }

say() {
  local now
  now=$(date +%s%3N)
  printf '[%3d.%03ds] %s\n' $(((now - S_T0) / 1000)) $(((now - S_T0) % 1000)) "$*"
}
ok() { say "ok: $*"; }
bad() { say "FAIL: $*"; S_FAILS=$((S_FAILS + 1)); }
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
finish() {
  if [ "$S_FAILS" -ne 0 ]; then
    echo "$S_FAILS check(s) failed"
    local f
    for f in "$S_DIR"/*.log; do
      [ -f "$f" ] || continue
      echo "--- $f (last 25 lines)"
      tail -25 "$f"
    done
    exit 1
  fi
  echo "all checks passed"
  exit 0
}

now_ms() { date +%s%3N; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_redis NAME [PORT] -> RPORT[NAME], RPID[NAME]; plain TCP on 127.0.0.1, no persistence.
declare -A RPORT RPID PPORT PCTL PPID_ ELKD_PID
start_redis() {
  local name=$1 want=${2:-} port pid i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    port=${want:-$(free_port)}
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$S_DIR" --logfile "$S_DIR/redis-$name.rlog" >/dev/null 2>&1 &
    pid=$!
    track "$pid"
    for _ in $(seq 1 50); do
      if redis-cli -p "$port" ping >/dev/null 2>&1; then
        RPORT[$name]=$port
        RPID[$name]=$pid
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    [ -n "$want" ] && sleep 0.3 # same port asked for: it may still be in use for a moment
  done
  echo "cannot start redis-server $name"
  exit 1
}
stop_redis() { # stop_redis NAME [SIGNAL]
  local name=$1 sig=${2:-KILL}
  kill -"$sig" "${RPID[$name]}" 2>/dev/null
  wait "${RPID[$name]}" 2>/dev/null
  untrack "${RPID[$name]}"
}
rcli() { local name=$1; shift; redis-cli -p "${RPORT[$name]}" "$@"; }

# start_proxy NAME UPSTREAM_PORT -> PPORT[NAME] (listen), PCTL[NAME] (control)
start_proxy() {
  local name=$1 up=$2 out line=""
  out="$S_DIR/proxy-$name.out"
  "$FAULTPROXY" --upstream "$up" ${3:+--seed "$3"} >"$out" 2>"$S_DIR/proxy-$name.log" &
  PPID_[$name]=$!
  track "${PPID_[$name]}"
  for _ in $(seq 1 100); do
    line=$(head -1 "$out" 2>/dev/null)
    [ -n "$line" ] && break
    sleep 0.02
  done
  [ -n "$line" ] || { echo "elk-faultproxy $name did not start"; cat "$S_DIR/proxy-$name.log"; exit 1; }
  PPORT[$name]=${line% *}
  PCTL[$name]=${line#* }
}
# pctl NAME COMMAND...: one control command, prints the proxy's reply line
pctl() {
  local name=$1 reply
  shift
  exec 7<>"/dev/tcp/127.0.0.1/${PCTL[$name]}" || return 1
  printf '%s\n' "$*" >&7
  IFS= read -r -t 5 reply <&7
  exec 7>&-
  echo "$reply"
}

# write_conf FILE GATEWAY MODE "PORT1 PORT2 ..." RESOURCE-SECTION-BODY
# Nodes are named n1, n2, ... in the order of the ports. The resource body is inserted as is.
write_conf() {
  local f=$1 gw=$2 mode=$3 ports=$4 body=$5 i=0 p
  {
    echo "[fleet]"
    echo "mode = $mode"
    echo "gateway_id = $gw"
    echo "key_prefix = scen:"
    echo "connect_timeout = ${S_CONNECT_TIMEOUT:-300ms}"
    echo "request_timeout = ${S_REQUEST_TIMEOUT:-200ms}"
    for p in $ports; do
      i=$((i + 1))
      printf '[node n%d]\nhost = 127.0.0.1\nport = %s\n' "$i" "$p"
    done
    printf '%s\n' "$body"
    echo "[agent]"
    echo "socket = $S_DIR/$gw.sock"
    echo "log_level = ${S_LOG_LEVEL:-info}"
    echo "safety_check = off"
  } >"$f"
}

# start_elkd GW CONF [PREFIX-COMMAND...] -> ELKD_PID[GW]; waits for the control socket.
# A prefix (e.g. env LD_PRELOAD=... or valgrind) wraps elkd only.
start_elkd() {
  local gw=$1 conf=$2 pid
  shift 2
  "$@" "$ELKD" -c "$conf" -f >>"$S_DIR/elkd-$gw.log" 2>&1 &
  pid=$!
  ELKD_PID[$gw]=$pid
  track "$pid"
  for _ in $(seq 1 300); do
    if "$ELK" --socket "$S_DIR/$gw.sock" status >/dev/null 2>&1; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "elkd $gw died:"; cat "$S_DIR/elkd-$gw.log"; exit 1; }
    sleep 0.05
  done
  echo "elkd $gw did not come up"
  cat "$S_DIR/elkd-$gw.log"
  exit 1
}
stop_elkd() {
  local gw=$1 rc
  kill -TERM "${ELKD_PID[$gw]}" 2>/dev/null
  wait "${ELKD_PID[$gw]}"
  rc=$?
  untrack "${ELKD_PID[$gw]}"
  return $rc
}
# wait_nodes GW N [TRIES]: until N nodes of GW's elkd are ready
wait_nodes() {
  local gw=$1 n=$2 tries=${3:-200}
  for _ in $(seq 1 "$tries"); do
    if "$ELK" --socket "$S_DIR/$gw.sock" status 2>/dev/null | grep -q "nodes_ready=$n/"; then return 0; fi
    sleep 0.05
  done
  return 1
}
elk_gw() { local gw=$1; shift; "$ELK" --socket "$S_DIR/$gw.sock" "$@"; }

# The actuator: every command a holder sends goes through `elk guard` (fencing state in
# $S_DIR/valve.state) and is logged with the true time (never faked) in $S_DIR/act.log:
#   <ns> <gateway> <token> <start|tick|stop> <accepted|refused|->
# work.sh is the holder's command (see there). actlog.py checks the log.
ACT_LOG=""
act_init() {
  ACT_LOG="$S_DIR/act.log"
  : >"$ACT_LOG"
  export ELK ACT_LOG ACT_STATE="$S_DIR/valve.state"
}
WORK="$S_HERE/work.sh"
act_check() { python3 "$S_HERE/actlog.py" "$ACT_LOG" "$@"; }
# ctl GW REQUEST...: raw control-socket requests, prints what elkd answered (ctl.py)
ctl() { local gw=$1; shift; python3 "$S_HERE/ctl.py" "$S_DIR/$gw.sock" "$@"; }
# res_field GW RESOURCE KEY: one key=value of a resource's STATUS line
res_field() {
  ctl "$1" --quiet-ms 150 STATUS | awk -v r="name=$2" -v k="$3=" \
    '$1 == "resource" && $2 == r { for (i = 3; i <= NF; i++) if (index($i, k) == 1) print substr($i, length(k) + 1) }'
}
# wait_tick GW [TRIES] [any]: until GW's command has driven the actuator (an accepted tick;
# with "any" also a refused one) after the log line count in ACT_MARK; prints its token
ACT_MARK=0
act_mark() { ACT_MARK=$(wc -l <"$ACT_LOG"); }
wait_tick() {
  local gw=$1 tries=${2:-300} want=${3:-accepted} t
  for _ in $(seq 1 "$tries"); do
    t=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | awk -v g="$gw" -v w="$want" '$2 == g && $4 == "tick" && (w == "any" || $5 == w) {t = $3} END {print t}')
    if [ -n "$t" ]; then echo "$t"; return 0; fi
    sleep 0.02
  done
  return 1
}
# wait_tick_for GW SECONDS [PID]: like wait_tick, bounded by time instead of tries (a
# loaded machine makes every try slower), and over as soon as PID (the waiting `elk run`)
# has exited without the tick; prints the token. Use generous bounds: an event, not speed.
wait_tick_for() {
  local gw=$1 end=$(( $(date +%s) + $2 )) pid=${3:-} t
  while :; do
    t=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | awk -v g="$gw" '$2 == g && $4 == "tick" && $5 == "accepted" {t = $3} END {print t}')
    if [ -n "$t" ]; then echo "$t"; return 0; fi
    [ "$(date +%s)" -ge "$end" ] && return 1
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      t=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | awk -v g="$gw" '$2 == g && $4 == "tick" && $5 == "accepted" {t = $3} END {print t}')
      [ -n "$t" ] && { echo "$t"; return 0; }
      return 1
    fi
    sleep 0.05
  done
}
# run_bg GW VAR [elk run options] -- command...: starts `elk run` in the background with its
# pid in VAR (the elk process itself, so it can be paused and waited for)
run_bg() {
  local gw=$1 var=$2
  shift 2
  "$ELK" --socket "$S_DIR/$gw.sock" run "$@" >>"$S_DIR/run-$gw.log" 2>&1 &
  eval "$var=$!"
  track $!
}
