# Helpers for the fault scenarios (sourced by scenarios.sh): a private temp dir, redis
# servers on 127.0.0.1 ephemeral ports behind elk-faultproxy, elkd agents, and checks.
# Every process started here is stopped on exit, including SIGSTOPped ones.
set -u
FT_DIR=$(mktemp -d /tmp/elk-faults.XXXXXX)
FT_PIDS=""
FT_FAILS=0

ft_cleanup() {
  local p
  for p in $FT_PIDS; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 1 20); do
    local alive=0
    for p in $FT_PIDS; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for p in $FT_PIDS; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ "${ELK_TEST_KEEP:-0}" = 1 ]; then echo "kept $FT_DIR"; else rm -rf "$FT_DIR"; fi
}
trap ft_cleanup EXIT

track() { FT_PIDS="$FT_PIDS $1"; }
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; FT_FAILS=$((FT_FAILS + 1)); }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi; }
figure() { echo "figure: $*"; }   # a measurement, printed, never asserted against a time
finish() {
  if [ "$FT_FAILS" -ne 0 ]; then
    echo "$FT_FAILS check(s) failed"
    for f in "$FT_DIR"/elkd-*.log; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; }; done
    exit 1
  fi
  echo "all checks passed"; exit 0
}
now_ms() { date +%s%3N; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_redis NAME [PORT] -> REDIS_PORT_<NAME>, REDIS_PID_<NAME> (no persistence)
start_redis() {
  local name=$1 want=${2:-} port pid i
  for i in 1 2 3 4 5; do
    port=${want:-$(free_port)}
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$FT_DIR" \
      --logfile "$FT_DIR/redis-$name.log" >/dev/null 2>&1 &
    pid=$!; track "$pid"
    for _ in $(seq 1 50); do
      if redis-cli -p "$port" ping >/dev/null 2>&1; then
        eval "REDIS_PORT_$name=$port REDIS_PID_$name=$pid"; return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    [ -n "$want" ] && sleep 0.3
  done
  echo "cannot start redis-server $name"; exit 1
}
rcli() { local port=$1; shift; redis-cli -p "$port" "$@"; }

# start_proxy NAME UPSTREAM [options] -> PROXY_PORT_<NAME>, PROXY_CTL_<NAME>
start_proxy() {
  local name=$1 up=$2; shift 2
  local f="$FT_DIR/proxy-$name.ports"
  "$FAULTPROXY" --upstream "$up" "$@" > "$f" 2>>"$FT_DIR/proxy-$name.log" &
  track $!
  for _ in $(seq 1 100); do [ -s "$f" ] && break; sleep 0.02; done
  [ -s "$f" ] || { echo "elk-faultproxy did not start"; exit 1; }
  local lp cp; read -r lp cp < "$f"
  eval "PROXY_PORT_$name=$lp PROXY_CTL_$name=$cp"
}
# pctl NAME COMMAND...: one control command; prints the proxy's answer
pctl() {
  local name=$1; shift
  local cp; eval "cp=\$PROXY_CTL_$name"
  python3 - "$cp" "$*" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall((sys.argv[2] + "\n").encode())
print(s.makefile().readline().strip())
EOF
}

# fleet N: N redis servers (r1..rN), each behind a proxy (p1..pN)
fleet() {
  local i
  for i in $(seq 1 "$1"); do
    start_redis "r$i"
    eval "start_proxy p$i \$REDIS_PORT_r$i"
  done
}

# write_conf AGENT RESOURCE-LINES...: elkd.conf for agent AGENT over proxies p1..pN
write_conf() {
  local agent=$1 n=$2; shift 2
  local c="$FT_DIR/elkd-$agent.conf" i
  {
    echo "[fleet]"; echo "mode = redlock"; echo "gateway_id = gw-$agent"; echo "key_prefix = f:"
    echo "connect_timeout = 500ms"; echo "request_timeout = 250ms"
    for i in $(seq 1 "$n"); do
      eval "echo \"[node n$i]\"; echo host = 127.0.0.1; echo port = \$PROXY_PORT_p$i"
    done
    echo "[resource valve]"
    for l in "$@"; do echo "$l"; done
    echo "[agent]"; echo "socket = $FT_DIR/elkd-$agent.sock"; echo "log_level = debug"
  } > "$c"
}

# start_elkd AGENT [wrapper...]: runs elkd (optionally under a wrapper such as faketime)
start_elkd() {
  local agent=$1; shift
  "$@" "$ELKD" -c "$FT_DIR/elkd-$agent.conf" -f >>"$FT_DIR/elkd-$agent.log" 2>&1 &
  local pid=$!; track "$pid"
  eval "ELKD_PID_$agent=$pid"
  for _ in $(seq 1 100); do
    if "$ELK" --socket "$FT_DIR/elkd-$agent.sock" status 2>/dev/null | grep -q "nodes_ready=\([0-9]*\)/\1 "; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { echo "elkd $agent died:"; cat "$FT_DIR/elkd-$agent.log"; exit 1; }
    sleep 0.05
  done
  echo "elkd $agent: fleet not ready"; "$ELK" --socket "$FT_DIR/elkd-$agent.sock" status; exit 1
}
E() { local agent=$1; shift; "$ELK" --socket "$FT_DIR/elkd-$agent.sock" "$@"; }

# min_pexpiretime KEY PORT...: the earliest absolute expiry (unix ms) among the servers
# that hold KEY; empty if none does.
min_pexpiretime() {
  local key=$1 best="" p t; shift
  for p in "$@"; do
    t=$(rcli "$p" pexpiretime "$key")
    if [ -n "$t" ] && [ "$t" -gt 0 ] 2>/dev/null; then
      if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
    fi
  done
  echo "$best"
}

# majority_free_time KEY PORT...: when a majority of the given servers no longer holds
# KEY (unix ms): the (N - quorum + 1)-th smallest expiry, a missing key counting as 0.
# Before this moment no other holder can have a majority; a node that missed the last
# renewal (outside its quorum) may expire earlier, which is harmless.
majority_free_time() {
  local key=$1; shift
  local n=$# t p list=""
  for p in "$@"; do
    t=$(rcli "$p" pexpiretime "$key")
    { [ -n "$t" ] && [ "$t" -gt 0 ] 2>/dev/null; } || t=0
    list="$list $t"
  done
  local q=$(( n / 2 + 1 ))
  echo $list | tr ' ' '\n' | sort -n | sed -n "$(( n - q + 1 ))p"
}

# holder_cmd MARKDIR: a command that notes start, its token, and the time it got SIGTERM
holder_cmd() {
  echo "trap 'date +%s%3N > $1/term; exit 0' TERM; echo \$ELK_FENCE_TOKEN > $1/token; echo \$\$ > $1/pid; touch $1/started; while :; do sleep 0.02; done"
}
wait_file() { local f=$1 n=${2:-500}; for _ in $(seq 1 "$n"); do [ -e "$f" ] && return 0; sleep 0.02; done; return 1; }
