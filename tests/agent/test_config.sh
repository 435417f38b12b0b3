#!/bin/bash
# SPDX-License-Identifier: MIT
# elkd refuses a bad configuration with exit 2 and a file:line:key message, starting nothing.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"

cat > "$C" <<CONF
[fleet]
gateway_id = gw-test

[node a]
host = 127.0.0.1
port = $(free_port)

[resource valve-1]
stop_margin = 1s
# the next line is wrong
ttl = 10x

$(agent_section)
CONF
out=$("$ELKD" -c "$C" -f 2>&1); rc=$?
check "bad duration: exit 2" 2 $rc
check "bad duration: message" \
  "elkd: $C:11: key 'ttl' in [resource valve-1]: '10x' is not a duration (use e.g. 500ms or 10s)" "$out"
[ ! -e "$SOCK" ]; check "nothing started (no socket)" 0 $?

sed -i 's/^ttl = 10x/ttl = 10s\nfrobnicate = yes/' "$C"
out=$("$ELKD" -c "$C" -f 2>&1); rc=$?
check "unknown key: exit 2" 2 $rc
check_contains "unknown key: file:line:key" "$C:12: unknown key 'frobnicate' in [resource valve-1]" "$out"

sed -i '/^frobnicate/d' "$C"
out=$("$ELKD" -c "$C" --check 2>&1); rc=$?
check "good config: --check exit 0" 0 $rc
check_contains "--check summary" "configuration ok (single, 1 node, 1 resource, gateway gw-test)" "$out"

# A host with a space or a control byte cannot resolve: --check refuses it, naming the line.
cp "$C" "$C.host"
sed -i 's/^host = 127.0.0.1/host = "127.0.0.1 "/' "$C.host"
out=$("$ELKD" -c "$C.host" --check 2>&1); rc=$?
check "host with a space: --check exit 2" 2 $rc
check_contains "host with a space: file:line:key" "$C.host:5: key 'host' in [node a]: '127.0.0.1 ' is not a host name" "$out"
sed -i "s/^host = .*/host = redis$(printf '\t')x.local/" "$C.host"
out=$("$ELKD" -c "$C.host" --check 2>&1); rc=$?
check "host with a tab: --check exit 2" 2 $rc
check_contains "host with a tab: file:line:key" "$C.host:5: key 'host' in [node a]: 'redis?x.local' is not a host name" "$out"
# key_prefix and ttl errors name the line of the key to change
printf '[fleet]\nmode = single\nkey_prefix = "a b"\n[node a]\nhost = h\n[resource r]\n' > "$C.pfx"
out=$("$ELKD" -c "$C.pfx" --check 2>&1); rc=$?
check "bad key_prefix: exit 2" 2 $rc
check_contains "bad key_prefix: file:line:key" "$C.pfx:3: key 'key_prefix' in [fleet]:" "$out"
printf '[node a]\nhost = h\n[resource r]\nfencing = on\nttl = 1s\nstop_margin = 900ms\n' > "$C.ttl"
out=$("$ELKD" -c "$C.ttl" --check 2>&1); rc=$?
check "ttl without validity: exit 2" 2 $rc
check_contains "ttl without validity: the ttl line" "$C.ttl:5: key 'ttl' in [resource r]: ttl 1000ms leaves no validity" "$out"

out=$("$ELKD" -c "$ELK_T_DIR/nope.conf" -f 2>&1); rc=$?
check "missing file: exit 2" 2 $rc
check_contains "missing file: message" "$ELK_T_DIR/nope.conf: cannot read the configuration: No such file or directory" "$out"

"$ELKD" --bogus >/dev/null 2>&1; check "unknown option: exit 2" 2 $?
"$ELKD" -c "$C" --log-level loud >/dev/null 2>&1; check "bad --log-level: exit 2" 2 $?
"$ELKD" --help | grep -q "Exit codes"; check "--help" 0 $?
"$ELKD" --version | grep -q "^elkd "; check "--version" 0 $?

