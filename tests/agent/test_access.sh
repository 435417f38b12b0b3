#!/bin/bash
# SPDX-License-Identifier: MIT
# Local authorization (issue 18) with two real accounts, root and nobody: the socket's mode
# and group, allow_users / allow_groups per resource (primary and supplementary groups, as
# the kernel saw them at connect()), the per-uid client limit, the refusal's exit code and
# message, and a hint of its own for each way the socket cannot be reached.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "skipped: needs root and setpriv (two real accounts)"; exit 0
fi
chmod 0755 "$ELK_T_DIR" # nobody must reach the socket inside it
SOCK_GID=47181   # may use the socket
VALVE_GID=47182  # may take valve-2
# as nobody, with the given supplementary groups (comma-separated, or "" for none)
as_nobody() {
  local groups=$1; shift
  if [ -n "$groups" ]; then
    setpriv --reuid nobody --regid nogroup --groups "$groups" -- "$@"
  else
    setpriv --reuid nobody --regid nogroup --clear-groups -- "$@"
  fi
}
start_redis a
cat > "$C" <<CONF
[node a]
host = 127.0.0.1
port = $REDIS_PORT_a
$(resource valve-1 3s 300ms)
allow_users = root
$(resource valve-2 3s 300ms)
allow_groups = $VALVE_GID
$(resource open-1 3s 300ms)
$(agent_section)
socket_mode = 0660
socket_group = $SOCK_GID
max_clients_per_uid = 2
CONF
out=$("$ELKD" -c "$C" --check 2>&1); rc=$?
check "--check passes" 0 $rc
check_contains "--check names the open resource" "[resource open-1] is open to every local user" "$out"
check_contains "--check shows valve-1's list" "[resource valve-1] allow_users = root; allow_groups = -" "$out"

start_elkd "$C"
wait_ready
check "socket mode applied" "660" "$(stat -c %a "$SOCK")"
check "socket group applied" "$SOCK_GID" "$(stat -c %g "$SOCK")"

# Not in the socket's group: EACCES, with its own hint.
out=$(as_nobody "" "$ELK" --socket "$SOCK" status 2>&1); rc=$?
check "no socket access: exit 69" 69 $rc
check_contains "no socket access: hint names socket_group" "may not use its socket" "$out"
check_contains "no socket access: hint names the key" "socket_group" "$out"

# In the socket's group, not allowed on valve-1: ELK_E_FORBIDDEN, exit 77, the keys named.
out=$(as_nobody "$SOCK_GID" "$ELK" --socket "$SOCK" run valve-1 -- true 2>&1); rc=$?
check "nobody on valve-1 (allow_users = root): exit 77" 77 $rc
check_contains "refusal names the error" "ELK_E_FORBIDDEN" "$out"
check_contains "refusal names the keys to change" "allow_users or a group to allow_groups" "$out"
check_contains "refusal names resource and uid" "resource valve-1, uid 65534" "$out"
grep -q "valve-1: refused to client [0-9]* (uid 65534, pid [0-9]*, .*elk)" "$ELK_T_DIR/elkd.log"
check "elkd logged the refusal with uid, pid and executable" 0 $?
"$ELK" --socket "$SOCK" run valve-1 -- true; check "root on valve-1: allowed" 0 $?
grep -q "valve-1: granted to client [0-9]* (uid 0, pid [0-9]*, .*elk), token [0-9]*" "$ELK_T_DIR/elkd.log"
check "elkd logged the grant with uid, pid, executable and token" 0 $?

# valve-2 by group: a supplementary group counts; without it, refused.
as_nobody "$SOCK_GID,$VALVE_GID" "$ELK" --socket "$SOCK" run valve-2 -- true
check "nobody with group $VALVE_GID (supplementary) on valve-2: allowed" 0 $?
as_nobody "$SOCK_GID" "$ELK" --socket "$SOCK" run valve-2 -- true 2>/dev/null
check "nobody without group $VALVE_GID on valve-2: exit 77" 77 $?
"$ELK" --socket "$SOCK" run valve-2 -- true 2>/dev/null
check "root (uid 0 is not special) on valve-2: exit 77" 77 $?
as_nobody "$SOCK_GID" "$ELK" --socket "$SOCK" run open-1 -- true
check "nobody on open-1 (no allow list): allowed" 0 $?

# One account, at most max_clients_per_uid connections: the others are not locked out.
out=$(as_nobody "$SOCK_GID" /usr/bin/python3 - "$SOCK" "$ELK" <<'PY'
import socket, subprocess, sys
held = []
for i in range(2):
    c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
    c.sendall(b"PING\n"); print("conn %d: %s" % (i, c.recv(100).decode().strip()))
    held.append(c)
x = socket.socket(socket.AF_UNIX); x.connect(sys.argv[1])
print("third:", x.recv(300).decode().strip())
r = subprocess.run([sys.argv[2], "--socket", sys.argv[1], "status"], capture_output=True, text=True)
print("elk status rc=%d: %s" % (r.returncode, r.stderr.strip()))
sys.stdout.flush()
# root works while nobody holds its share
r = subprocess.run(["true"])
PY
)
echo "$out"
check_contains "per-uid: the first two connect" "conn 1: OK PONG" "$out"
check_contains "per-uid: the third is told why" "third: ERR ELK_E_AGENT_FULL" "$out"
check_contains "per-uid: the reason names the key" "max_clients_per_uid" "$out"
check_contains "per-uid: elk status prints the refusal, not a broken pipe" "elkd refused the connection: ELK_E_AGENT_FULL" "$out"
case "$out" in *"Broken pipe"*) bad "elk status said Broken pipe" ;; *) ok "no Broken pipe" ;; esac
"$ELK" --socket "$SOCK" status >/dev/null; check "root is not locked out by nobody's connections" 0 $?

# ENOENT and ECONNREFUSED: each its own hint.
out=$("$ELK" --socket "$ELK_T_DIR/none.sock" status 2>&1); rc=$?
check "missing socket: exit 69" 69 $rc
check_contains "missing socket: hint" "no socket there: is elkd running" "$out"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$ELK_T_DIR/stale.sock"
out=$("$ELK" --socket "$ELK_T_DIR/stale.sock" status 2>&1); rc=$?
check "stale socket: exit 69" 69 $rc
check_contains "stale socket: hint" "nobody listens there: elkd is not running" "$out"

# Socket setup that cannot be done is fatal, named, exit 3 (elkd as nobody cannot chown to root's group).
mkdir "$ELK_T_DIR/nb" && chown nobody "$ELK_T_DIR/nb"
sed -e "s|^socket = .*|socket = $ELK_T_DIR/nb/elkd.sock|" -e "s|^socket_group = .*|socket_group = 0|" "$C" > "$C.nb"
chmod 0644 "$C.nb"
out=$(as_nobody "" "$ELKD" -c "$C.nb" -f 2>&1); rc=$?
check "socket_group elkd cannot give: exit 3" 3 $rc
check_contains "socket_group failure is named" "ELK_E_SOCKET_SETUP: cannot give the control socket" "$out"
[ ! -e "$ELK_T_DIR/nb/elkd.sock" ]; check "no socket left with the wrong group" 0 $?
sed -i "s|^socket_group = .*|socket_group = no-such-group-elk18|" "$C.nb"
out=$("$ELKD" -c "$C.nb" --check 2>&1); rc=$?
check "unknown socket_group: exit 2" 2 $rc
check_contains "unknown socket_group: named" "key 'socket_group' in [agent]: no group 'no-such-group-elk18'" "$out"
finish
