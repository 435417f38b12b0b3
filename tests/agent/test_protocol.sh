#!/bin/bash
# SPDX-License-Identifier: MIT
# The control protocol spoken raw (docs/control-protocol.md): every malformed request gets
# a named ERR and the agent keeps serving; a lease dies with its connection.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up a <<CONF
$(resource valve-1 3s 300ms)
$(agent_section)
# this test fills every slot from one account
max_clients_per_uid = 64
# and has a client that never reads declared stalled soon
client_stall_timeout = 1s
CONF
out=$(python3 - "$SOCK" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rwb", buffering=0)
def ask(line):
    f.write(line + b"\n"); return f.readline().decode().rstrip("\n")
for req in [b"PING", b"ping", b"", b"FROB", b"ACQUIRE", b"ACQUIRE a{b}", b"ACQUIRE " + b"x" * 100,
            b"ACQUIRE nosuch", b"ACQUIRE valve-1 10x", b"STATUS XML", b"RELEASE valve-1",
            b"ACQUIRE valve-1\r", b"ACQUIRE valve-1", b"\xff\xfe\x00garbage", b"A" * 2000]:
    print(repr(req[:20]), "->", ask(req))
s2 = socket.socket(socket.AF_UNIX); s2.connect(sys.argv[1]); f2 = s2.makefile("rwb", buffering=0)
f2.write(b"RELEASE valve-1\n"); print("other RELEASE ->", f2.readline().decode().rstrip())
f2.write(b"ACQUIRE valve-1\n"); print("other ACQUIRE ->", f2.readline().decode().rstrip())
print("holder RELEASE ->", ask(b"RELEASE valve-1"))
print("HELP ->", ask(b"HELP"))
print("QUIT ->", ask(b"QUIT"))
print("after QUIT ->", repr(f.readline()))
PY
)
echo "$out"
line() { echo "$out" | grep -F -- "$1" | head -1; }
check_contains "PING" "OK PONG" "$(line "'PING' ->")"
check_contains "lower-case command" "OK PONG" "$(line "'ping' ->")"
check_contains "empty line" "ERR ELK_E_CTL_SYNTAX" "$(line "b'' ->")"
check_contains "unknown command" "ERR ELK_E_CTL_UNKNOWN" "$(line "'FROB' ->")"
check_contains "ACQUIRE without resource" "ERR ELK_E_CTL_SYNTAX" "$(line "'ACQUIRE' ->")"
check_contains "braces in a name" "ERR ELK_E_NAME_INVALID" "$(line "'ACQUIRE a{b}' ->")"
check_contains "name too long" "ERR ELK_E_NAME_TOO_LONG" "$(line "'ACQUIRE xxxxxxxxxxxx' ->")"
check_contains "unconfigured resource" "ERR ELK_E_RESOURCE_UNKNOWN" "$(line "'ACQUIRE nosuch' ->")"
check_contains "bad wait" "ERR ELK_E_CTL_SYNTAX" "$(line "'ACQUIRE valve-1 10x' ->")"
check_contains "bad STATUS" "ERR ELK_E_CTL_SYNTAX" "$(line "'STATUS XML' ->")"
check_contains "RELEASE of a lease not held" "ERR ELK_E_NOT_HELD" "$(line "'RELEASE valve-1' ->")"
check_contains "ACQUIRE (CRLF)" "OK ACQUIRED valve-1 " "$(line "valve-1\\r' ->")"
check_contains "second ACQUIRE on one connection" "ERR ELK_E_ALREADY_HELD" "$(line "'ACQUIRE valve-1' ->")"
check_contains "binary garbage" "ERR ELK_E_CTL_" "$(line "garbage' ->")"
check_contains "overlong line" "ERR ELK_E_CTL_TOO_LONG" "$(line "'AAAAAAAAAAAA")"
check_contains "RELEASE from another connection names the holder" "ERR ELK_E_NOT_HELD" "$(line "other RELEASE")"
check_contains "ACQUIRE from another connection" "ERR ELK_E_LOCK_BUSY" "$(line "other ACQUIRE")"
check_contains "RELEASE by the holder" "OK RELEASED valve-1" "$(line "holder RELEASE ->")"
check_contains "HELP" "OK HELP" "$(line "HELP ->")"
check_contains "QUIT" "OK BYE" "$(line "QUIT ->")"
check_contains "connection closed after QUIT" "b''" "$(line "after QUIT")"
"$ELK" --socket "$SOCK" run valve-1 -- true; check "agent still serves after all that" 0 $?

# A client that takes the lease and then never reads its replies is disconnected once its
# output backs up, and its lease is released (it could not have been told it lost it).
out=$(python3 - "$SOCK" "$REDIS_PORT_a" <<'PY'
import socket, sys, subprocess, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"ACQUIRE valve-1\n")
def exists():
    return subprocess.run(["redis-cli", "-p", sys.argv[2], "exists", "elk:{valve-1}"], capture_output=True, text=True).stdout.strip()
# held: wait for the grant on the server (a fixed 0.3 s was a window on a loaded machine)
end = time.monotonic() + 60
held = exists()
while held != "1" and time.monotonic() < end:
    time.sleep(0.05)
    held = exists()
s.setblocking(False)
sent = 0
try:
    for _ in range(20000):
        sent += s.send(b"STATUS JSON\n")
except (BlockingIOError, BrokenPipeError, ConnectionResetError):
    pass
released = "1"
end = time.monotonic() + 60
while time.monotonic() < end:
    released = exists()
    if released == "0":
        break
    time.sleep(0.05)
print("held=%s released=%s" % (held, "yes" if released == "0" else "no"))
PY
)
check "a client that never reads: lease taken, then released when it is dropped" "held=1 released=yes" "$out"
grep -q "ELK_E_CTL_STALLED" "$ELK_T_DIR/elkd.log"; check "elkd logged why it dropped the client" 0 $?

# More clients than slots: the extra one is told, the others keep working.
max=$("$ELK" --socket "$SOCK" status | sed -n 's/.* clients=[0-9]*\/\([0-9]*\).*/\1/p')
[ -n "$max" ] && [ "$max" -ge 4 ]; check "status shows the client slots (clients=N/$max)" 0 $?
out=$(python3 - "$SOCK" "${max:-0}" <<'PY'
import socket, sys
conns = []
# the slot count is a build setting (ELKD_MAX_CLIENTS), shown by STATUS
import time
for i in range(int(sys.argv[2])):
    end = time.monotonic() + 60
    while time.monotonic() < end:
        # a slot of a client that just left (elk status) may not be free yet: retry
        c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
        try:
            c.sendall(b"PING\n"); r = c.recv(100)
        except OSError:
            r = b""
        if r.startswith(b"OK PONG"):
            conns.append(c)
            break
        c.close(); time.sleep(0.1)
    else:
        print("slot %d never answered PING" % i); sys.exit(0)
x = socket.socket(socket.AF_UNIX); x.connect(sys.argv[1])
print(x.recv(200).decode().strip())
PY
)
check_contains "one client more than the slots is refused with a named error" "ERR ELK_E_AGENT_FULL" "$out"
"$ELK" --socket "$SOCK" run valve-1 -- true; check "slots are freed when clients leave" 0 $?
finish
