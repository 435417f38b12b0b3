/* SPDX-License-Identifier: MIT */
/*
 * `elk guard`: the actuator side of fencing, as a command (firmware/elk/guard.c).
 *
 *   elk guard --state FILE [--wait DURATION] [--lease-file FILE] [TOKEN] [-- CMD [ARGS...]]
 *
 * Without CMD: decide on TOKEN and exit (check). With CMD: decide, run CMD while the
 * guard stays held, and exit with CMD's status (check and hold). docs/guard.md says
 * how an actuator must use it.
 */
#ifndef ELKFW_GUARD_H
#define ELKFW_GUARD_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exit codes of `elk guard` besides 0, 64 (usage) and, with CMD, CMD's own status. */
enum {
    ELKFW_GUARD_EXIT_STALE = 65,   /* token lower than one already accepted */
    ELKFW_GUARD_EXIT_STORAGE = 66, /* state file unreadable, corrupt, not syncable */
    ELKFW_GUARD_EXIT_LEASE = 67,   /* lease file: deadline passed, lease ended, other
                                      token, or unreadable / malformed (fail closed) */
    ELKFW_GUARD_EXIT_BUSY = 68     /* another step held the guard for all of --wait */
};

/* Run `elk guard` with argv[0] = "guard". Returns the process exit code. */
int elkfw_guard_main(int argc, char **argv);

/* Print the guard's --help text to f. */
void elkfw_guard_usage(FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* ELKFW_GUARD_H */
