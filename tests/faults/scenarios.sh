#!/bin/bash
# Fault scenarios of issue 9: real elkd agents and elk commands, real redis-server
# processes (127.0.0.1, ephemeral ports), each behind an elk-faultproxy.
#
#   scenarios.sh SCENARIO ELKD ELK FAULTPROXY
#
# SCENARIO: blackhole   majority of nodes blackholed during renewal: LOST, SIGTERM to
#                       the command before the lease can expire on any of them (measured)
#           pause       holder paused past the TTL (SIGSTOP/SIGCONT): of elkd alone, then
#                       of the whole holder; another agent takes over with a higher token
#                       and the fencing guard refuses the paused holder's token
#           clock       agent clock fast (x2) and slightly slow (x0.98, drift_factor 0.05)
#                       under libfaketime on the agent only (servers untouched): safe; and
#                       the negative control, 2x slow, which this check must catch
#           alldown     every node refuses and drops connections, then comes back
#           restart     a node restarted without its data while a lease is held
#           soak        two agents contend through delayed, jittery proxies with random
#                       faults for ELK_SOAK_SECONDS (default 15): never two holders at once
# "SIGTERM before expiry" compares the command's own wall-clock time of SIGTERM with the
# servers' PEXPIRETIME (same machine, same clock): a safety check, not a speed check.
# Figures (margins, detection delays) are printed as "figure:" lines, never asserted.
SCEN=$1 ELKD=$2 ELK=$3 FAULTPROXY=$4
. "$(dirname "$0")/lib.sh"
KEY='f:{valve}'

scen_blackhole() {
  fleet 3
  write_conf a 3 "ttl = 3s" "stop_margin = 500ms" "min_validity = 500ms"
  start_elkd a
  local M=$FT_DIR/m; mkdir -p "$M"
  "$ELK" --socket "$FT_DIR/elkd-a.sock" run valve -- sh -c "$(holder_cmd "$M")" & local R=$!
  wait_file "$M/started" || { bad "holder did not start"; return; }
  sleep 1.3 # past the first renewal (1/3 of the ttl)
  pctl p1 blackhole >/dev/null; pctl p2 blackhole >/dev/null
  local t_bh; t_bh=$(now_ms)
  sleep 0.1 # a renewal already past the proxies lands now; later ones are discarded
  local expire; expire=$(min_pexpiretime "$KEY" "$REDIS_PORT_r1" "$REDIS_PORT_r2")
  wait $R; local rc=$?
  check "elk run exits 75 when a majority is blackholed during renewal" 75 $rc
  local term; term=$(cat "$M/term" 2>/dev/null || echo 0)
  [ "$term" -gt 0 ]; check "the command got SIGTERM" 0 $?
  if [ -n "$expire" ] && [ "$term" -gt 0 ] && [ "$term" -lt "$expire" ]; then
    ok "SIGTERM ($term) before the earliest expiry on the blackholed majority ($expire)"
  else
    bad "SIGTERM ($term) not before the expiry on the blackholed majority ($expire)"
  fi
  figure "blackhole: SIGTERM $((expire - term)) ms before the lease could expire (ttl 3000, stop_margin 500); loss acted on $((term - t_bh)) ms after the blackhole"
  grep -q "LOST" "$FT_DIR/elkd-a.log"; check "elkd logged LOST" 0 $?
}

