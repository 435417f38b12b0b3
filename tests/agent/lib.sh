# SPDX-License-Identifier: MIT
# Helpers for the agent end-to-end tests (sourced by test_*.sh): tests/support/lib.sh
# (temp dir, process tracking, checks, launchers) with this folder's flavour on top: one
# elkd per test at $SOCK, redis servers named by letter with REDIS_PORT_<NAME> variables.
SUP_PREFIX=elk-agent-test SUP_KEEP=${ELK_TEST_KEEP:-0}
. "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"
ELK_T_DIR=$SUP_DIR

cleanup() { sup_cleanup; }

# start_redis NAME -> sets REDIS_PORT_<NAME>, REDIS_PID_<NAME>; plain TCP on 127.0.0.1 only.
start_redis() {
  sup_redis "$1" "" plain
  eval "REDIS_PORT_$1=$SUP_RPORT REDIS_PID_$1=$SUP_RPID"
}
# start_redis_tls NAME -> REDIS_PORT_<NAME> (TLS port), REDIS_SOCK_<NAME> (unix socket for
# redis-cli); gen_certs first.
start_redis_tls() {
  sup_redis "$1" "" tls
  eval "REDIS_PORT_$1=$SUP_RPORT REDIS_PID_$1=$SUP_RPID REDIS_SOCK_$1=$SUP_RSOCK"
}

rcli() { local port=$1; shift; redis-cli -p "$port" "$@"; }

# start_elkd CONF -> ELKD_PID; waits for the control socket ($SOCK) to answer.
start_elkd() {
  sup_elkd "$SOCK" "$ELK_T_DIR/elkd.log" "$1"
  ELKD_PID=$SUP_EPID
}

# voting SOCKET: every node of the elkd at SOCKET ready and none waiting for its vote (vote
# hygiene: a server started a moment ago is new to elkd, so it has no vote for about a ttl)
voting() {
  local s
  s=$("$ELK" --socket "$1" status 2>/dev/null) || return 1
  echo "$s" | grep -q "nodes_ready=\([0-9]*\)/\1 " && ! echo "$s" | grep -Eq '(^|[[:space:]])(pending|quarantined:)'
}
# wait_ready: until every node of the local elkd is ready and votes (hygiene-wise)
all_ready() { voting "$SOCK"; }
wait_ready() {
  wait_until 60 all_ready && return 0
  echo "fleet not ready"; "$ELK" --socket "$SOCK" status; exit 1
}

# The usual single-agent set-up: SOCK and C name its control socket and configuration
# (a test may set its own before using them).
SOCK="$ELK_T_DIR/elkd.sock"
C="$ELK_T_DIR/elkd.conf"
# node_sections NAMES: a [node NAME] section (127.0.0.1, REDIS_PORT_<NAME>) per name
node_sections() {
  local n p
  for n in $1; do
    eval "p=\$REDIS_PORT_$n"
    printf '[node %s]\nhost = 127.0.0.1\nport = %s\n' "$n" "$p"
  done
}
# elkd_up NAMES < REST: a plain redis-server per name, $C from their [node] sections and
# the rest of the configuration on stdin (as is: keys right at its top still belong to
# the last node), elkd started on it and every node ready.
elkd_up() {
  local n
  for n in $1; do start_redis "$n"; done
  { node_sections "$1"; cat; } >"$C"
  start_elkd "$C"
  wait_ready
}

# redlock_section GATEWAY_ID KEY_PREFIX: the [fleet] section of a Redlock fleet
redlock_section() { printf '[fleet]\nmode = redlock\ngateway_id = %s\nkey_prefix = %s' "$1" "$2"; }
# fleet3_conf GATEWAY_ID KEY_PREFIX: the [fleet] and three [node] sections for redis a, b, c.
fleet3_conf() {
  redlock_section "$1" "$2"
  echo
  node_sections "a b c"
}

# elkdlog check|grants|quarantines|count LOG ...: elkd's own record of quarantines and grants
# (which nodes voted), read from its log (tests/scenarios/elkdlog.py): tests assert the vote
# hygiene from it rather than from a STATUS read that races a quarantine's end.
elkdlog() { python3 "$SUP_LIB/../scenarios/elkdlog.py" "$@"; }

# Sections of an elkd configuration, for a test's here-document:
# resource NAME TTL STOP_MARGIN: a [resource NAME] section with its ttl and stop margin
# (further keys follow on the lines after it);
resource() { printf '[resource %s]\nttl = %s\nstop_margin = %s' "$1" "$2" "$3"; }
# agent_section: the [agent] section on $SOCK (further keys follow on the lines after it).
agent_section() { printf '[agent]\nsocket = %s' "$SOCK"; }

# M: a folder for the marks a test's commands and hooks leave (files whose presence or
# content the test reads back).
M="$ELK_T_DIR/marks"
mkdir -p "$M"

# alive PID: the process runs (a zombie drives nothing and is as good as gone)
alive() {
  local st
  st=$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)
  [ -n "$st" ] && [ "$st" != Z ]
}

# fake_elkd SCRIPT ARG...: a scripted elkd (tests/agent/SCRIPT) on $SOCK logging the
# lines it read to $LOG; FAKE_PID, and back once the socket exists.
fake_elkd_start() {
  local script=$1
  shift
  rm -f "$SOCK" "$LOG"
  python3 "$SUP_LIB/../agent/$script" "$SOCK" "$LOG" "$@" &
  FAKE_PID=$!
  track $FAKE_PID
  wait_until 30 test -S "$SOCK" && return 0
  echo "fake elkd did not start"; exit 1
}

# acl_nodes NAMES: node_sections NAMES, each logging in as the ACL user elk with the
# password in $ELK_T_DIR/pw (written here, mode 0600: s3cret-elk)
acl_nodes() {
  local n
  printf 's3cret-elk\n' >"$ELK_T_DIR/pw"
  chmod 600 "$ELK_T_DIR/pw"
  for n in $1; do
    node_sections "$n"
    printf 'user = elk\npassword_file = %s\n' "$ELK_T_DIR/pw"
  done
}
