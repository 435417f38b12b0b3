#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 19: a reload that changes TLS material sets the fleet up again (only while no lease
# is held); a CA file that cannot be used fails the reload and the running TLS fleet goes on.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
gen_certs
start_redis_tls a
write_conf() { # write_conf CA_FILE
  cat > "$C" <<CONF
[fleet]
gateway_id = gw-rtls
tls = on
ca = $1
[node a]
host = 127.0.0.1
port = $REDIS_PORT_a
server_name = localhost
[resource valve-1]
ttl = 3s
$(agent_section)
CONF
}
write_conf "$ELK_T_DIR/ca.pem"
start_elkd "$C"
wait_ready
E() { "$ELK" --socket "$SOCK" "$@"; }
check "a lease over TLS" 0 "$(E run valve-1 -- true; echo $?)"

# A CA that is not PEM: the reload fails and the fleet runs on with the old CA.
echo "not a certificate" > "$ELK_T_DIR/bad-ca.pem"
write_conf "$ELK_T_DIR/bad-ca.pem"
E reload >/dev/null 2>&1; check "a reload with an unusable CA fails" 78 $?
check_contains "the log names the TLS problem" "reload failed" "$(grep 'reload failed' "$ELK_T_DIR/elkd.log")"
wait_ready
check "leases still work over the old TLS setup" 0 "$(E run valve-1 -- true; echo $?)"

# A CA that works (a copy of the right one): applied, the fleet is set up again.
cp "$ELK_T_DIR/ca.pem" "$ELK_T_DIR/ca2.pem"
write_conf "$ELK_T_DIR/ca2.pem"
out=$(E reload); check "a reload with a new CA file" "0 reloaded" "$? $out"
wait_ready
check "leases work over the new TLS setup" 0 "$(E run valve-1 -- true; echo $?)"
finish
