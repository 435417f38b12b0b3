#!/bin/bash
# SPDX-License-Identifier: MIT
# The OpenWrt package's UCI side, without OpenWrt: firmware/openwrt/files/elkd-uci2ini is fed
# `uci show elkd` output, valid and broken, and the INI it writes is checked by the real
# `elkd --check`. The `uci show` text of the shipped /etc/config/elkd is made here the way
# uci prints it (named sections elkd.NAME=TYPE, options elkd.NAME.OPT='value').
# Also: the package's generated config header matches what Kconfig makes now, and the
# Makefile keeps the rules the issue set (no host Python, ports, install dir, conffiles).
# Usage: scripts/openwrt-test.sh ELKD     Exit: 0 all passed, 1 a check failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
elkd=$1
tr=$root/firmware/openwrt/files/elkd-uci2ini
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok: $*"; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# A UCI file as `uci show` prints it (named and anonymous sections, options; no lists).
uci_show() {
  awk -v pkg=elkd '
    /^[ \t]*(#|$)/ { next }
    $1 == "config" { t = $2; n = $3; gsub(/'"'"'/, "", n); gsub(/'"'"'/, "", t)
                     if (n == "") { n = "@" t "[" (cnt[t] + 0) "]" } cnt[t]++
                     print pkg "." n "=" t; next }
    $1 == "option" { o = $2; v = $0; sub(/^[ \t]*option[ \t]+[^ \t]+[ \t]+/, "", v)
                     if (v !~ /^'"'"'/) v = "'"'"'" v "'"'"'"
                     print pkg "." n "." o "=" v }' "$1"
}
expect() { # description expected-translator-rc expected-check-rc needle uci-show-text
  local what=$1 want_tr=$2 want_ck=$3 needle=$4 got_tr=0 got_ck=-
  printf '%s\n' "$5" >"$w/in"
  # As elkd.init does: the INI may hold a password, so only its owner reads it.
  (umask 077 && "$tr" <"$w/in" >"$w/elkd.conf.new" 2>"$w/err") || got_tr=$?
  mv -f "$w/elkd.conf.new" "$w/elkd.conf"
  if [ "$got_tr" = 0 ]; then
    got_ck=0; "$elkd" -c "$w/elkd.conf" --check >>"$w/err" 2>&1 || got_ck=$?
  fi
  if [ "$got_tr" = "$want_tr" ] && [ "$got_ck" = "$want_ck" ] && grep -q -- "$needle" "$w/err" "$w/elkd.conf"; then
    ok "$what (translator $got_tr, elkd --check $got_ck)"
  else
    bad "$what: translator $got_tr (want $want_tr), elkd --check $got_ck (want $want_ck), '$needle' expected:"
    sed 's/^/    /' "$w/err" "$w/elkd.conf"
  fi
}

sample=$(uci_show "$root/firmware/openwrt/files/elkd.config")
grep -q "^elkd.fleet.example='1'$" <<<"$sample" && ok "shipped example is marked (option example)" ||
  bad "shipped /etc/config/elkd lacks option example '1'"
# Its files, made here (elkd --check reads the CA and the password file).
mkdir -p "$w/etc"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$w/etc/ca.key" -out "$w/etc/ca.pem" -subj /CN=elk-test-ca \
  -days 2 >/dev/null 2>&1
(umask 077 && echo secret >"$w/etc/redis.password")
expect "shipped example translates and passes elkd --check" 0 0 '^\[resource valve-1\]$' \
  "$(sed "s|/etc/elkd/|$w/etc/|" <<<"$sample")"
valid="elkd.fleet=fleet
elkd.fleet.mode='single'
elkd.fleet.gateway_id='gw-1'
elkd.@node[0]=node
elkd.@node[0].host='127.0.0.1'
elkd.@node[0].port='6379'
elkd.door=resource
elkd.door.ttl='5s'
elkd.door.stop_margin='500ms'
elkd.agent=agent
elkd.agent.socket='/tmp/elkd.sock'"
expect "single node, anonymous node section" 0 0 '^\[node node0\]$' "$valid"
expect "value with a quote and spaces at the ends" 0 0 'password = "  pa'"'"'ss  "' \
  "$valid
elkd.@node[0].password='  pa'\\''ss  '"
expect "broken: ttl not a duration (elkd --check names it)" 0 2 "ttl" "$(sed "s/ttl='5s'/ttl='5x'/" <<<"$valid")"
expect "broken: misspelt option (elkd --check names it)" 0 2 "hots" "$(sed "s/\.host=/.hots=/" <<<"$valid")"
expect "broken: no node at all (elkd --check)" 0 2 "node" "$(grep -v '@node' <<<"$valid")"
expect "broken: unknown section type" 2 - "unknown section type" "$valid
elkd.x=nodes"
expect "broken: a list value" 2 - "list" "$valid
elkd.door.wait_min='1s' '2s'"
expect "broken: option before its section" 2 - "before its section" "elkd.a.host='x'
$valid"
expect "broken: resource name with a space" 2 - "cannot be a section name" "$valid
elkd.door.name='door east'"
expect "broken: not uci show output" 2 - "no =" "[fleet]"
expect "broken: empty uci show" 2 - "no elkd configuration" ""

# The pre-generated config header is what Kconfig's defaults give today.
if command -v python3 >/dev/null && python3 -c 'import kconfiglib' 2>/dev/null; then
  python3 "$root/cmake/kconfig.py" "$root/Kconfig" "" "$w/.config" "$w/h" "$w/c" >/dev/null
  if cmp -s "$w/h" "$root/firmware/openwrt/config/elk_config.h" && cmp -s "$w/c" "$root/firmware/openwrt/config/elk_config.cmake"; then
    ok "firmware/openwrt/config matches the Kconfig defaults"
  else
    bad "firmware/openwrt/config is stale: regenerate with cmake/kconfig.py (see docs/openwrt.md)"
  fi
fi
mk=$root/firmware/openwrt/Makefile
for rule in 'PKG_LICENSE_FILES:=' 'DEPENDS:=+libmbedtls' 'ELK_PORTS="posix;mbedtls"' '$(PKG_INSTALL_DIR)/usr/sbin/elkd' \
            'ELK_PREGENERATED_CONFIG' '/etc/config/elkd'; do
  grep -qF -- "$rule" "$mk" && ok "Makefile has $rule" || bad "Makefile lacks $rule"
done
for gone in 'python3' 'PKG_MIRROR_HASH:=skip' 'PKG_SOURCE_VERSION:=HEAD' '$(PKG_BUILD_DIR)/firmware/elk'; do
  grep -qF -- "$gone" "$mk" && bad "Makefile still has $gone" || ok "Makefile has no $gone"
done
grep -q 'procd_add_reload_trigger "elkd"' "$root/firmware/openwrt/files/elkd.init" && ok "init has a reload trigger" ||
  bad "init lacks procd_add_reload_trigger"
echo "openwrt: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
