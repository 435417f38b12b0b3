#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 13 (issue 26): masters that lose their data with their connections open.
# Three masters without persistence, two elkd gateways. gw-a drives the valve under
# `elk guard` (work.sh); gw-b waits for it (elk run --wait). Then FLUSHALL on two of the
# three masters, right after one of gw-a's renewals: nothing restarts, no connection drops.
#  1. gw-b's next attempt finds the fleet marker missing on both, makes it anew and gets no
#     vote from them: its STATUS shows them "quarantined: data lost (marker N s old)".
#  2. gw-a is stopped (75): at its next renewal, which finds its value gone on the majority,
#     or at its deadline when its own probe saw the young markers first (it then asks those
#     masters nothing); gw-b gets the valve only once the markers are W old.
#  3. From the records: the actuator log (true time) shows one holder at a time and no stale
#     token accepted; the elkd logs show gw-b's grant after gw-a's loss; every token the
#     guard accepted (in grant order) is higher than the one before, gw-b's above gw-a's
#     although the flushed majority lost its fence counters (the token's clock floor).
# S13_HYGIENE=off, the negative control (ctest scenarios.flush_amnesia_control): vote_hygiene
# = off, plain Redlock: gw-b is granted on the two flushed masters while gw-a still drives,
# and the scenario passes only if the actuator log shows that overlap.
# usage: s13_flush_amnesia.sh ELKD ELK
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
# ttl 6 s: gw-a renews every 2 s, so the control's overlap (flush to gw-a's next renewal) is
# seconds long even on a loaded machine; W = ttl + drift = 6.06 s
TTL=6000 STOP=300
control=no
[ "${S13_HYGIENE:-on}" = off ] && { S_FLEET_EXTRA="vote_hygiene = off"; control=yes; }

two_gateways $TTL $STOP
wait_all_vote gw-a gw-b
warm_up gw-a valve 3
act_mark
run_bg gw-a RA valve -- "$WORK" gw-a 0 0.05
tokA=$(wait_tick gw-a) || { bad "gw-a never drove the actuator"; finish; }
ok "gw-a drives the valve with token $tokA"
run_bg gw-b RB --wait 60s valve -- "$WORK" gw-b 10 0.05
act_mark # gw-b's ticks, whenever they come, are after this line

say "1. FLUSHALL on masters 1 and 2 right after a renewal of gw-a (no restart)"
wait_renewals_of gw-a valve 1
t_flush=$(now_ms)
rcli r1 flushall >/dev/null
rcli r2 flushall >/dev/null
ok "FLUSHALL on r1 and r2 at $t_flush ms"

if [ $control = yes ]; then
  tokB=$(wait_tick gw-b) || true
  wait "$RA"; rcA=$?
  wait "$RB"; rcB=$?
  figure tokens "$tokA->${tokB:-0}"
  out=$(act_check --tag s13_control --allow-overlap)
  echo "$out"
  n=$(echo "$out" | sed -n 's/^FIGURE s13_control lease_overlaps=//p')
  [ "${n:-0}" -gt 0 ]; check_true "control (vote_hygiene off): gw-b was granted while gw-a drove (overlap)" $?
  figure control_overlap_ms "$(echo "$out" | sed -n 's/^FIGURE s13_control max_overlap_ms=//p')"
  finish
fi

for n in n1 n2; do
  wait_until 30 node_quarantined gw-b $n; check_true "gw-b: STATUS shows $n quarantined" $?
  line=$(node_line gw-b $n)
  echo "gw-b: $line"
  check_contains "gw-b: $n's line says why" "data_lost_(marker" "$line"
done
figure gw-b_n1_hygiene "\"$(node_json gw-b n1 hygiene)\""
node_quarantined gw-b n3 && bad "gw-b: n3 (not flushed) quarantined too" || ok "gw-b: n3 (not flushed) votes"

say "2. gw-a loses the lease; gw-b gets it after the quarantine"
wait "$RA"; rcA=$?
check "gw-a's lease is lost (75)" 75 $rcA
tokB=$(wait_tick gw-b) || { bad "gw-b never got the valve"; finish; }
t_b=$(awk -v g=gw-b '$2 == g && $4 == "tick" && $5 == "accepted" {print int($1 / 1000000); exit}' "$ACT_LOG")
wait "$RB"; rcB=$?
check "gw-b's run ends normally" 0 $rcB
figure tokens "$tokA->$tokB"
figure flush_to_b_drives_ms "$((${t_b:-$t_flush} - t_flush))"

say "3. the records"
out=$(act_check --tag s13)
check "actuator log: one holder at a time, no stale token accepted" 0 $?
echo "$out"
# tokens in grant order (sessions by their first line), strictly increasing
toks=$(awk '$4 == "start" {print $3}' "$ACT_LOG")
echo "tokens in grant order: $(echo $toks)"
prev=0 incr=0
for t in $toks; do
  [ "$t" -gt "$prev" ] || incr=1
  prev=$t
done
check "every grant's token is above the one before" 0 $incr
[ "$tokB" -gt "$tokA" ]; check_true "gw-b's token ($tokB) is above gw-a's ($tokA)" $?
# elkd's own records: gw-a's loss, then gw-b's grant (log times, same host clock)
lostA=$(grep -E "valve: .*lost" "$S_DIR/elkd-gw-a.log" | tail -1)
grantB=$(grep -E "valve: granted .* token $tokB" "$S_DIR/elkd-gw-b.log" | tail -1)
echo "gw-a: $lostA"
echo "gw-b: $grantB"
if [ -n "$lostA" ] && [ -n "$grantB" ]; then
  la=$(echo "$lostA" | log_ms) gb=$(echo "$grantB" | log_ms)
  [ $gb -lt $la ] && gb=$((gb + 86400000)) # past midnight (UTC)
  figure loss_to_grant_ms "$((gb - la))"
  [ $gb -ge $la ]; check_true "elkd logs: gw-b granted after gw-a's loss" $?
else
  bad "elkd logs: gw-a's loss or gw-b's grant line missing"
fi
finish