scen_pause() {
  fleet 3
  write_conf a 3 "ttl = 2s" "stop_margin = 300ms" "min_validity = 300ms"
  write_conf b 3 "ttl = 2s" "stop_margin = 300ms" "min_validity = 300ms"
  start_elkd a; start_elkd b
  local M=$FT_DIR/m1 G=$FT_DIR/guard.state; mkdir -p "$M"
  # 1. elkd alone frozen: elk run's own copy of the deadline stops the command in time.
  "$ELK" --socket "$FT_DIR/elkd-a.sock" run valve -- sh -c "$(holder_cmd "$M")" & local R=$!
  wait_file "$M/started" || { bad "holder did not start"; return; }
  local t1; t1=$(cat "$M/token")
  kill -STOP "$ELKD_PID_a"
  sleep 0.1
  local expire; expire=$(min_pexpiretime "$KEY" "$REDIS_PORT_r1" "$REDIS_PORT_r2" "$REDIS_PORT_r3")
  wait_file "$M/term" 300; local term; term=$(cat "$M/term" 2>/dev/null || echo 0)
  if [ -n "$expire" ] && [ "$term" -gt 0 ] && [ "$term" -lt "$expire" ]; then
    ok "elkd frozen: the command still got SIGTERM ($term) before the expiry ($expire)"
  else
    bad "elkd frozen: SIGTERM ($term) not before the expiry ($expire)"
  fi
  figure "pause(elkd): SIGTERM $((expire - term)) ms before expiry"
  local t2; t2=$(E b run --wait 5s valve -- sh -c 'echo $ELK_FENCE_TOKEN'); local rc=$?
  check "agent b takes the lease while a is frozen" 0 $rc
  [ "${t2:-0}" -gt "$t1" ] 2>/dev/null; check "b's token ($t2) is above a's ($t1)" 0 $?
  kill -CONT "$ELKD_PID_a"
  wait $R; rc=$?
  check "a's elk run exits 75 (lost) after the pause" 75 $rc

  # 2. the whole holder frozen (agent, elk, command) past the ttl; b takes over; the
  #    holder wakes up and tries to drive the actuator with its old token.
  local M2=$FT_DIR/m2; mkdir -p "$M2"
  for _ in $(seq 1 100); do E a status 2>/dev/null | grep -q "nodes_ready=3/3 " && break; sleep 0.05; done
  "$ELK" --socket "$FT_DIR/elkd-a.sock" run --wait 5s valve -- sh -c "$(holder_cmd "$M2")" & R=$!
  wait_file "$M2/started" || { bad "holder 2 did not start"; return; }
  t1=$(cat "$M2/token")
  E a guard --state "$G" "$t1" >/dev/null; check "guard accepts the holder's token $t1" 0 $?
  local cmdpid; cmdpid=$(cat "$M2/pid")
  kill -STOP "$ELKD_PID_a" $R "$cmdpid"
  sleep 2.5 # past the ttl: the keys expire on the servers
  t2=$(E b run --wait 5s valve -- sh -c "$ELK guard --state $G \$ELK_FENCE_TOKEN >/dev/null && echo \$ELK_FENCE_TOKEN"); rc=$?
  check "b takes the lease from the frozen holder and its guard accepts" 0 $rc
  kill -CONT "$cmdpid" $R "$ELKD_PID_a"
  E a guard --state "$G" "$t1" >/dev/null 2>&1; rc=$?
  check "guard refuses the woken holder's stale token $t1 (b had $t2)" 65 $rc
  wait $R; rc=$?
  check "the woken holder's elk run exits 75" 75 $rc
}

# one clock run: agent (elkd + elk) under libfaketime at RATE, servers untouched; all
# nodes blackholed after acquisition; sets CR_TERM (the command's SIGTERM, real wall
# clock: the command itself runs without libfaketime) and CR_EXPIRE.
FAKETIME_LIB=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
clock_run() {
  local rate=$1 drift=$2 tag=$3
  write_conf "$tag" 3 "ttl = 3s" "stop_margin = 300ms" "min_validity = 300ms"
  sed -i "s/^request_timeout = .*/request_timeout = 250ms\ndrift_factor = $drift/" "$FT_DIR/elkd-$tag.conf"
  # ASan (sanitizer build) wants its runtime first; libfaketime only wraps the clock calls
  local asan="verify_asan_link_order=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  start_elkd "$tag" env LD_PRELOAD="$FAKETIME_LIB" FAKETIME="+0 x$rate" FAKETIME_NO_CACHE=1 ASAN_OPTIONS="$asan"
  local M=$FT_DIR/m-$tag; mkdir -p "$M"
  env LD_PRELOAD="$FAKETIME_LIB" FAKETIME="+0 x$rate" FAKETIME_NO_CACHE=1 ASAN_OPTIONS="$asan" \
    "$ELK" --socket "$FT_DIR/elkd-$tag.sock" run valve -- \
    env -u LD_PRELOAD -u FAKETIME sh -c "$(holder_cmd "$M")" & local R=$!
  CR_TERM=0; CR_EXPIRE=0
  wait_file "$M/started" || { bad "$tag: holder did not start"; return; }
  sleep 0.2
  pctl p1 blackhole >/dev/null; pctl p2 blackhole >/dev/null; pctl p3 blackhole >/dev/null
  sleep 0.1
  CR_EXPIRE=$(min_pexpiretime "$KEY" "$REDIS_PORT_r1" "$REDIS_PORT_r2" "$REDIS_PORT_r3")
  CR_EXPIRE=${CR_EXPIRE:-0}
  wait $R
  CR_TERM=$(cat "$M/term" 2>/dev/null || echo 0)
  eval "kill -TERM \$ELKD_PID_$tag"
  for p in p1 p2 p3; do pctl $p pass >/dev/null; done
  for p in 1 2 3; do eval "rcli \$REDIS_PORT_r$p del '$KEY'" >/dev/null; done
}

