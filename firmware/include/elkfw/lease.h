/* SPDX-License-Identifier: MIT */
/*
 * The lease file: how `elk run` tells its command where its lease stands, and how
 * `elk guard --lease-file` refuses a step whose lease has run out.
 *
 * `elk run` names the file in ELK_LEASE_FILE and replaces it atomically (temp file +
 * rename) after every grant, renewal and loss. It holds exactly one line:
 *     elklease 1 <token> <deadline_boottime_ms>\n
 * token: the lease's fencing token in decimal, 0 when fencing is off;
 * deadline_boottime_ms: the local deadline in CLOCK_BOOTTIME milliseconds, 0 when the
 * lease is lost or ended. Decimal numbers have no sign and no leading zeros (except
 * "0" itself) and fit in 64 bits; nothing else is allowed anywhere in the file.
 *
 * Pure functions (no I/O, no clock: the caller passes "now"), so they can be tested
 * and fuzzed alone.
 */
#ifndef ELKFW_LEASE_H
#define ELKFW_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest valid file: "elklease 1 " + 2 x 20 digits + space + newline = 52 bytes. */
#define ELKFW_LEASE_LINE_MAX 64u

typedef enum elkfw_lease_verdict {
    ELKFW_LEASE_OK = 0,    /* lease current, token matches, deadline still ahead */
    ELKFW_LEASE_MALFORMED, /* not exactly one valid line: refuse (fail closed) */
    ELKFW_LEASE_ENDED,     /* deadline 0: the lease was lost or released */
    ELKFW_LEASE_EXPIRED,   /* now >= deadline */
    ELKFW_LEASE_TOKEN      /* the file's token is not the step's token */
} elkfw_lease_verdict_t;

/* Parse len bytes at buf (not NUL-terminated). On success fills *token and
 * *deadline_ms and returns true; false for anything but one valid line. */
bool elkfw_lease_parse(const char *buf, size_t len, uint64_t *token, uint64_t *deadline_ms);

/* Judge a step carrying token at now_ms (CLOCK_BOOTTIME ms) against the file's bytes.
 * *file_token and *deadline_ms (either may be NULL) get the parsed values (0 when
 * malformed) for the caller's message. Checks in order: malformed, ended, token,
 * expired. */
elkfw_lease_verdict_t elkfw_lease_judge(const char *buf, size_t len, uint64_t token,
                                        uint64_t now_ms, uint64_t *file_token,
                                        uint64_t *deadline_ms);

/* Write the line for (token, deadline_ms) into buf (cap bytes, NUL-terminated).
 * Returns its length without the NUL, or 0 if cap is too small. For the writer
 * (`elk run`) so both ends share one format. */
size_t elkfw_lease_format(char *buf, size_t cap, uint64_t token, uint64_t deadline_ms);

/* A person-readable reason for a verdict ("lease ended (lost or released)", ...). */
const char *elkfw_lease_verdict_text(elkfw_lease_verdict_t v);

#ifdef __cplusplus
}
#endif

#endif /* ELKFW_LEASE_H */
