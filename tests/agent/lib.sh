# Shared helpers for the agent end-to-end tests (sourced by test_*.sh).
# Everything runs in a private temp dir; every process started here is stopped on exit.
set -u
ELK_T_DIR=$(mktemp -d /tmp/elk-agent-test.XXXXXX)
ELK_T_PIDS=""
ELK_T_FAILS=0

cleanup() {
  local p
  for p in $ELK_T_PIDS; do
    kill -CONT "$p" 2>/dev/null
    kill -TERM "$p" 2>/dev/null
  done
  sleep 0.2
  for p in $ELK_T_PIDS; do
    kill -KILL "$p" 2>/dev/null
  done
  if [ "${ELK_TEST_KEEP:-0}" = 1 ]; then
    echo "kept $ELK_T_DIR"
  else
    rm -rf "$ELK_T_DIR"
  fi
}
trap cleanup EXIT

track() { ELK_T_PIDS="$ELK_T_PIDS $1"; }

ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; ELK_T_FAILS=$((ELK_T_FAILS + 1)); }
check() { # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: expected '$2', got '$3'"; fi
}
check_contains() { # check_contains DESCRIPTION NEEDLE HAYSTACK
  case "$3" in
    *"$2"*) ok "$1" ;;
    *) bad "$1: '$2' not found in: $3" ;;
  esac
}
finish() {
  if [ "$ELK_T_FAILS" -ne 0 ]; then
    echo "$ELK_T_FAILS check(s) failed"
    if [ -f "$ELK_T_DIR/elkd.log" ]; then echo "--- elkd.log"; tail -40 "$ELK_T_DIR/elkd.log"; fi
    exit 1
  fi
  echo "all checks passed"
  exit 0
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_redis NAME -> sets REDIS_PORT_<NAME>, REDIS_PID_<NAME>; plain TCP on 127.0.0.1 only.
start_redis() {
  local name=$1 port pid i
  for i in 1 2 3 4 5; do
    port=$(free_port)
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$ELK_T_DIR" --logfile "$ELK_T_DIR/redis-$name.log" >/dev/null 2>&1 &
    pid=$!
    track "$pid"
    for _ in $(seq 1 50); do
      if redis-cli -p "$port" ping >/dev/null 2>&1; then
        eval "REDIS_PORT_$name=$port REDIS_PID_$name=$pid"
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
  done
  echo "cannot start redis-server"; exit 1
}

rcli() { local port=$1; shift; redis-cli -p "$port" "$@"; }

# start_elkd CONF -> ELKD_PID; waits for the control socket to answer.
start_elkd() {
  "$ELKD" -c "$1" -f >>"$ELK_T_DIR/elkd.log" 2>&1 &
  ELKD_PID=$!
  track "$ELKD_PID"
  for _ in $(seq 1 100); do
    if "$ELK" --socket "$SOCK" status >/dev/null 2>&1; then return 0; fi
    kill -0 "$ELKD_PID" 2>/dev/null || { echo "elkd died:"; cat "$ELK_T_DIR/elkd.log"; exit 1; }
    sleep 0.05
  done
  echo "elkd did not come up"; cat "$ELK_T_DIR/elkd.log"; exit 1
}

# wait_ready: until every node of the local elkd is ready
wait_ready() {
  for _ in $(seq 1 100); do
    if "$ELK" --socket "$SOCK" status | grep -q "nodes_ready=\([0-9]*\)/\1 "; then return 0; fi
    sleep 0.05
  done
  echo "fleet not ready"; "$ELK" --socket "$SOCK" status; exit 1
}

now_ms() { date +%s%3N; }

# gen_certs: CA, a server certificate for localhost/127.0.0.1, and an unrelated CA, in $ELK_T_DIR.
gen_certs() {
  (
    cd "$ELK_T_DIR" || exit 1
    for ca in ca other-ca; do
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $ca.key \
        -out $ca.pem -days 2 -subj "/CN=elk test $ca" || exit 1
    done
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key \
      -out server.csr -subj "/CN=localhost" || exit 1
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
      -extfile server.ext || exit 1
  ) >"$ELK_T_DIR/openssl.log" 2>&1 || { echo "openssl failed:"; cat "$ELK_T_DIR/openssl.log"; exit 1; }
}

# start_redis_tls NAME -> REDIS_PORT_<NAME> (TLS port), REDIS_SOCK_<NAME> (unix socket for redis-cli)
start_redis_tls() {
  local name=$1 port pid
  port=$(free_port)
  redis-server --port 0 --tls-port "$port" --bind 127.0.0.1 --tls-cert-file "$ELK_T_DIR/server.pem" \
    --tls-key-file "$ELK_T_DIR/server.key" --tls-ca-cert-file "$ELK_T_DIR/ca.pem" --tls-auth-clients no \
    --save '' --appendonly no --unixsocket "$ELK_T_DIR/redis-$name.sock" --dir "$ELK_T_DIR" \
    --logfile "$ELK_T_DIR/redis-$name.log" >/dev/null 2>&1 &
  pid=$!
  track "$pid"
  for _ in $(seq 1 100); do
    if redis-cli -s "$ELK_T_DIR/redis-$name.sock" ping >/dev/null 2>&1; then
      eval "REDIS_PORT_$name=$port REDIS_PID_$name=$pid REDIS_SOCK_$name=$ELK_T_DIR/redis-$name.sock"
      return 0
    fi
    sleep 0.05
  done
  echo "cannot start redis-server with TLS"; cat "$ELK_T_DIR/redis-$name.log"; exit 1
}

# fleet3_conf GATEWAY_ID KEY_PREFIX: the [fleet] and three [node] sections for redis a, b, c.
fleet3_conf() {
  printf '[fleet]\nmode = redlock\ngateway_id = %s\nkey_prefix = %s\n' "$1" "$2"
  local n p
  for n in a b c; do
    eval "p=\$REDIS_PORT_$n"
    printf '[node %s]\nhost = 127.0.0.1\nport = %s\n' "$n" "$p"
  done
}
