#!/bin/bash
# SPDX-License-Identifier: MIT
# The control protocol's promise (docs/control-protocol.md): every request gets exactly one
# answer, in order, whatever follows it on the connection. Requests sent behind an ACQUIRE
# that has no answer yet wait for it; a RELEASE of that resource cancels it
# (ERR ELK_E_CANCELLED), then answers OK RELEASED in its own turn.
# And whatever the volume: elkd stops reading a client while its answers wait to be read
# (back-pressure) instead of dropping it; a lease taken before a long burst stays held.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a
cat > "$C" <<CONF
[fleet]
# This test keeps elkd busy, on a loaded machine too: with the vote hygiene on, a reply's
# receive time must be read after its recv (elk_node_config.clock), or the clock check sees
# the one healthy node's clock run ahead ("quarantined: clock ran 12 ms ahead") and the
# lease this test holds is lost.
[node a]
host = 127.0.0.1
port = $REDIS_PORT_a
[resource valve-1]
# held through the long bursts below: a ttl that a loaded machine's renewals keep up with
ttl = 10s
stop_margin = 300ms
$(resource valve-2 3s 300ms)
$(agent_section)
# the slow readers below never leave their answers untouched for this long (at most 1 s),
# though some take longer in all
client_stall_timeout = 3s
CONF
start_elkd "$C"
wait_ready
out=$(/usr/bin/python3 - "$SOCK" <<'PY'
import socket, sys, time
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(20)
    return s, s.makefile("rb")
def answers(f, n):
    got = []
    while len(got) < n:
        l = f.readline().decode().rstrip("\n")
        if not l:
            got.append("<closed>"); break
        if not l.startswith("EVENT"):
            got.append(l.split(" deadline")[0])
    return got
# 1. ACQUIRE then RELEASE in one write: the ACQUIRE is answered (cancelled), then the RELEASE.
s, f = conn()
s.sendall(b"ACQUIRE valve-1\nRELEASE valve-1\nPING\n")
print("1:", " | ".join(answers(f, 3)))
s.close()
# 2. Requests behind a granted ACQUIRE wait for its answer.
s, f = conn()
s.sendall(b"ACQUIRE valve-1\nPING\nSTATUS\n")
a = answers(f, 3)
print("2:", a[0].split()[0:3], a[1], a[2].split()[0:2])
s.close()
time.sleep(0.3)
# 3. A wait queued behind a local holder, cancelled by a RELEASE behind it.
h, hf = conn()
h.sendall(b"ACQUIRE valve-2\n"); print("3 holder:", answers(hf, 1)[0].split()[0:2])
w, wf = conn()
w.sendall(b"ACQUIRE valve-2 10s\nPING\n")
time.sleep(0.3)
w.sendall(b"RELEASE valve-2\nPING\n")
print("3:", " | ".join(answers(wf, 4)))
h.sendall(b"RELEASE valve-2\n"); print("3 holder:", answers(hf, 1)[0])
# 4. The same wait, not cancelled: its grant comes first, then what waited behind it.
w2, wf2 = conn()
h.sendall(b"ACQUIRE valve-2\n"); print("4 holder:", answers(hf, 1)[0].split()[0:2])
w2.sendall(b"ACQUIRE valve-2 10s\nPING\n")
time.sleep(0.3)
h.sendall(b"RELEASE valve-2\n"); answers(hf, 1)
a = answers(wf2, 2)
print("4:", a[0].split()[0:3], "|", a[1])
PY
)
echo "$out"
check_contains "ACQUIRE+RELEASE pipelined: cancelled, released, then PING" \
  "1: ERR ELK_E_CANCELLED request cancelled by a RELEASE sent before it was answered: valve-1 | OK RELEASED valve-1 | OK PONG" "$out"
check_contains "requests behind a granted ACQUIRE are answered after it" "2: ['OK', 'ACQUIRED', 'valve-1'] OK PONG ['OK', 'STATUS']" "$out"
check_contains "a queued wait cancelled: one answer each, in order" \
  "3: ERR ELK_E_CANCELLED request cancelled by a RELEASE sent before it was answered: valve-2 | OK PONG | OK RELEASED valve-2 | OK PONG" "$out"
check_contains "a queued wait granted: the grant, then the PING" "4: ['OK', 'ACQUIRED', 'valve-2'] | OK PONG" "$out"

# 5. Bursts in one write, read at full speed: one answer each, in order.
P="$(dirname "$0")/ctl_pipeline.py"
for b in "status 20" "help 200" "unknown 200" "metrics 200" "acqrel 600"; do
  out=$(/usr/bin/python3 "$P" "$SOCK" burst $b 2>&1); rc=$?
  echo "$out"
  check "burst $b: every answer, in order" 0 $rc
done
# 5b. 100,000 requests (about 10 MB of answers) not read for 1 s: elkd stops reading the
#     client (back-pressure) rather than queueing it all, and every answer comes after.
out=$(/usr/bin/python3 "$P" "$SOCK" pause 100000 1 2>&1); rc=$?
echo "$out"
check "100,000 requests, 1 s unread: every answer, in order" 0 $rc
# 5c. A reader far slower than elkd that never stops: 2 KiB/s for 8 s, so elkd's queue for
#     it never empties for longer than client_stall_timeout (which counts only time
#     without progress), then at full speed. Every answer, and it is never dropped.
out=$(/usr/bin/python3 "$P" "$SOCK" trickle 4000 8 2>&1); rc=$?
echo "$out"
check "a slow reader (2 KiB/s for 8 s): every answer, in order, never dropped" 0 $rc
# 6. 10,000 mixed requests in one stream behind a held lease, read slowly (longer in all
#    than client_stall_timeout, which counts only time without progress): every answer in
#    order, matched to its request, and the lease is still this connection's at the end.
log_before=$(wc -l < "$ELK_T_DIR/elkd.log")
out=$(/usr/bin/python3 "$P" "$SOCK" mixed "${ELK_PIPELINE_N:-10000}" valve-1 valve-2 7 2>&1); rc=$?
echo "$out"
check "mixed burst behind a held lease: every answer, in order, lease kept" 0 $rc
tail -n +"$((log_before + 1))" "$ELK_T_DIR/elkd.log" |
  grep "ELK_E_CTL_STALLED\|does not read its replies\|valve-1: released (its client disconnected\|valve-1: .*no longer renewed\|valve-1: lost"
check "elkd never dropped the pipelining client nor let its lease go" 1 $?
# 7. Random 70 KB inputs: a clean ERR for every line (overlong ones included), no crash.
out=$(/usr/bin/python3 "$P" "$SOCK" random "${ELK_PIPELINE_RANDOM:-20}" 70000 11 2>&1); rc=$?
echo "$out"
check "random 70 KB inputs: one clean answer per line" 0 $rc
kill -0 "$ELKD_PID"; check "elkd is still running" 0 $?
finish