scen_clock() {
  command -v faketime >/dev/null || { echo "faketime not installed: skipped"; exit 0; }
  fleet 3
  [ -n "$FAKETIME_LIB" ] || { echo "libfaketime not found: skipped"; exit 0; }
  local term expire
  clock_run 2 0.01 fast; term=$CR_TERM; expire=$CR_EXPIRE
  [ "$term" -gt 0 ] && [ "$term" -lt "$expire" ]
  check "agent clock 2x fast: SIGTERM ($term) before expiry ($expire)" 0 $?
  figure "clock x2: SIGTERM $((expire - term)) ms before expiry"
  clock_run 0.98 0.05 slow; term=$CR_TERM; expire=$CR_EXPIRE
  [ "$term" -gt 0 ] && [ "$term" -lt "$expire" ]
  check "agent clock 2% slow, drift_factor 0.05: SIGTERM ($term) before expiry ($expire)" 0 $?
  figure "clock x0.98 (drift 0.05): SIGTERM $((expire - term)) ms before expiry"
  # Negative control: a clock 2x slow is far outside any drift allowance; the check
  # above must see the violation, or it could not see one at all.
  clock_run 0.5 0.01 broken; term=$CR_TERM; expire=$CR_EXPIRE
  [ "$term" -gt "$expire" ] && [ "$expire" -gt 0 ]
  check "negative control, agent clock 2x slow: this check catches SIGTERM ($term) after expiry ($expire)" 0 $?
  figure "clock x0.5 (negative control): SIGTERM $((term - expire)) ms AFTER expiry"
}

scen_alldown() {
  fleet 3
  write_conf a 3 "ttl = 2s" "stop_margin = 300ms" "min_validity = 300ms"
  start_elkd a
  local M=$FT_DIR/m; mkdir -p "$M"
  "$ELK" --socket "$FT_DIR/elkd-a.sock" run valve -- sh -c "$(holder_cmd "$M")" & local R=$!
  wait_file "$M/started" || { bad "holder did not start"; return; }
  local t1; t1=$(cat "$M/token")
  for p in p1 p2 p3; do pctl $p refuse >/dev/null; pctl $p drop rst >/dev/null; done
  # read after the outage: a renewal may have got through while the proxies were switched
  # (to a quorum, not to the node cut first: so the majority's expiry is the bound)
  local expire; expire=$(majority_free_time "$KEY" "$REDIS_PORT_r1" "$REDIS_PORT_r2" "$REDIS_PORT_r3")
  local first; first=$(min_pexpiretime "$KEY" "$REDIS_PORT_r1" "$REDIS_PORT_r2" "$REDIS_PORT_r3")
  wait $R; local rc=$?
  check "every node down: elk run exits 75" 75 $rc
  local term; term=$(cat "$M/term" 2>/dev/null || echo 0)
  [ "$term" -gt 0 ] && [ -n "$expire" ] && [ "$term" -lt "$expire" ]
  check "SIGTERM ($term) before a majority could be free ($expire)" 0 $?
  figure "alldown: SIGTERM $((${expire:-0} - term)) ms before a majority could be free; $((${first:-0} - term)) ms before the first node's expiry"
  E a run valve -- true >/dev/null 2>&1; rc=$?
  check "while every node is down, a new lease is refused (73)" 73 $rc
  for p in p1 p2 p3; do pctl $p pass >/dev/null; done
  local t2; t2=$(E a run --wait 10s valve -- sh -c 'echo $ELK_FENCE_TOKEN'); rc=$?
  check "nodes back: the lease is granted again" 0 $rc
  [ "${t2:-0}" -gt "$t1" ] 2>/dev/null; check "token after the outage ($t2) above the one before ($t1)" 0 $?
}

