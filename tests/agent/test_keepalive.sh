#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 20, elkd side: KEEPALIVE and ACQUIRE ... keepalive=<interval> (a hold whose client
# stops proving its work is alive is no longer renewed: EVENT RENEW_STOPPED
# ELK_E_KEEPALIVE_MISSED, then LOST), the resource's own keepalive key, the vote hygiene
# and SUSPECT fields of STATUS / JSON / metrics, and elkd --check's max_hold = 0 warning.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
session() { python3 "$(dirname "$0")/ctl_session.py" "$SOCK"; }

# --check: max_hold = 0 is valid, but said
cat >"$C.check" <<CONF
[node a]
host = 127.0.0.1
[resource forever]
max_hold = 0
[resource capped]
$(agent_section)
CONF
out=$("$ELKD" -c "$C.check" --check 2>&1); rc=$?
echo "$out"
check "--check with max_hold = 0: exit 0 (a warning, not an error)" 0 $rc
check_contains "--check warns about max_hold = 0" \
  "$C.check:4: warning: [resource forever] max_hold = 0: a hung holder keeps the resource forever; set a cap" "$out"
check "only the resource without a cap (the default is 1h) is warned about" 1 "$(echo "$out" | grep -c "warning:")"

# The hygiene may keep a just-started server out of the vote for a while (its restart is
# new): every ACQUIRE here waits, so that is a delay, never a failure.
# valve-1: ttl 3 s (about 1.8 s between a renewal and its deadline) and the KEEPALIVE hold
# below keepalive=3000 with a KEEPALIVE every 150 ms: only a stall of seconds, not one of about
# a second as with ttl 2 s and keepalive=1500, turns the "renewed, nothing else" check red.
elkd_up a <<CONF
$(resource valve-1 3s 200ms)
$(resource valve-2 3s 200ms)
keepalive = 500ms
$(agent_section)
CONF

out=$(session <<'S'
ask help HELP
ask bad_interval ACQUIRE valve-1 0 keepalive=2x
ask bad_option ACQUIRE valve-1 0 heartbeat=1
ask not_held KEEPALIVE valve-1
ask plain ACQUIRE valve-1 30s
expect plain_renewed 30 EVENT RENEWED valve-1
expect plain_renewed_again 30 EVENT RENEWED valve-1
ask plain_release RELEASE valve-1
S
)
echo "$out"
line() { echo "$out" | grep -F -- "$1 ->" | head -1; }
check_contains "HELP names KEEPALIVE" "KEEPALIVE <resource>" "$(line help)"
check_contains "HELP names keepalive=" "keepalive=<interval>" "$(line help)"
check_contains "a bad interval is refused" "ERR ELK_E_CTL_SYNTAX" "$(line bad_interval)"
check_contains "an unknown option is refused" "ERR ELK_E_CTL_SYNTAX" "$(line bad_option)"
check_contains "KEEPALIVE without a lease" "ERR ELK_E_NOT_HELD" "$(line not_held)"
check_contains "plain ACQUIRE" "OK ACQUIRED valve-1 " "$(line plain)"
# the control: without keepalive= the lease is renewed with no KEEPALIVE at all
check_contains "no keepalive asked: renewed without KEEPALIVE" "EVENT RENEWED valve-1 " "$(line plain_renewed_again)"
check_contains "plain RELEASE" "OK RELEASED valve-1" "$(line plain_release)"

