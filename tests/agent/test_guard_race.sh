#!/bin/bash
# SPDX-License-Identifier: MIT
# Many `elk guard` processes on one state file at once, some SIGKILLed at random points
# (guard_race.py): accepted tokens never go down in real-time order, the state never goes
# back, no spurious storage error (exit 66), stale temp files never refuse a later call.
# No flock(1) anywhere: the guard serialises itself. ELK_GUARD_RACE_CALLS raises the count.
ELK=$1
. "$(dirname "$0")/lib.sh"
python3 "$(dirname "$0")/guard_race.py" "$ELK" "$ELK_T_DIR"
check "concurrent guard calls stay linearisable" 0 $?
finish
