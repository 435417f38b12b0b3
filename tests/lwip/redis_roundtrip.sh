#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs lwip_redis_roundtrip against a real redis-server over a real lwIP stack:
#   - a network namespace of its own (nothing in it reaches any other network),
#   - a TAP device in it with the kernel-side address 192.0.2.1/24 (TEST-NET-1),
#   - redis-server in it, bound to that address only (plain + TLS ports, certificates
#     made for this run with openssl),
#   - the test binary in it, running lwIP (tapif) at 192.0.2.2 on the same TAP.
# Everything is torn down on exit. Exits 77 (ctest SKIP) where that is impossible.
# Usage: redis_roundtrip.sh TEST_BINARY   (ELK_LWIP_TEST_WRAPPER="valgrind -q" to wrap it)
set -euo pipefail
bin=$1
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root to create a network namespace and a TAP device"
[ -c /dev/net/tun ] || skip "no /dev/net/tun (modprobe tun, or give the container the device)"
command -v ip >/dev/null || skip "no ip(8): apt-get install iproute2"
command -v redis-server >/dev/null || skip "no redis-server: apt-get install redis-server"
command -v openssl >/dev/null || skip "no openssl"

ns="elk-lwip-$$"
tap=elktap0
host_addr=192.0.2.1
lwip_addr=192.0.2.2
tls_name=redis.elk.test
work=$(mktemp -d /tmp/elk-lwip.XXXXXX)
redis_pid=""
extra_pids=""

cleanup() {
  for pid in $redis_pid $extra_pids; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # Anything still inside our namespace was started by this script.
  for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if ! ip netns add "$ns" 2>"$work/netns.err"; then
  skip "cannot create a network namespace: $(cat "$work/netns.err")"
fi
nsx() { ip netns exec "$ns" "$@"; }
nsx ip link set lo up
nsx ip tuntap add dev "$tap" mode tap || skip "cannot create a TAP device in the namespace"
nsx ip addr add "$host_addr/24" dev "$tap"
# MTU 576: at MTU 1500 Debian's liblwip 2.1.3 overflows its heap when tapif receives
# full-size frames (valgrind: pbuf_take in the tapif thread writes past a 616-byte
# PBUF_POOL block; see docs/lwip.md). Frames of at most 590 bytes keep the test on
# lwIP's working path; TCP segments get smaller, that is all.
nsx ip link set "$tap" mtu 576
nsx ip link set "$tap" up

# Certificates for this run only: a CA and a server certificate for $tls_name.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=elk lwip test CA" \
  -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$tls_name" \
  -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s\n' "$tls_name" > "$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
  -CAcreateserial -days 2 -extfile "$work/ext.cnf" -out "$work/server.crt" 2>/dev/null

# The namespace is ours alone, so any port is free; vary them anyway.
port=$((20000 + RANDOM % 20000))
tls_port=$((port + 1))
closed_port=$((port + 2))
# Started directly (not through nsx) so that $! is redis-server itself.
ip netns exec "$ns" redis-server --bind "$host_addr" --port "$port" --tls-port "$tls_port" \
  --tls-cert-file "$work/server.crt" --tls-key-file "$work/server.key" \
  --tls-ca-cert-file "$work/ca.crt" --tls-auth-clients no \
  --save "" --appendonly no --daemonize no --protected-mode no \
  --dir "$work" --logfile "$work/redis.log" &
redis_pid=$!

# Two more independent servers (plain) for a three-node Redlock fleet.
fleet_ports="$port"
for i in 3 4; do
  ip netns exec "$ns" redis-server --bind "$host_addr" --port $((port + i)) \
    --save "" --appendonly no --daemonize no --protected-mode no \
    --dir "$work" --logfile "$work/redis-$i.log" &
  extra_pids="$extra_pids $!"
  fleet_ports="$fleet_ports,$((port + i))"
done

for _ in $(seq 1 100); do
  if nsx redis-cli -h "$host_addr" -p "$port" ping 2>/dev/null | grep -q PONG; then break; fi
  if ! kill -0 "$redis_pid" 2>/dev/null; then
    echo "redis-server did not start:"; cat "$work/redis.log"; exit 1
  fi
  sleep 0.05
done
for p in ${fleet_ports//,/ }; do
  for _ in $(seq 1 100); do
    nsx redis-cli -h "$host_addr" -p "$p" ping 2>/dev/null | grep -q PONG && break
    sleep 0.05
  done
  nsx redis-cli -h "$host_addr" -p "$p" ping | grep -q PONG || { echo "redis-server on $p not answering"; cat "$work"/redis*.log; exit 1; }
done

set +e
nsx env PRECONFIGURED_TAPIF="$tap" ELK_LWIP_ADDR="$lwip_addr" ELK_REDIS_HOST="$host_addr" \
  ELK_REDIS_PORT="$port" ELK_REDIS_TLS_PORT="$tls_port" ELK_REDIS_CLOSED_PORT="$closed_port" ELK_REDIS_FLEET_PORTS="$fleet_ports" \
  ELK_TLS_CA="$work/ca.crt" ELK_TLS_NAME="$tls_name" ${ELK_LWIP_TEST_WRAPPER:-} "$bin"
rc=$?
set -e
exit $rc