# KEEPALIVE round trip while renewals go on; another connection may not keep it alive.
session >"$ELK_T_DIR/held.out" <<'S' &
ask acquired ACQUIRE valve-1 30s keepalive=3000
ask first KEEPALIVE valve-1
keepalive alive valve-1 5 150
ask release RELEASE valve-1
ask after_release KEEPALIVE valve-1
S
held_pid=$!
track $held_pid
wait_for 40 'file_has "first ->" "$ELK_T_DIR/held.out"'
other=$(printf 'ask other KEEPALIVE valve-1\n' | session)
check_contains "KEEPALIVE from a connection that does not hold it" "ERR ELK_E_NOT_HELD" "$other"
st=$(printf 'lines st STATUS\n' | session | grep '^st: resource name=valve-1 ')
check_contains "STATUS shows the hold's keepalive" " keepalive_ms=3000 " "$st"
wait_until 60 gone $held_pid
out=$(cat "$ELK_T_DIR/held.out")
echo "$out"
check_contains "ACQUIRE with keepalive=" "OK ACQUIRED valve-1 " "$(line acquired)"
check "KEEPALIVE answered" "first -> OK KEEPALIVE valve-1" "$(line first)"
alive=$(line alive)
case "$alive" in
  "alive -> "*" ok, "[1-9]*" renewed, []") ok "KEEPALIVEs sent in time: renewed, nothing else ($alive)" ;;
  *) bad "KEEPALIVEs sent in time: expected renewals and no other line, got: $alive" ;;
esac
check_contains "RELEASE" "OK RELEASED valve-1" "$(line release)"
check_contains "KEEPALIVE after RELEASE" "ERR ELK_E_NOT_HELD" "$(line after_release)"

# No KEEPALIVE within the interval: renewal stops, the client is told why, LOST follows.
out=$(session <<'S'
ask acquired ACQUIRE valve-1 30s keepalive=300
expect stopped 30 EVENT RENEW_STOPPED valve-1
ask late KEEPALIVE valve-1
expect lost 30 EVENT LOST valve-1
ask conf_acquired ACQUIRE valve-2 30s
expect conf_stopped 30 EVENT RENEW_STOPPED valve-2
expect conf_lost 30 EVENT LOST valve-2
S
)
echo "$out"
check_contains "keepalive=300: granted" "OK ACQUIRED valve-1 " "$(line acquired)"
check "missed keepalive: renewal stopped, cause named" \
  "stopped -> EVENT RENEW_STOPPED valve-1 ELK_E_KEEPALIVE_MISSED" "$(line stopped)"
case "$(line late)" in
  *"ERR ELK_E_KEEPALIVE_MISSED"* | *"ERR ELK_E_NOT_HELD"*) ok "a late KEEPALIVE does not revive it ($(line late))" ;;
  *) bad "a late KEEPALIVE does not revive it: got $(line late)" ;;
esac
check_contains "then LOST with the same cause" "EVENT LOST valve-1 ELK_E_KEEPALIVE_MISSED" "$(line lost)"
check_contains "resource keepalive = 500ms: granted" "OK ACQUIRED valve-2 " "$(line conf_acquired)"
check "resource keepalive: renewal stopped" \
  "conf_stopped -> EVENT RENEW_STOPPED valve-2 ELK_E_KEEPALIVE_MISSED" "$(line conf_stopped)"
check_contains "resource keepalive: LOST" "EVENT LOST valve-2 ELK_E_KEEPALIVE_MISSED" "$(line conf_lost)"
grep -q "valve-1: no KEEPALIVE from client [0-9]* within 300 ms: renewal stopped" "$ELK_T_DIR/elkd.log"
check "elkd logged the missed keepalive" 0 $?

# STATUS: vote hygiene per node (text, JSON), the metrics of issue 20.
st=$(printf 'lines st STATUS\n' | session)
echo "$st"
check_contains "STATUS node line has hygiene=" " hygiene=" "$(echo "$st" | grep '^st: node name=a ')"
js=$("$ELK" --socket "$SOCK" status --json)
check_contains "JSON node has hygiene" '"hygiene":"' "$js"
check_contains "JSON node has quarantined_ms" '"quarantined_ms":' "$js"
python3 -c 'import json,sys; json.loads(sys.argv[1])' "$(echo "$js" | sed -n 's/^OK JSON //p;/^{/p' | head -1)"
check "STATUS JSON still parses" 0 $?
m=$("$ELK" --socket "$SOCK" status --metrics)
check_contains "metric elk_node_quarantined" 'elk_node_quarantined{node="a"} ' "$m"
check_contains "metric elk_lease_suspect_total" 'elk_lease_suspect_total{resource="valve-1"} ' "$m"
finish
