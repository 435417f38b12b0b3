#!/bin/bash
# SPDX-License-Identifier: MIT
# A lease from a microcontroller (docs/mcu.md): the network image of
# scripts/mcu-net-build.sh (lib/ + port/lwip + port/mbedtls + lwIP + mbedTLS + a LAN9118
# netif, Cortex-M4) runs in QEMU's mps2-an386 with its Ethernet on a TAP device inside a
# network namespace this script creates, against real redis-servers listening in that
# namespace (plain and TLS). Nothing leaves the namespace; QEMU's user network is not
# used. Every check is made from records after the fact: the MCU's own event lines
# (its clock), the servers' keys, elkd's log and the host client's output.
#
#   plain-1   plain TCP, one master: granted, renewed >= 3 times, released, key gone
#   tls-1     the same over TLS
#   tls-3     three masters over TLS, while a host-side elkd (same namespace, same
#             masters, plain TCP) waits for the same resource: the host gets it only
#             after the MCU released it (every master confirms it deleted the MCU's own
#             value, so the host's SET NX could only land after), with a larger token
#   icount-*  one plain and one TLS run under -icount for instruction counts; after the
#             release each drops its connection and lib/node reconnects it: over TLS
#             the reconnect must be a resumed handshake (the session kept by
#             port/mbedtls offered and taken by the server), and its instructions are
#             reported against the full handshake's
#
# Usage: scripts/mcu-net-test.sh --config DOT_CONFIG --elkd ELKD --elk ELK [--out DIR]
# Exit: 0 all passed, 1 a failure, 77 (ctest SKIP) only where qemu-system-arm or
# network namespaces (root, /dev/net/tun, ip) are missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build-mcu-net
dot_config="" elkd="" elk=""
while [ $# -gt 0 ]; do
  case $1 in
    --config) dot_config=$2; shift 2 ;;
    --elkd) elkd=$2; shift 2 ;;
    --elk) elk=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 --config DOT_CONFIG --elkd ELKD --elk ELK [--out DIR]" >&2; exit 1 ;;
  esac
done
skip() { echo "SKIP: $*"; exit 77; }
command -v qemu-system-arm >/dev/null || skip "qemu-system-arm not found (apt-get install qemu-system-arm)"
[ "$(id -u)" = 0 ] || skip "needs root for a network namespace and a TAP device"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v ip >/dev/null || skip "no ip(8) (apt-get install iproute2)"
command -v redis-server >/dev/null || { echo "FAIL: redis-server not found"; exit 1; }
[ -x "$elkd" ] && [ -x "$elk" ] || { echo "FAIL: --elkd/--elk not given or not executable"; exit 1; }

mkdir -p "$out"
work=$(mktemp -d /tmp/elk-mcu-net.XXXXXX)
ns="elk-mcu-$$"
tap=mcutap0
host_addr=10.77.0.1 mcu_addr=10.77.0.2 # private, and only inside our own namespace
tls_name=redis.elk.test
pids=""
cleanup() {
  local pid
  for pid in $pids; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
  [ "${MCU_NET_KEEP:-0}" = 1 ] && echo "kept: $work" || rm -rf "$work"
}
trap cleanup EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }
ok() { echo "OK: $*"; }

# -------------------------------------------------------------- the image
t0=$SECONDS
rc=0
"$root/scripts/mcu-net-build.sh" --config "$dot_config" --out "$out" >"$work/build.log" 2>&1 || rc=$?
if [ $rc -ne 0 ]; then
  cat "$work/build.log"; echo "FAIL: building the network image (exit $rc)"; exit 1
fi
echo "== image built in $((SECONDS - t0)) s: $(tail -1 "$work/build.log")"
elf=$out/lease_mcu.elf

# ---------------------------------------------------------- the network
ip netns add "$ns" 2>"$work/netns.err" || skip "cannot create a network namespace: $(cat "$work/netns.err")"
nsx() { ip netns exec "$ns" "$@"; }
nsx ip link set lo up
nsx ip tuntap add dev "$tap" mode tap || skip "cannot create a TAP device in the namespace"
nsx ip addr add "$host_addr/24" dev "$tap"
nsx ip link set "$tap" up

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=elk mcu test CA" \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$tls_name" \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s\n' "$tls_name" >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
  -CAcreateserial -days 2 -extfile "$work/ext.cnf" -out "$work/server.crt" 2>/dev/null

# Three independent masters, each with a plain and a TLS port (the namespace is ours
# alone, so the ports are free).
plain=(7001 7002 7003) tls=(7101 7102 7103)
for i in 0 1 2; do
  ip netns exec "$ns" redis-server --bind "$host_addr" --port "${plain[$i]}" --tls-port "${tls[$i]}" \
    --tls-cert-file "$work/server.crt" --tls-key-file "$work/server.key" \
    --tls-ca-cert-file "$work/ca.crt" --tls-auth-clients no \
    --save "" --appendonly no --daemonize no --protected-mode no \
    --dir "$work" --logfile "$work/redis-$i.log" &
  pids="$pids $!"
