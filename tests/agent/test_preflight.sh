#!/bin/bash
# SPDX-License-Identifier: MIT
# elkd --check is a real preflight (issue 18): every refusal exits 2 (a configuration error,
# which the unit does not restart) with a message naming what to change.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
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
# Issue 26: the same server twice, client keys other users can read, certificates out of
# their dates, a client certificate with another key. Each refused by --check and at start.
D=$ELK_T_DIR
# mkcert NAME DAYS [FAKETIME]: self-signed EC certificate $D/NAME.pem and key $D/NAME.key,
# made at FAKETIME (faketime -f: the clock stands there, so the dates do not depend on how
# long openssl takes on a loaded machine) when given
mkcert() {
  (cd "$D" && ${3:+faketime -f "$3"} openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -nodes -keyout "$1.key" -out "$1.pem" -days "$2" -subj "/CN=elk $1") >>"$D/openssl.log" 2>&1 \
    || { echo "openssl failed:"; cat "$D/openssl.log"; exit 1; }
  chmod 600 "$D/$1.key"
}
mkcert client 30; mkcert other 30
mkcert expired 2 "2020-01-01 00:00:00"; mkcert future 30 "2099-01-01 00:00:00"
P1=$(free_port) P2=$(free_port)
{ printf '[fleet]\nmode = redlock\n[node a]\nhost = 127.0.0.1\nport = %s\n' "$P1"
  printf '[node b]\nhost = localhost\nport = %s\n[node c]\nhost = 127.0.0.1\nport = %s\n' "$P1" "$P2"
  printf '[resource r]\n[agent]\nsocket = %s\n' "$SOCK"; } > "$C"
refused "the same server twice (localhost, 127.0.0.1)" \
  "$C:6: [node b] (localhost port $P1) is the same server as $C:3: [node a] (127.0.0.1 port $P1), both reach 127.0.0.1:$P1"
# at start too (not only --check): exit 2 at once, never a fleet that counts a vote twice
timeout -k 5 60 "$ELKD" -c "$C" -f >"$D/start.log" 2>&1; rc=$?
check "the same server twice: elkd exits 2 at start" 2 $rc
check_contains "the same server twice: start message" "is the same server as $C:3: [node a]" "$(cat "$D/start.log")"
sed -i "s/^host = localhost/host = 127.0.0.2/" "$C"
"$ELKD" -c "$C" --check >/dev/null; check "three different addresses: --check exit 0" 0 $?

mtls() { conf "host = localhost" "tls = on" "ca = $D/${3:-ca.pem}" "cert = $D/$1" "key = $D/$2"; }
mtls client.pem client.key
"$ELKD" -c "$C" --check >/dev/null; check "client certificate and its key, mode 0600: exit 0" 0 $?
cp "$D/client.key" "$D/open.key"; chmod 0644 "$D/open.key"
mtls client.pem open.key
refused "client key every user can read" \
  "[node a]: the TLS client key '$D/open.key' has mode 0644 and is readable by every user: run chmod 600 '$D/open.key'"
if [ "$(id -g)" = 0 ]; then # group root holds other accounts: group-readable is refused too
  chmod 0640 "$D/open.key"
  refused "client key group root can read" "has mode 0640 and is readable by group 'root': run chmod 600 '$D/open.key'"
fi
chmod 0600 "$D/open.key"
"$ELKD" -c "$C" --check >/dev/null; check "the same key after chmod 600: exit 0" 0 $?

conf "host = localhost" "tls = on" "ca = $D/expired.pem"
refused "expired CA" "[node a]: the CA certificate '$D/expired.pem' (CN=elk expired) expired on 2020-01-03 00:00:00 UTC (valid from 2020-01-01 00:00:00 UTC to 2020-01-03 00:00:00 UTC; the clock says "
conf "host = localhost" "tls = on" "ca = $D/future.pem"
refused "CA not yet valid" "[node a]: the CA certificate '$D/future.pem' (CN=elk future) is not valid before 2099-01-01 00:00:00 UTC"
mtls expired.pem expired.key
refused "expired client certificate" "[node a]: the client certificate '$D/expired.pem' (CN=elk expired) expired on 2020-01-03"
mtls future.pem future.key
refused "client certificate not yet valid" "[node a]: the client certificate '$D/future.pem' (CN=elk future) is not valid before 2099-01-01"
mtls client.pem other.key
refused "client certificate with another key" "[node a]: client certificate and key do not match: $D/client.pem / $D/other.key"
finish
