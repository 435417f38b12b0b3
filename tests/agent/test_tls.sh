#!/bin/bash
# SPDX-License-Identifier: MIT
# elkd over TLS (port/mbedtls): a lease through a TLS server; a server signed by another
# CA is refused with a TLS error in status and no lease.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
gen_certs
start_redis_tls a
cat > "$C" <<CONF
[fleet]
gateway_id = gw-tls
tls = on
ca = $ELK_T_DIR/ca.pem
[node a]
host = 127.0.0.1
port = $REDIS_PORT_a
server_name = localhost
$(resource valve-1 3s 300ms)
$(agent_section)
log_level = debug
CONF
start_elkd "$C"
wait_ready
st=$("$ELK" --socket "$SOCK" status)
check_contains "status shows the node ready over TLS" "ready  yes" "$st"
out=$("$ELK" --socket "$SOCK" run valve-1 -- sh -c "redis-cli -s $REDIS_SOCK_a get 'elk:{valve-1}'; echo token=\$ELK_FENCE_TOKEN")
check "elk run over TLS exits 0" 0 $?
check "lease granted through TLS with a clock-floored token" 1 "$(echo "$out" | grep -cE '^token=1[0-9]{15}$')"
check_contains "lock value carries the gateway id" "gw-tls:" "$out"
kill -TERM $ELKD_PID; wait $ELKD_PID

# Trusting the wrong CA: the node never becomes ready, the error is named, nothing is granted.
sed -i "s#^ca = .*#ca = $ELK_T_DIR/other-ca.pem#" "$C"
start_elkd "$C"
names_tls_error() { "$ELK" --socket "$SOCK" status | grep -q "ELK_E_TLS_UNKNOWN_CA"; }
wait_until 60 names_tls_error; check "status names the TLS error (unknown CA)" 0 $?
"$ELK" --socket "$SOCK" run valve-1 -- true 2>"$ELK_T_DIR/err"; rc=$?
check "no lease through an untrusted server: exit 76 (fleet unreachable)" 76 $rc
check_contains "reason given" "ELK_E_FLEET_UNAVAILABLE" "$(cat "$ELK_T_DIR/err")"
check "nothing written to the server" 0 "$(redis-cli -s $REDIS_SOCK_a exists 'elk:{valve-1}')"
finish
