#!/bin/bash
# SPDX-License-Identifier: MIT
# elkd --check is a real preflight (issue 18): every refusal exits 2 (a configuration error,
# which the unit does not restart) with a message naming what to change.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
SOCK="$ELK_T_DIR/elkd.sock"
C="$ELK_T_DIR/elkd.conf"
gen_certs
umask 077
# conf NODE_LINES...: a one-node file with the given extra node lines
conf() {
  { printf '[node a]\n'; printf '%s\n' "$@"; printf '[resource r]\n[agent]\nsocket = %s\n' "$SOCK"; } > "$C"
}
refused() { # refused NAME NEEDLE
  local out rc
  out=$("$ELKD" -c "$C" --check 2>&1); rc=$?
  check "$1: --check exit 2" 2 $rc
  check_contains "$1: message" "$2" "$out"
}
conf "host = localhost" "tls = on" "ca = $ELK_T_DIR/ca.pem"
"$ELKD" -c "$C" --check >/dev/null; check "valid TLS files: --check exit 0" 0 $?

conf "host = localhost" "tls = on" "ca = $ELK_T_DIR/missing-ca.pem"
refused "missing CA file" "[node a]: "
out=$("$ELKD" -c "$C" --check 2>&1); check_contains "missing CA file: names the file" "missing-ca.pem" "$out"

printf 'not a certificate\n' > "$ELK_T_DIR/junk.pem"
conf "host = localhost" "tls = on" "ca = $ELK_T_DIR/junk.pem"
refused "CA file that is no certificate" "junk.pem"

conf "host = localhost" "tls = on" "ca = $ELK_T_DIR/ca.pem" "cert = $ELK_T_DIR/server.pem" "key = $ELK_T_DIR/junk.pem"
refused "key file that is no key" "[node a]: "

conf "host = 127.0.0.1" "tls = on" "ca = $ELK_T_DIR/ca.pem"
refused "TLS to an IP without server_name" "tls is on and host '127.0.0.1' is an IP address: set 'server_name'"
conf "host = 127.0.0.1" "tls = on" "ca = $ELK_T_DIR/ca.pem" "server_name = localhost"
"$ELKD" -c "$C" --check >/dev/null; check "TLS to an IP with server_name: exit 0" 0 $?

printf 'pw\n' > "$ELK_T_DIR/pw"; chmod 0644 "$ELK_T_DIR/pw"
conf "host = 127.0.0.1" "password_file = $ELK_T_DIR/pw"
refused "password_file every user can read" "is readable by every user: run chmod o-r '$ELK_T_DIR/pw'"
chmod 0640 "$ELK_T_DIR/pw"
"$ELKD" -c "$C" --check >/dev/null; check "password_file readable by owner and group: exit 0" 0 $?

conf "host = 127.0.0.1" "password = pw"
chmod 0644 "$C"
refused "inline password in a file every user can read" "has an inline 'password' and the file is readable by every user: run chmod o-r"
chmod 0600 "$C"
"$ELKD" -c "$C" --check >/dev/null; check "inline password, file private: exit 0" 0 $?

conf "host = 127.0.0.1"
printf '[resource s]\nallow_users = no-such-user-elk18\n' >> "$C"
refused "unknown user in allow_users" "key 'allow_users' in [resource s]: no user 'no-such-user-elk18'"
finish
