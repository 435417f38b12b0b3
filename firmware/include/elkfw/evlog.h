/* SPDX-License-Identifier: MIT */
/*
 * The lease event record: what elkd did with each lease (grant, wait, refusal, renewal
 * failure, SUSPECT, RECOVERED, loss, release), one fixed-size record per event, in a file
 * of fixed size used as a ring. `elk events` reads it, `elk timeline` draws it.
 *
 * A record is one line of exactly ELKFW_EVLOG_RECORD bytes: a flat JSON object (schema
 * ELKFW_EVLOG_SCHEMA, docs/events.md) padded with spaces and ended by '\n', written with
 * one pwrite at (seq mod slots) x ELKFW_EVLOG_RECORD. So the file is readable text, a
 * process that dies mid-way loses nothing already written (the page cache keeps it), and a
 * record torn by a power cut fails to parse and is skipped; the order comes from each
 * record's sequence number, not from its place in the file.
 */
#ifndef ELKFW_EVLOG_H
#define ELKFW_EVLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ELKFW_EVLOG_SCHEMA 1
#define ELKFW_EVLOG_RECORD 512u /* bytes per record, the '\n' included */
#define ELKFW_EVLOG_MIN_SLOTS 16u
#define ELKFW_EVLOG_TEXT_MAX 64u /* gateway, resource, command, cause: with the NUL */

typedef enum elkfw_ev_kind {
    ELKFW_EV_GRANT = 0,    /* lease granted (token, deadline) */
    ELKFW_EV_WAIT,         /* an ACQUIRE is waiting for the resource */
    ELKFW_EV_REFUSED,      /* an ACQUIRE ended without a lease (cause) */
    ELKFW_EV_RENEW_FAILED, /* a renewal round failed; the lease still stands */
    ELKFW_EV_SUSPECT,      /* a renewal round missed its quorum before the deadline */
    ELKFW_EV_RECOVERED,    /* a confirmed renewal after SUSPECT */
    ELKFW_EV_LOST,         /* the lease was lost (cause) */
    ELKFW_EV_RELEASE,      /* the lease was released */
    /* Written by the simulator's timeline only (elk-sim --timeline), never by elkd: */
    ELKFW_EV_FAULT,     /* a fault injected (cause: crash, jump, partition, pause, ...) */
    ELKFW_EV_VIOLATION, /* the checker saw an invariant broken (cause: its text) */
    ELKFW_EV_KINDS_
} elkfw_ev_kind_t;

typedef struct elkfw_event {
    uint64_t seq;  /* 1, 2, ... per file; 0 = not yet numbered */
    uint64_t t_ms; /* wall clock, ms since the epoch (records of gateways are merged) */
    elkfw_ev_kind_t kind;
    uint64_t token;       /* fencing token, 0 when none or fencing off */
    uint64_t deadline_ms; /* wall-clock deadline of a grant or renewal, 0 when none */
    int64_t uid;          /* holder's uid, -1 unknown */
    int64_t pid;          /* holder's pid, -1 unknown */
    char gateway[ELKFW_EVLOG_TEXT_MAX];
    char resource[ELKFW_EVLOG_TEXT_MAX];
    char cmd[ELKFW_EVLOG_TEXT_MAX];   /* holder's command name, "" unknown */
    char cause[ELKFW_EVLOG_TEXT_MAX]; /* error name (ELK_E_...) for refusals and losses */
} elkfw_event_t;

/* The writer's state: the open file and where the next record goes. */
typedef struct elkfw_evlog {
    int fd;           /* -1: closed (appends are ignored) */
    uint64_t slots;   /* records the file holds */
    uint64_t seq;     /* sequence number of the last record written */
    uint64_t dropped; /* appends that failed (disk full, I/O error) */
} elkfw_evlog_t;

/* Name of a kind as written in records ("grant", "wait", ...); "?" out of range. */
const char *elkfw_ev_kind_name(elkfw_ev_kind_t kind);

/* Kind from its name; false when unknown. */
bool elkfw_ev_kind_parse(const char *name, elkfw_ev_kind_t *kind);

/* Format ev as one record line (JSON, no padding, no '\n') into buf (cap bytes, NUL
 * terminated). Texts longer than fit are cut, control characters and quotes replaced.
 * Returns the length, or 0 when cap is too small. */
size_t elkfw_event_format(const elkfw_event_t *ev, char *buf, size_t cap);

/* Parse one record line (the JSON object, padding and '\n' allowed around it) of len bytes
 * at line into *ev. Unknown keys are ignored (newer writers); false when the line is not a
 * record of this schema (torn, empty slot, another format). */
bool elkfw_event_parse(const char *line, size_t len, elkfw_event_t *ev);

/* Open (creating, mode 0640) the ring file at path sized to hold size_bytes of records
 * (at least ELKFW_EVLOG_MIN_SLOTS). Continues the sequence of the records already there.
 * Returns 0, or -errno with *log->fd = -1 (the caller logs and runs without a record). */
int elkfw_evlog_open(elkfw_evlog_t *log, const char *path, uint64_t size_bytes);

/* Number ev (ev->seq) and write it: one pwrite, no fsync (see above). Returns true when
 * written; false counts it in log->dropped. No-op returning false when closed. */
bool elkfw_evlog_append(elkfw_evlog_t *log, elkfw_event_t *ev);

/* Set ev->t_ms from the wall clock, and ev->deadline_ms from deadline_mono (the caller's
 * monotonic clock, now_mono on the same clock; 0: no deadline) converted to the wall clock,
 * so records of several gateways line up. */
void elkfw_event_stamp(elkfw_event_t *ev, uint64_t now_mono, uint64_t deadline_mono);

/* Close the file (idempotent). */
void elkfw_evlog_close(elkfw_evlog_t *log);

/* Every record of the ring file at fd, oldest first, to out (cap entries). Returns the
 * number stored (the newest cap when there are more) or -errno. Torn or empty slots are
 * skipped. */
long elkfw_evlog_read_fd(int fd, elkfw_event_t *out, size_t cap);

/* The same for records given as text, one per line (`elk events --json` output, or ring
 * files concatenated), from len bytes at text. Lines that are not records are skipped. Order:
 * by time, then gateway, then sequence. Returns the number stored. */
size_t elkfw_evlog_parse_text(const char *text, size_t len, elkfw_event_t *out, size_t cap);

/* Sort n events by (t_ms, gateway, seq): the order of a merged record. */
void elkfw_evlog_sort(elkfw_event_t *ev, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* ELKFW_EVLOG_H */