# A control socket that cannot be bound: exit 3.
out=$("$ELKD" -c "$C" -f --socket "$ELK_T_DIR/no/such/dir/s.sock" 2>&1); rc=$?
check "unbindable socket: exit 3" 3 $rc
check_contains "unbindable socket: message" "cannot bind the control socket" "$out"

# Without -f elkd detaches once its socket is up; startup failures still reach the exit code.
out=$("$ELKD" -c "$C" --socket "$ELK_T_DIR/no/such/dir/s.sock" 2>&1); rc=$?
check "daemon mode: unbindable socket still exits 3" 3 $rc
"$ELKD" -c "$C" --socket "$SOCK" >/dev/null 2>&1; rc=$?
check "daemon mode: parent exits 0 once the agent is up" 0 $rc
dpid=$("$ELK" --socket "$SOCK" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
[ -n "$dpid" ] && track "$dpid"
[ -S "$SOCK" ]; check "daemon mode: socket is up when the parent returns" 0 $?
kill -TERM "$dpid"
# (kill -0 would also succeed on a zombie nobody has reaped yet: look at the state instead)
exited() { case "$(ps -o stat= -p "$1" 2>/dev/null)" in "" | Z*) return 0 ;; esac; return 1; }
wait_until 60 exited "$dpid"; check "daemon stops on SIGTERM" 0 $?
[ ! -e "$SOCK" ]; check "daemon removed its socket" 0 $?

# TLS files that do not exist: exit 4 naming the node.
cat > "$C.tls" <<CONF
[node a]
host = 127.0.0.1
server_name = localhost
tls = on
ca = $ELK_T_DIR/missing-ca.pem
[resource r]
$(agent_section)
CONF
out=$("$ELKD" -c "$C.tls" -f 2>&1); rc=$?
check "unreadable CA: exit 4" 4 $rc
check_contains "unreadable CA: names file, line and node" "$C.tls:1: [node a]:" "$out"
check_contains "unreadable CA: the system's reason (errno)" "'$ELK_T_DIR/missing-ca.pem': No such file or directory" "$out"
out=$("$ELKD" -c "$C.tls" --check 2>&1); rc=$?
check_contains "--check says the same" "No such file or directory" "$out"

# issue 29: --check names every problem of the file in one run, a near-miss key with the
# key it probably meant, and exits non-zero
cat >"$C.many" <<CONF
[fleet]
mode = redlock
[node a]
host = 127.0.0.1
prot = 1
[node b]
host = 127.0.0.1
port = 2
[node c]
host = 127.0.0.1
port = 3
[resorce valve]
ttl = 5s
[resource valve-1]
tll = 5s
stop_margin = 5x
[agent]
socket = $SOCK
CONF
out=$("$ELKD" -c "$C.many" --check 2>&1); rc=$?
echo "$out"
check "several problems: exit 2" 2 $rc
check_contains "the misspelt key, with the one meant" "$C.many:5: unknown key 'prot' in [node a] (did you mean 'port'? see elkd.conf(5))" "$out"
check_contains "the unknown section" "$C.many:12: unknown section [resorce valve]" "$out"
check_contains "and another key" "$C.many:15: unknown key 'tll' in [resource valve-1] (did you mean 'ttl'?" "$out"
check_contains "and a bad value" "$C.many:16: key 'stop_margin' in [resource valve-1]: '5x' is not a duration" "$out"
check "four problems, one line each (the unknown section's keys are not blamed)" 4 "$(echo "$out" | grep -c "^\(elkd: \)\?$C.many:")"
# a mistyped elkd option: one line naming the likely one, and where the usage is
out=$("$ELKD" --chek 2>&1); rc=$?
check "elkd --chek: exit 2" 2 $rc
check_contains "elkd --chek: did you mean" "unknown option '--chek' (did you mean --check?)" "$out"
check "elkd --chek: two lines, not the whole usage" 2 "$(printf '%s\n' "$out" | wc -l)"
finish
