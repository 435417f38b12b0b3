# SPDX-License-Identifier: MIT
# Shared helpers for the fault scenarios (sourced by s*_*.sh; see docs/faults.md).
# Each scenario runs in its own temp dir. Every process started through these helpers
# (redis-server, elk-faultproxy, elkd, elk) is tracked and stopped by the EXIT trap, even
# when the scenario fails or is interrupted, so nothing is left listening.
#
# Callers set before sourcing: ELKD ELK FAULTPROXY (paths of the built binaries).
SUP_PREFIX=elk-scen SUP_KEEP=${ELK_SCEN_KEEP:-0} SUP_STAMP=1
. "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"
S_DIR=$SUP_DIR
S_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1

# start_redis NAME [PORT] -> RPORT[NAME], RPID[NAME]; plain TCP on 127.0.0.1, no persistence.
declare -A RPORT RPID PPORT PCTL PPID_ ELKD_PID
start_redis() {
  sup_redis "$1" "${2:-}" plain
  RPORT[$1]=$SUP_RPORT
  RPID[$1]=$SUP_RPID
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
  wait_until 30 test -s "$out"
  line=$(head -1 "$out" 2>/dev/null)
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
    # extra [fleet] lines of a scenario (issue 20: vote_hygiene, quarantine), as given
    [ -n "${S_FLEET_EXTRA:-}" ] && printf '%s\n' "$S_FLEET_EXTRA"
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
  local gw=$1 conf=$2
  shift 2
  sup_elkd "$S_DIR/$gw.sock" "$S_DIR/elkd-$gw.log" "$conf" "$@"
  ELKD_PID[$gw]=$SUP_EPID
}
stop_elkd() {
  local gw=$1 rc
  kill -TERM "${ELKD_PID[$gw]}" 2>/dev/null
  wait "${ELKD_PID[$gw]}"
  rc=$?
  untrack "${ELKD_PID[$gw]}"
  return $rc
}
# wait_nodes GW N [TRIES]: until N nodes of GW's elkd are ready (bounded by 60 s; TRIES is
# accepted for old callers and ignored: the event is asserted, not its speed)
nodes_ready() { "$ELK" --socket "$S_DIR/$1.sock" status 2>/dev/null | grep -q "nodes_ready=$2/"; }
wait_nodes() { wait_until 60 nodes_ready "$1" "$2"; }
elk_gw() { local gw=$1; shift; "$ELK" --socket "$S_DIR/$gw.sock" "$@"; }

