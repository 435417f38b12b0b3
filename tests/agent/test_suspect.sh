#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 20, elkd side: a renewal round that misses its quorum before the deadline makes
# the lease SUSPECT: the holder gets EVENT SUSPECT <resource> <ms_left> <CODE_NAME>, STATUS
# says state=suspect, elk_lease_suspect_total counts it; once the nodes answer again the
# next renewal confirms it: EVENT RECOVERED (RENEWED's fields), state held again.
# (Refused scripts answer at once; silent masters (SIGSTOP) make SUSPECT come only ttl/20
# after the round was sent, the library's rule.)
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
session() { python3 "$(dirname "$0")/ctl_session.py" "$SOCK"; }
for n in a b c; do start_redis $n; done
{
  fleet3_conf gw-s "elk:"
  cat <<CONF
$(resource valve-1 20s 200ms)
$(agent_section)
CONF
} >"$C"
start_elkd "$C"
wait_ready
res_line() { printf 'lines st STATUS\n' | session | grep '^st: resource name=valve-1 '; }

session >"$ELK_T_DIR/held.out" <<'S' &
ask acquired ACQUIRE valve-1 60s
expect suspect 60 EVENT SUSPECT valve-1
expect recovered 60 EVENT RECOVERED valve-1
ask release RELEASE valve-1
S
sp=$!
track $sp
wait_for 90 'file_has "acquired ->" "$ELK_T_DIR/held.out"'
check_contains "granted" "acquired -> OK ACQUIRED valve-1 " "$(cat "$ELK_T_DIR/held.out")"
# two of three masters refuse the scripts (the ACL takes EVAL and EVALSHA away) and say
# so at once: the next renewal round misses its quorum well before the deadline
acl() { local n p; for n in b c; do eval "p=\$REDIS_PORT_$n"; rcli "$p" acl setuser default "$1" "$2" >/dev/null; done; }
acl -evalsha -eval
wait_for 60 'file_has "suspect ->" "$ELK_T_DIR/held.out"'
st=$(res_line)
acl +evalsha +eval
echo "$st"
check_contains "STATUS says suspect while it is" " state=suspect " "$st"
m=$("$ELK" --socket "$SOCK" status --metrics)
check_contains "elk_lease_suspect_total counts it" 'elk_lease_suspect_total{resource="valve-1"} 1' "$m"
wait_until 90 gone $sp
out=$(cat "$ELK_T_DIR/held.out")
echo "$out"
sl=$(echo "$out" | grep '^suspect -> ')
case "$sl" in
  "suspect -> EVENT SUSPECT valve-1 "[0-9]*" ELK_E_"*) ok "EVENT SUSPECT <resource> <ms_left> <CODE_NAME> ($sl)" ;;
  *) bad "EVENT SUSPECT <resource> <ms_left> <CODE_NAME>: got '$sl'" ;;
esac
rl=$(echo "$out" | grep '^recovered -> ')
case "$rl" in
  "recovered -> EVENT RECOVERED valve-1 "[0-9]*" "[0-9]*" 200 deadline_boottime_ms="[0-9]*) ok "EVENT RECOVERED with RENEWED's fields ($rl)" ;;
  *) bad "EVENT RECOVERED with RENEWED's fields: got '$rl'" ;;
esac
check_contains "released" "release -> OK RELEASED valve-1" "$out"
grep -q "valve-1: SUSPECT: a renewal round missed its quorum" "$ELK_T_DIR/elkd.log"; check "elkd logged SUSPECT" 0 $?
grep -q "valve-1: recovered after [0-9]* ms suspect" "$ELK_T_DIR/elkd.log"; check "elkd logged the recovery" 0 $?
finish