done
rcli() { nsx redis-cli -h "$host_addr" -p "$1" "${@:2}"; }
for p in "${plain[@]}"; do
  for _ in $(seq 1 200); do rcli "$p" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
  rcli "$p" ping | grep -q PONG || { cat "$work"/redis-*.log; echo "FAIL: redis-server on $p"; exit 1; }
done

# ---------------------------------------------------------------- runs
# mcu NAME QEMU-EXTRA ARGS...: one boot of the image, its console in $work/NAME.txt.
mcu() {
  local name=$1 extra=$2; shift 2
  local seed sh a
  seed=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  sh="enable=on,target=native,arg=lease_mcu"
  for a in --addr "$mcu_addr" --mask 255.255.255.0 --gw "$host_addr" --seed "$seed" "$@"; do
    sh="$sh,arg=$a"
  done
  # QEMU 7.2 writes the semihosting console to its own stderr.
  local t=$SECONDS rc=0
  timeout 300 ip netns exec "$ns" qemu-system-arm -M mps2-an386 $extra -nographic -monitor none \
    -serial none -nic "tap,ifname=$tap,script=no,downscript=no" \
    -semihosting-config "$sh" -kernel "$elf" >"$work/$name.qemu-out" 2>"$work/$name.txt" || rc=$?
  echo "-- $name: QEMU ran $((SECONDS - t)) s (exit $rc)"
  return $rc
}

