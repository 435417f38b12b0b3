/* SPDX-License-Identifier: MIT */
/*
 * `elk run --heartbeat`: the command proves it is alive by writing to a pipe at least once
 * per interval; elk turns those writes into KEEPALIVE requests to elkd (which stops
 * renewing without them) and stops the command when they stop. This is the pure part:
 * when a KEEPALIVE is due (at most one per interval/4, however often the command writes),
 * when the heartbeat counts as missed. Times are caller-supplied ms (CLOCK_BOOTTIME in elk).
 */
#ifndef ELKFW_HEARTBEAT_H
#define ELKFW_HEARTBEAT_H

#include <stdbool.h>
#include <stdint.h>

/* Shortest --heartbeat: a KEEPALIVE goes at most every interval/4, and a shorter interval
 * would be lost in the scheduling noise of a loaded gateway. */
#define ELKFW_HB_MIN_MS 100u

typedef struct elkfw_hb {
    uint32_t interval_ms; /* 0: no heartbeat */
    uint64_t last_beat;   /* when the command last wrote (or started) */
    uint64_t last_sent;   /* when the last KEEPALIVE went to elkd */
    bool sent_any;        /* a KEEPALIVE was sent since start */
    bool pending;         /* a beat came in that no KEEPALIVE has carried yet */
    bool eof;             /* the command closed its end: no beat will come any more */
    bool missed;          /* an interval passed without a beat: terminal */
} elkfw_hb_t;

/* Start watching at now (the command's start counts as its first beat). */
void elkfw_hb_start(elkfw_hb_t *hb, uint32_t interval_ms, uint64_t now);

/* The command wrote at now (bytes read from the pipe). Ignored once missed. */
void elkfw_hb_beat(elkfw_hb_t *hb, uint64_t now);

/* True when a KEEPALIVE should go to elkd now; the caller sends it (and calls this only
 * when it can send). Marks it sent. Never after a miss. */
bool elkfw_hb_keepalive_due(elkfw_hb_t *hb, uint64_t now);

/* True (once the interval has passed since the last beat) when the heartbeat is missed;
 * from then on it stays missed. */
bool elkfw_hb_check_missed(elkfw_hb_t *hb, uint64_t now);

/* The next time something is due (a deferred KEEPALIVE, or the miss); UINT64_MAX if
 * nothing (no heartbeat, or already missed). */
uint64_t elkfw_hb_next(const elkfw_hb_t *hb);

#endif /* ELKFW_HEARTBEAT_H */
