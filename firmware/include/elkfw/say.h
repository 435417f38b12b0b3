/* SPDX-License-Identifier: MIT */
/*
 * Messages to people. elk: one line on stderr, "elk: " in front, so every subcommand (run,
 * guard, ...) speaks the same way. elkd: a limit on repeated log lines, so a flood (a
 * client that reconnects in a loop, a peer that keeps being refused) cannot fill the log.
 */
#ifndef ELKFW_SAY_H
#define ELKFW_SAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Print "elk: <formatted text>\n" on stderr. */
__attribute__((format(printf, 1, 2))) void elkfw_say(const char *fmt, ...);

/* Lines that differ only in their digits (pids, uids, client numbers, ports, durations)
 * are one kind. Each kind writes at most ELKFW_LOGRATE_BURST lines per interval of
 * ELKFW_LOGRATE_INTERVAL_MS from its first line; the rest are counted, and when the
 * interval ends one line says how many were left out (and the last of them). Kinds
 * beyond ELKFW_LOGRATE_KINDS at once displace the oldest (its count is said first). */
#define ELKFW_LOGRATE_KINDS 16u
#define ELKFW_LOGRATE_BURST 10u
#define ELKFW_LOGRATE_INTERVAL_MS 10000u
#define ELKFW_LOGRATE_SAMPLE 160u

typedef struct elkfw_lograte_kind {
    uint32_t key;   /* hash of the line without its digits; 0: a free entry */
    int level;      /* the lines' level, used for their summary */
    uint64_t since; /* the interval began (its first line) */
    uint32_t passed, suppressed;
    char last[ELKFW_LOGRATE_SAMPLE]; /* the last line left out, for the summary */
} elkfw_lograte_kind_t;

/* All zero: empty. Pure: the caller passes the time and writes the lines. */
typedef struct elkfw_lograte {
    elkfw_lograte_kind_t kind[ELKFW_LOGRATE_KINDS];
} elkfw_lograte_t;

/* Writes one summary line ("N similar lines suppressed in the last S s; the last: ...")
 * at level; text is valid during the call only. */
typedef void (*elkfw_lograte_emit_fn)(void *ctx, int level, const char *text, size_t len);

/* Whether the line (module, text of len bytes) at level may be written at now. false: it is
 * counted for its kind's summary instead. May call emit first for a kind whose interval
 * ended or that is displaced. */
bool elkfw_lograte_admit(elkfw_lograte_t *lr, int level, const char *module, const char *text,
                         size_t len, uint64_t now, elkfw_lograte_emit_fn emit, void *ctx);

/* Kinds whose interval ended at now: their summary through emit (if any line was left
 * out), then forgotten. Lowers *next to the end of the next interval that will need a
 * summary. */
void elkfw_lograte_flush(elkfw_lograte_t *lr, uint64_t now, uint64_t *next,
                         elkfw_lograte_emit_fn emit, void *ctx);

#endif /* ELKFW_SAY_H */
