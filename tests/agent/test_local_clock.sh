#!/bin/bash
# SPDX-License-Identifier: MIT
# A gateway whose own clock runs 5 % slow (libfaketime on its elkd only: redis-server hangs
# under it) sees every server's clock run ahead at one rate. The clock check quarantines
# them all, as before (no vote, no lease: unchanged); what is new (issue 26) is that elkd
# names the likely cause, its own clock: one log line per spell, local_clock=suspect in
# STATUS (text and JSON), elk_agent_local_clock_suspect 1 in the metrics. A second elkd on
# the same servers with the true clock is the negative control: nothing suspect there.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
FAKETIME_LIB=${FAKETIME_LIB:-/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1}
[ -r "$FAKETIME_LIB" ] || { echo "libfaketime not found at $FAKETIME_LIB (apt-get install faketime)"; exit 1; }
start_redis a; start_redis b; start_redis c
LOG="$ELK_T_DIR/elkd.log"
SOCK2="$ELK_T_DIR/elkd-true.sock" C2="$ELK_T_DIR/elkd-true.conf" LOG2="$ELK_T_DIR/elkd-true.log"
conf() { # conf GATEWAY SOCKET
  fleet3_conf "$1" lc:
  printf '[resource valve]\nttl = 2s\nstop_margin = 200ms\n[agent]\nsocket = %s\n' "$2"
}
conf gw-slow "$SOCK" > "$C"
conf gw-true "$SOCK2" > "$C2"
sup_elkd "$SOCK" "$LOG" "$C" env LD_PRELOAD="$FAKETIME_LIB" FAKETIME="+0 x0.95"
sup_elkd "$SOCK2" "$LOG2" "$C2"
E() { "$ELK" --socket "$SOCK" "$@"; }

suspect() { E status --json | grep -q '"local_clock":"suspect"'; }
wait_until 90 suspect; check_true "the slow gateway's STATUS names its own clock (JSON)" $?
st=$(E status --json)
ppm=$(echo "$st" | sed -n 's/.*"local_clock_ppm":\([-0-9]*\).*/\1/p')
figure local_clock_ppm "$ppm"
[ "$ppm" -gt 30000 ] && [ "$ppm" -lt 80000 ]
check_true "the rate is about 5 % (1/0.95 - 1 = 52632 ppm): $ppm" $?
txt=$(E status)
echo "$txt" | head -1
check_contains "STATUS text: local_clock=suspect" "local_clock=suspect local_clock_ppm=" "$txt"
line=$(grep -m1 'connected nodes ran ahead of ours by' "$LOG")
echo "$line"
check_contains "elkd's log names the gateway's clock" "this gateway's own clock is the likely cause" "$line"
check_contains "... as an error with its code" "ELK_E_LOCAL_CLOCK" "$line"
check_contains "... for all three nodes" "the clocks of all 3 connected nodes ran ahead" "$line"
figure log_line "\"$(echo "$line" | cut -c1-160)\""

# the jumps go on (the servers' clocks keep running ahead): the line is said once a spell,
# not once a jump (the spell goes on as long as every node keeps jumping alike)
jumps() { E status --metrics | awk '$1 == "elk_node_clock_jumps_total{node=\"'"$1"'\"}" {print $2}'; }
many() { [ "$(jumps a)" -ge 8 ] 2>/dev/null && [ "$(jumps b)" -ge 8 ] 2>/dev/null && [ "$(jumps c)" -ge 8 ] 2>/dev/null; }
wait_until 90 many; check_true "at least 8 jumps seen on each node" $?
mval() { printf '%s\n' "$M" | awk -v k="$1" '$1 == k {print $2}'; }
M=$(E status --metrics); s1=$(mval elk_agent_local_clock_spells_total)
q=$(grep -c 'quarantined: clock ran' "$LOG")
n=$(grep -c 'connected nodes ran ahead of ours by' "$LOG")
M=$(E status --metrics); s2=$(mval elk_agent_local_clock_spells_total)
printf '%s\n' "$M" > "$ELK_T_DIR/metrics.txt"
figure quarantine_lines "$q"
figure local_clock_lines "$n"
figure local_clock_spells "$s2"
[ "$n" -ge "$s1" ] && [ "$n" -le "$s2" ]; check_true "one line a spell ($n lines, $s1..$s2 spells)" $?
[ "$n" -ge 1 ] && [ $((n * 8)) -le "$q" ]; check_true "far fewer than the quarantines ($n lines, $q quarantine lines)" $?
susp() { M=$(E status --metrics); [ "$(mval elk_agent_local_clock_suspect)" = 1 ]; }
wait_until 30 susp; check_true "metric: elk_agent_local_clock_suspect 1" $?
rate=$(mval elk_agent_local_clock_rate)
awk -v r="$rate" 'BEGIN {exit !(r > 0.03 && r < 0.08)}'; check_true "metric: the rate ($rate)" $?
if command -v promtool >/dev/null; then
  promtool check metrics < "$ELK_T_DIR/metrics.txt" >"$ELK_T_DIR/promtool.out" 2>&1
  check "promtool accepts the exposition" 0 $?
fi

# nothing changed in what is safe: every node quarantined for its clock, and the slow gateway
# cannot hold the valve through a 3 s command (73/76: no lease, 75: lost at the first renewal,
# whose replies show the servers running ahead)
for x in a b c; do
  p=$(eval echo "\$REDIS_PORT_$x")
  grep -q "node 127.0.0.1:$p: quarantined: clock ran" "$LOG"; check_true "node $x quarantined for its clock" $?
done
E run valve -- sleep 3 2>/dev/null; rc=$?
[ $rc = 73 ] || [ $rc = 75 ] || [ $rc = 76 ]; check_true "the slow gateway cannot hold the valve through 3 s (exit $rc)" $?

# negative control: the true clock on the same servers sees nothing suspect, and votes
true_ready() { voting "$SOCK2"; }
wait_until 60 true_ready; check_true "the true-clock gateway's nodes vote" $?
st2=$("$ELK" --socket "$SOCK2" status --json)
check_contains "the true-clock gateway: local_clock=ok" '"local_clock":"ok"' "$st2"
[ "$(grep -c 'likely cause' "$LOG2")" = 0 ]; check_true "... and nothing in its log" $?
"$ELK" --socket "$SOCK2" run valve -- true; check "the true-clock gateway gets the lease" 0 $?
finish