# The actuator: its own process (actuator.py serve, on $ACT_SOCK), apart from every gateway,
# as a real one is. A holder's command (work.sh) sends it steps; it runs each under
# `elk guard` (fencing state in $S_DIR/valve.state) on its own side, and logs it with the true
# time (never faked) in $S_DIR/act.log:
#   <ns> <gateway> <token> <start|tick|stop> <accepted|refused|->
# Freezing a gateway (SIGSTOP of elkd, elk run, command) never freezes a step that holds the
# guard. What `elk guard` said (refusals, who held it) is in $S_DIR/act/guard.err.
# actlog.py checks the log.
ACT_LOG="" ACT_PID=""
act_init() {
  ACT_LOG="$S_DIR/act.log"
  : >"$ACT_LOG"
  export ELK ACT_LOG ACT_STATE="$S_DIR/valve.state"
  if [ -z "$ACT_PID" ]; then
    # its own folder: scenarios clear "$S_DIR"/*.sock between variants
    mkdir -p "$S_DIR/act"
    export ACT_SOCK="$S_DIR/act/actuator.sock"
    python3 "$S_HERE/actuator.py" serve "$ACT_SOCK" "$ELK" 2>>"$S_DIR/act/actuator.log" &
    ACT_PID=$!
    track "$ACT_PID"
    wait_until 30 test -S "$ACT_SOCK" || { bad "the actuator process did not start"; finish; }
  fi
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
# with "any" also a refused one) after the log line count in ACT_MARK; prints its token.
# Bounded by 60 s (TRIES is accepted for old callers and ignored).
ACT_MARK=0
act_mark() { ACT_MARK=$(wc -l <"$ACT_LOG"); }
# last_tick GW WANT: the token of GW's last tick since ACT_MARK (WANT accepted or any)
last_tick() {
  tail -n +$((ACT_MARK + 1)) "$ACT_LOG" |
    awk -v g="$1" -v w="$2" '$2 == g && $4 == "tick" && (w == "any" || $5 == w) {t = $3} END {print t}'
}
# tick_seen GW WANT [PID]: 0 and the token on stdout once there is one; 2 when PID has
# exited without it (the wait is over), else 1
tick_seen() {
  local t
  t=$(last_tick "$1" "$2")
  if [ -n "$t" ]; then echo "$t"; return 0; fi
  [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && { t=$(last_tick "$1" "$2"); [ -n "$t" ] && { echo "$t"; return 0; }; return 2; }
  return 1
}
wait_tick() { wait_until 60 tick_seen "$1" "${3:-accepted}"; }
# wait_tick_for GW SECONDS [PID]: wait_tick with its own bound, over as soon as PID (the
# waiting `elk run`) has exited without the tick; prints the token.
wait_tick_for() { wait_until "$2" tick_seen "$1" accepted "${3:-}"; }
# run_bg GW VAR [elk run options] -- command...: starts `elk run` in the background with its
# pid in VAR (the elk process itself, so it can be paused and waited for)
run_bg() {
  local gw=$1 var=$2
  shift 2
  "$ELK" --socket "$S_DIR/$gw.sock" run "$@" >>"$S_DIR/run-$gw.log" 2>&1 &
  eval "$var=$!"
  track $!
}

# valve TTL_MS STOP_MS [WAIT_MIN_MS WAIT_MAX_MS]: a [resource valve] section (waits 20/60 ms)
valve() {
  printf '[resource valve]\nttl = %sms\nstop_margin = %sms\nwait_min = %sms\nwait_max = %sms' \
    "$1" "$2" "${3:-20}" "${4:-60}"
}
# gateway GW MODE "PORT..." BODY [PREFIX-COMMAND...]: $S_DIR/GW.conf (write_conf), its elkd
# started (wrapped in the prefix, as start_elkd does), and every node ready (else the
# scenario ends with a failed check)
gateway() {
  local gw=$1 ports=$3
  write_conf "$S_DIR/$gw.conf" "$gw" "$2" "$ports" "$4"
  shift 4
  start_elkd "$gw" "$S_DIR/$gw.conf" "$@"
  set -- $ports
  wait_nodes "$gw" $# || { bad "$gw never saw its $# node(s) ready"; finish; }
  # and voting: vote hygiene quarantines a server whose uptime is below the longest lease
  # (a fresh one, as here) until that has passed (issue 20, docs/design.md)
  wait_until 60 all_vote "$gw" $# || { bad "$gw never saw its $# node(s) vote"; finish; }
}
# proxied_fleet: redis servers r1..r3, each behind an elk-faultproxy p1..p3
proxied_fleet() {
  local n
  for n in 1 2 3; do
    start_redis r$n
    start_proxy p$n "${RPORT[r$n]}"
  done
}
# two_gateways TTL_MS STOP_MS: three redis servers r1..r3 and two gateways gw-a and gw-b,
# each an elkd over all three (redlock) with valve TTL_MS STOP_MS; starts the actuator log.
two_gateways() {
  local gw n
  for n in 1 2 3; do start_redis r$n; done
  for gw in gw-a gw-b; do gateway $gw redlock "${RPORT[r1]} ${RPORT[r2]} ${RPORT[r3]}" "$(valve "$1" "$2")"; done
  act_init
}

# ---- issue 20 (vote hygiene, lock-delay, heartbeat): s9..s12
# node_json GW NODE FIELD: one field of node NODE (n1, n2 ...) in GW's `elk status --json`
node_json() {
  elk_gw "$1" status --json 2>/dev/null | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
for n in d.get("nodes", []):
    if n.get("name") == sys.argv[1]:
        v = n.get(sys.argv[2], "")
        print(str(v).lower() if isinstance(v, bool) else v)' "$2" "$3"
}
# node_line GW NODE: GW's text STATUS line of node NODE
node_line() { ctl "$1" --quiet-ms 150 STATUS | grep "^node name=$2 "; }
# node_quarantined GW NODE: 0 while NODE is quarantined in GW's STATUS (JSON quarantined_ms > 0)
node_quarantined() { [ "$(node_json "$1" "$2" quarantined_ms)" -gt 0 ] 2>/dev/null; }
node_free() { [ "$(node_json "$1" "$2" quarantined_ms)" = 0 ]; }
# hold_bg GW VAR REQUEST...: hold.py on GW's socket in the background (pid in VAR), logging
# every line elkd sends with its receive times to $S_DIR/hold-GW.log
hold_bg() {
  local gw=$1 var=$2
  shift 2
  python3 "$S_HERE/hold.py" "$S_DIR/$gw.sock" "$S_DIR/hold-$gw.log" "$@" 2>>"$S_DIR/hold-$gw.err" &
  eval "$var=$!"
  track $!
}
# hold_seen GW WORD: 0 once GW's hold log has a line with WORD (ACQUIRED, ERR, LOST ...)
hold_seen() { file_has " $2 " "$S_DIR/hold-$1.log" || file_has " $2\$" "$S_DIR/hold-$1.log"; }
# key_pttl NODE KEY: PTTL of KEY on redis NODE (-2 absent, -1 no expiry)
key_pttl() { rcli "$1" pttl "$2" 2>/dev/null; }
# restart_empty NODE [DELAY_S]: kill -9 (no persistence: the data is gone), restart on the
# same port after DELAY_S seconds (default 0: at once)
restart_empty() {
  stop_redis "$1" KILL
  [ "${2:-0}" != 0 ] && sleep "$2"
  start_redis "$1" "${RPORT[$1]}"
}
# renewals_of GW RESOURCE / wait_renewals_of GW RESOURCE N: renewals in GW's STATUS; wait
# until N more (bounded by 60 s)
renewals_of() { res_field "$1" "$2" renewals; }
renewals_reached() { [ "$(renewals_of "$1" "$2")" -ge "$3" ] 2>/dev/null; }
wait_renewals_of() { wait_until 60 renewals_reached "$1" "$2" $(($(renewals_of "$1" "$2") + $3)); }
# warm_up GW RESOURCE N: N short grants, so the fence counters are well above what an
# empty node starts from
warm_up() {
  local i
  for i in $(seq 1 "$3"); do elk_gw "$1" run --wait 30s "$2" -- true || bad "warm-up grant $i failed"; done
}
# all_vote GW N: N nodes of GW vote (a freshly started server is quarantined by the vote
# hygiene until the longest lease could have run out: a scenario that needs every vote waits)
all_vote() { [ "$(ctl "$1" --quiet-ms 150 STATUS | grep -c '^node .* votes=yes')" -ge "$2" ]; }
wait_all_vote() { local gw; for gw in "$@"; do wait_until 60 all_vote "$gw" 3 || bad "$gw: not every node votes"; done; }
# busy_for GW RESOURCE: the exit status of one `elk run` attempt on RESOURCE (73: not
# acquired); unlike `elk acquire` it never stays holding when the attempt succeeds
busy_for() { elk_gw "$1" run "$2" -- true >/dev/null 2>&1; }
# check_refused MSG RC: the try of busy_for was not granted: 73 (held: a quorum said busy) or
# 76 (no quorum either way: on a loaded machine a node's busy answer can come after the
# try-once round has ended). Anything else, a grant (0) above all, fails.
check_refused() {
  case "$2" in
    73 | 76) ok "$1 (exit $2)" ;;
    *) bad "$1: expected 73 (held) or 76 (no quorum), got '$2'" ;;
  esac
}
