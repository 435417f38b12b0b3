/*
 * SPDX-License-Identifier: MIT
 *
 * Example: the actuator's side of fencing with lib/fence and the POSIX state file
 * (elk/fence_file.h). Each step arrives with the holder's fencing token; the step is
 * driven only if the token is not lower than the highest ever accepted, and the guard
 * stays held while the step runs (check and act under one hold: docs/guard.md).
 *
 *   fence_actuator STATE_FILE TOKEN
 *
 * Exit: 0 step driven, 65 refused (a newer holder has driven the actuator),
 * 66 state file unreadable, corrupt or not syncable (refused: fail closed), 64 usage.
 *
 * Build (installed edgelock):
 *   cc fence_actuator.c $(pkg-config --cflags --libs edgelock-posix)
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "elk/err.h"
#include "elk/fence.h"
#include "elk/fence_file.h"

int main(int argc, char **argv)
{
    elk_fence_file_t ff;
    elk_fence_storage_t storage;
    elk_fence_t fence;
    uint64_t token;
    int rc;

    if (argc != 3 || elk_fence_parse_token(argv[2], strlen(argv[2]), &token) != ELK_OK) {
        fprintf(stderr, "usage: fence_actuator STATE_FILE TOKEN (a decimal token >= 1)\n");
        return 64;
    }
    if (elk_fence_file_init(&ff, argv[1], &storage) != ELK_OK) {
        fprintf(stderr, "fence_actuator: bad state file path '%s'\n", argv[1]);
        return 64;
    }
    /* A failed first load is not fatal: begin reloads and refuses until it works. */
    (void)elk_fence_init(&fence, &storage);
    rc = elk_fence_begin(&fence, token);
    if (rc == ELK_E_FENCE_STALE) {
        fprintf(stderr,
                "fence_actuator: token %" PRIu64 " refused: %" PRIu64 " was accepted already\n",
                token, elk_fence_highest(&fence));
        return 65;
    }
    if (rc != ELK_OK) {
        int why = rc == ELK_E_FENCE_STORAGE ? elk_fence_storage_error(&fence) : rc;
        fprintf(stderr, "fence_actuator: token %" PRIu64 " refused: %s (%s)\n", token,
                elk_err_message(why), argv[1]);
        return 66;
    }
    /* The guard is held: no lower token can start a step until elk_fence_end. */
    printf("token %" PRIu64 " accepted: valve step driven\n", token);
    elk_fence_end(&fence);
    return 0;
}