# num_gt A B: decimal A > B, for numbers of any length (fencing tokens may be large).
num_gt() { [ ${#1} -gt ${#2} ] || { [ ${#1} -eq ${#2} ] && [[ "$1" > "$2" ]]; }; }

# check_run NAME NODES: what the MCU reported about its lease, and the servers' keys.
check_run() {
  local name=$1 nodes=$2 log=$work/$1.txt key token renewed rel p
  if ! grep -q '^mcu: done: acquired 1, renewed [0-9]*, lost 0, released 1$' "$log"; then
    fail "$name: the MCU's run did not finish cleanly:"; sed 's/^/    /' "$log" | tail -30; return 1
  fi
  key=$(sed -n 's/^mcu: t=[0-9]* acquired token=[0-9]* .* key=\(.*\)$/\1/p' "$log")
  token=$(sed -n 's/^mcu: t=[0-9]* acquired token=\([0-9]*\) .*$/\1/p' "$log")
  renewed=$(grep -c '^mcu: t=[0-9]* renewed n=' "$log")
  rel=$(sed -n 's/^mcu: t=[0-9]* released ok=\([0-9]*\/[0-9]*\) deleted=\(.*\)$/\1 \2/p' "$log")
  [ "$(grep -c '^mcu: t=[0-9]* acquired ' "$log")" = 1 ] && [ -n "$key" ] && [ "${token:-0}" -gt 0 ] ||
    { fail "$name: no single grant with a fencing token"; return 1; }
  [ "$renewed" -ge 3 ] || { fail "$name: renewed $renewed times, not 3"; return 1; }
  # the lease's renewal count n=1,2,3... in order, none missing (a renewal that ends a
  # suspect spell, "recovered", counts: under load a round can miss its quorum for a
  # while and the lease still holds)
  if [ "$(sed -n 's/^mcu: t=[0-9]* renewed n=\([0-9]*\) .*/\1/p' "$log" | tr '\n' ' ')" != \
       "$(seq 1 "$renewed" | tr '\n' ' ')" ]; then
    fail "$name: renewals out of order or missing:"; grep -E 'renewed|suspect' "$log"; return 1
  fi
  [ "${rel%% *}" = "$nodes/$nodes" ] || { fail "$name: release confirmed by ${rel%% *} nodes, not $nodes/$nodes"; return 1; }
  # Nodes whose release deleted the MCU's own value (1): each held it until then. At
  # least N - quorum + 1 of them means every quorum another holder could gather
  # contains one of them, so no one else could hold the lease before the release.
  local deleted need
  deleted=$(echo "${rel#* }" | tr ',' '\n' | grep -c '^1$' || true)
  need=$((nodes - (nodes / 2 + 1) + 1))
  [ "$deleted" -ge "$need" ] ||
    { fail "$name: $deleted node(s) deleted the MCU's own value at release (deleted=${rel#* }), not $need"; return 1; }
  for p in "${plain[@]:0:$nodes}"; do
    [ "$(rcli "$p" exists "$key")" = 0 ] || { fail "$name: key $key still on the master at port $p"; return 1; }
  done
  ok "$name: granted (token $token), renewed $renewed times, released by $nodes/$nodes nodes, key $key gone from every master"
  eval "token_$(echo "$name" | tr -c 'a-z0-9\n' '_')=$token"
}

# plain-1: plain TCP, one master.
mcu plain-1 "" --node "$host_addr:${plain[0]}" --resource mcu-plain-1 --ttl 3000 --renewals 3 || true
check_run plain-1 1 || true

# tls-1: the same over TLS (server certificate checked against the run's CA, by name).
tls_args=(--tls --ca "$work/ca.crt" --server-name "$tls_name")
mcu tls-1 "" --node "$host_addr:${tls[0]}" "${tls_args[@]}" --resource mcu-tls-1 --ttl 3000 --renewals 3 || true
check_run tls-1 1 || true

# tls-3: three masters over TLS, and a host-side elkd (in the namespace, plain TCP to
# the same masters) that asks for the same resource while the MCU holds it.
res=mcu-tls-3
cat >"$work/elkd.conf" <<CONF
[fleet]
mode = redlock
gateway_id = host-gw
key_prefix = elk:
connect_timeout = 5s
request_timeout = 2s
[node a]
host = $host_addr
port = ${plain[0]}
[node b]
host = $host_addr
port = ${plain[1]}
[node c]
host = $host_addr
port = ${plain[2]}
[resource $res]
ttl = 3s
wait_min = 50ms
wait_max = 200ms
[agent]
socket = $work/elkd.sock
log = stderr
log_level = debug
CONF
ip netns exec "$ns" "$elkd" -c "$work/elkd.conf" 2>"$work/elkd.log" &
elkd_pid=$!
pids="$pids $elkd_pid"
# wait_for SECONDS CMD...: until CMD succeeds (a generous bound, not a timing assertion)
wait_for() {
  local end=$((SECONDS + $1)); shift
  until "$@"; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}
elkd_voting() {
  local s
  s=$(nsx "$elk" --socket "$work/elkd.sock" status 2>/dev/null) || return 1
  echo "$s" | grep -q "nodes_ready=3/3 " && ! echo "$s" | grep -Eq '(^|[[:space:]])(pending|quarantined:)'
}
wait_for 120 elkd_voting || { fail "tls-3: elkd's fleet not ready"; cat "$work/elkd.log"; }

hold=$work/host-refused
mcu tls-3 "" --node "$host_addr:${tls[0]}" --node "$host_addr:${tls[1]}" --node "$host_addr:${tls[2]}" \
  "${tls_args[@]}" --resource "$res" --ttl 3000 --renewals 3 --hold-until-file "$hold" &
mcu_pid=$!
# The host asks once the MCU holds the lease, and keeps asking until it gets it.
# (each wait also ends when the MCU's run has ended: a failed run fails at once)
mcu_granted() { grep -q '^mcu: t=[0-9]* acquired ' "$work/tls-3.txt" 2>/dev/null || ! kill -0 "$mcu_pid" 2>/dev/null; }
wait_for 180 mcu_granted || fail "tls-3: the MCU reported no grant"
nsx "$elk" --socket "$work/elkd.sock" run --wait 120s "$res" -- \
  sh -c 'echo "host-token=$ELK_FENCE_TOKEN"' >"$work/host.out" 2>"$work/host.err" &
host_pid=$!
# Once elkd's log shows a round the masters refused (busy: the MCU's value is there),
# the MCU may release: the contention is on record.
refused() { grep -Eq "$res: .*(BUSY|busy)" "$work/elkd.log" || ! kill -0 "$mcu_pid" 2>/dev/null; }
wait_for 180 refused && grep -Eq "$res: .*(BUSY|busy)" "$work/elkd.log" ||
  fail "tls-3: elkd recorded no refused round for $res while the MCU held it"
touch "$hold"
rc=0; wait "$mcu_pid" || rc=$?
hrc=0; wait "$host_pid" || hrc=$?
check_run tls-3 3 || true
host_token=$(sed -n 's/^host-token=\([0-9]*\)$/\1/p' "$work/host.out")
if [ "$hrc" != 0 ] || [ -z "$host_token" ]; then
  fail "tls-3: the host gateway did not get $res (elk run exit $hrc): $(cat "$work/host.err")"
elif [ -n "${token_tls_3:-}" ]; then
  # check_run saw enough masters delete the MCU's own value at its release that every
  # quorum of the host's includes one of them: there the host's SET NX could only land
  # after the MCU's release, so the host's grant followed it. Its token is the larger.
  if num_gt "$host_token" "$token_tls_3"; then
    ok "tls-3: the host gateway got $res after the MCU released it (refused while the MCU held it; tokens $token_tls_3 < $host_token)"
  else
    fail "tls-3: fencing tokens out of order: MCU $token_tls_3, host $host_token"
  fi
fi
for p in "${plain[@]}"; do
  [ "$(rcli "$p" exists "elk:{$res}")" = 0 ] || fail "tls-3: elk:{$res} left on the master at port $p"
done

# figures: instruction counts need QEMU's -icount (QEMU models no DWT cycle counter):
# with shift=5 every instruction advances the virtual clock by 32 ns, so one 25 MHz
# timer tick (40 ns) is 1.25 instructions. That clock then runs at its own rate, not
# the servers', so these runs switch the vote-hygiene clock check off and use long
# timeouts (--icount-figures); they only measure: their completion is checked, and that
# the TLS run's reconnect (after the release) resumed the first handshake's session.
shift=5
for n in plain tls; do
  a=(--node "$host_addr:${plain[0]}")
  [ $n = plain ] || a=(--node "$host_addr:${tls[0]}" "${tls_args[@]}")
  mcu "icount-$n" "-icount shift=$shift" "${a[@]}" --resource "mcu-icount-$n" --ttl 10000 \
    --renewals 1 --icount-figures || true
  if grep -q '^mcu: done: acquired 1, renewed 1, lost 0, released 1$' "$work/icount-$n.txt"; then
    ok "icount-$n: figures measured"
  else
    fail "icount-$n: the figures run did not finish:"; tail -20 "$work/icount-$n.txt"
  fi
done
# The TLS reconnect offered the session of the first handshake: the server must have
# taken it (no certificate in its reply: elk_tls_conn_resumed).
if grep -q '^mcu: t=[0-9]* reconnected node0 .* resumed=1 ' "$work/icount-tls.txt"; then
  ok "icount-tls: the reconnect was a resumed handshake"
else
  fail "icount-tls: the reconnect was not a resumed handshake:"
  grep 'reconnected\|FAIL' "$work/icount-tls.txt" || tail -20 "$work/icount-tls.txt"
fi
# ticks -> instructions: ticks * 40 ns / 2^shift ns
insns() { sed -n "s/^mcu: figure $2 \([0-9]*\) ticks$/\1/p" "$work/$1.txt" | awk -v s=$shift '{printf "%.0f", $1 * 40 / 2^s}'; }
fig() { sed -n "s/^mcu: figure $2 \([0-9]*\) .*$/\1/p" "$work/$1.txt"; }
{
  echo "== figures (instructions under -icount shift=$shift; bytes)"
  echo "   TLS handshake (progress() of the TLS transport, one node): $(insns icount-tls connect_progress_node0) instructions"
  full=$(insns icount-tls connect_progress_node0) again=$(insns icount-tls reconnect_progress_node0)
  echo "   TLS reconnect, resumed=$(fig icount-tls reconnect_resumed_node0) (progress() of the TLS transport, the same node after a drop): $again instructions;" \
    "full/resumed $(awk -v a="$full" -v b="$again" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }')" \
    "(the image: $(sed -n 's/^mcu: t=[0-9]* reconnected node0 .*full\/reconnect=\([0-9.]*\)$/\1/p' "$work/icount-tls.txt"));" \
    "one copy of the kept session (made after every handshake): $(insns icount-tls session_copy)"
  echo "   TCP connect (progress() of the plain transport, one node): $(insns icount-plain connect_progress_node0) instructions, reconnect $(insns icount-plain reconnect_progress_node0)"
  echo "   boot to first lease, plain: $(insns icount-plain boot_to_first_lease) instructions, of which work $(insns icount-plain boot_to_first_lease_work)"
  echo "   boot to first lease, TLS:   $(insns icount-tls boot_to_first_lease) instructions, of which work $(insns icount-tls boot_to_first_lease_work)"
  echo "   one renewal cycle (grant to RENEWED, work only), plain: $(insns icount-plain renewal_cycle_work), TLS: $(insns icount-tls renewal_cycle_work) instructions"
  echo "   stack high-water: plain-1 $(fig plain-1 stack_high_water), tls-1 $(fig tls-1 stack_high_water), tls-3 $(fig tls-3 stack_high_water) bytes"
  echo "   mbedTLS heap peak: tls-1 $(fig tls-1 mbedtls_heap_peak), tls-3 $(fig tls-3 mbedtls_heap_peak) bytes of $(fig tls-3 mbedtls_heap_arena)"
  echo "   lwIP heap peak: plain-1 $(fig plain-1 lwip_heap_peak), tls-3 $(fig tls-3 lwip_heap_peak) bytes of $(fig tls-3 lwip_heap_size)"
  echo "== flash and RAM by part ($out/size_by_part.md):"
  sed 's/^/   /' "$out/size_by_part.md"
} | tee "$out/figures.txt"

for n in plain-1 tls-1 tls-3; do
  echo "== the MCU's records ($n):"; sed 's/^/   /' "$work/$n.txt"
done
[ $status = 0 ] || { echo "== elkd's log:"; tail -40 "$work/elkd.log"; }
exit $status
