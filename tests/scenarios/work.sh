#!/bin/bash
# The holder's command in the scenarios: drives the simulated actuator while `elk run`
# holds the lease. work.sh GATEWAY TICKS TICK_SECONDS  (TICKS 0 = until told to stop)
# Env: ELK_FENCE_TOKEN (from elk run), ELK, ACT_LOG, ACT_STATE (from lib.sh act_init).
# Each tick is one actuator command: checked with `elk guard` (fencing) and logged with the
# true time, serialized by flock like a real actuator driver handling one command at a time.
# The gateway's clock may be faked (libfaketime): the actuator's must not be.
unset LD_PRELOAD FAKETIME
gw=$1 ticks=$2 tick=$3
tok=${ELK_FENCE_TOKEN:-0}
act() { # act EVENT: guard (for tick) + log line, atomically
  flock "$ACT_LOG.lock" bash -c '
    res=-
    if [ "$1" = tick ]; then
      if "$ELK" guard --state "$ACT_STATE" "$3" 2>/dev/null; then res=accepted; else res=refused; fi
    fi
    echo "$(date +%s%N) $2 $3 $1 $res" >> "$ACT_LOG"' _ "$1" "$gw" "$tok"
}
stopping=0
trap 'stopping=1' TERM INT
act start
i=0
while [ $stopping -eq 0 ]; do
  act tick
  i=$((i + 1))
  [ "$ticks" -gt 0 ] && [ $i -ge "$ticks" ] && break
  sleep "$tick" &
  wait $! 2>/dev/null
done
act stop
[ $stopping -eq 1 ] && exit 143
exit 0