scen_restart() {
  fleet 3
  write_conf a 3 "ttl = 2s" "stop_margin = 300ms" "min_validity = 300ms"
  write_conf b 3 "ttl = 2s" "stop_margin = 300ms" "min_validity = 300ms"
  start_elkd a; start_elkd b
  local M=$FT_DIR/m; mkdir -p "$M"
  "$ELK" --socket "$FT_DIR/elkd-a.sock" run valve -- sh -c "$(holder_cmd "$M")" & local R=$!
  wait_file "$M/started" || { bad "holder did not start"; return; }
  local t1; t1=$(cat "$M/token")
  kill -KILL "$REDIS_PID_r1"; wait "$REDIS_PID_r1" 2>/dev/null
  start_redis r1 "$REDIS_PORT_r1"
  check "restarted node came back empty" 0 "$(rcli "$REDIS_PORT_r1" exists "$KEY")"
  E b run valve -- true >/dev/null 2>&1; local rc=$?
  check "while a holds on 2 of 3, b is refused (73)" 73 $rc
  sleep 2.5 # longer than the ttl: a's lease lives on by renewal on the majority
  [ ! -e "$M/term" ]; check "a still holds after more than a ttl (renewed on 2 of 3)" 0 $?
  kill -TERM "$(cat "$M/pid")"
  wait $R
  local t2; t2=$(E b run --wait 5s valve -- sh -c 'echo $ELK_FENCE_TOKEN'); rc=$?
  check "b gets the lease after a's release" 0 $rc
  [ "${t2:-0}" -gt "$t1" ] 2>/dev/null; check "token ($t2) above a's ($t1) although a node lost its counter" 0 $?
}

scen_soak() {
  local secs=${ELK_SOAK_SECONDS:-15}
  local i
  for i in 1 2 3; do
    start_redis "r$i"
    eval "start_proxy p$i \$REDIS_PORT_r$i --delay 2 --jitter 3 --seed $i"
  done
  for a in a b; do
    write_conf $a 3 "ttl = 1s" "stop_margin = 200ms" "min_validity = 200ms" "wait_min = 20ms" "wait_max = 80ms"
    start_elkd $a
  done
  local D=$FT_DIR/soak G=$FT_DIR/guard.state; mkdir -p "$D"
  local end=$(( $(now_ms) + secs * 1000 ))
  local body="trap 'rmdir $D/inside 2>/dev/null; exit 0' TERM
mkdir $D/inside 2>/dev/null || echo overlap >> $D/bad
$ELK guard --state $G \$ELK_FENCE_TOKEN >/dev/null 2>&1 || echo stale \$ELK_FENCE_TOKEN >> $D/bad
echo \$ELK_FENCE_TOKEN >> $D/tokens.\$ELK_AGENT
sleep 0.03
rmdir $D/inside"
  for a in a b; do
    ( while [ "$(now_ms)" -lt "$end" ]; do
        ELK_AGENT=$a E $a run --wait 2s valve -- sh -c "$body" >/dev/null 2>&1
        echo $? >> "$D/rc.$a"
      done ) &
    track $!
  done
  # faults while they contend: drops, a short blackhole, a cut reply
  local n=0
  while [ "$(now_ms)" -lt "$end" ]; do
    sleep 1
    local p=p$(( (n % 3) + 1 ))
    case $((n % 4)) in
      0) pctl $p drop rst >/dev/null ;;
      1) pctl $p blackhole >/dev/null; sleep 0.5; pctl $p pass >/dev/null ;;
      2) pctl $p cut 3 >/dev/null ;;
      3) pctl $p delay 50 >/dev/null; sleep 0.5; pctl $p pass >/dev/null; pctl $p delay 2 >/dev/null; pctl $p jitter 3 >/dev/null ;;
    esac
    n=$((n + 1))
  done
  wait_all=$(( $(now_ms) + 8000 ))
  while [ "$(now_ms)" -lt "$wait_all" ] && [ -e "$D/inside" ]; do sleep 0.1; done
  sleep 3
  local na nb; na=$(cat "$D/tokens.a" 2>/dev/null | wc -l); nb=$(cat "$D/tokens.b" 2>/dev/null | wc -l)
  figure "soak ${secs}s: agent a held $na times, agent b $nb times, $n faults injected"
  [ ! -s "$D/bad" ]; check "never two holders at once, never a stale token ($(head -3 "$D/bad" 2>/dev/null | tr '\n' ' '))" 0 $?
  [ "$na" -gt 0 ] && [ "$nb" -gt 0 ]; check "both agents got the lease" 0 $?
  sort -n "$D"/tokens.* | uniq -d | head -1 > "$D/dups"
  [ ! -s "$D/dups" ]; check "every grant had its own token" 0 $?
}

case $SCEN in
  blackhole|pause|clock|alldown|restart|soak) "scen_$SCEN" ;;
  *) echo "usage: scenarios.sh blackhole|pause|clock|alldown|restart|soak ELKD ELK FAULTPROXY"; exit 64 ;;
esac
finish
