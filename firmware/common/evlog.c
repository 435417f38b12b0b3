/* SPDX-License-Identifier: MIT */
/* The lease event record: format, parse, ring file (elkfw/evlog.h). */
#define _GNU_SOURCE
#include "elkfw/evlog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const kind_names[ELKFW_EV_KINDS_] = {
    "grant",     "wait", "refused", "renew_failed", "suspect",
    "recovered", "lost", "release", "fault",        "violation",
};

const char *elkfw_ev_kind_name(elkfw_ev_kind_t kind)
{
    return (unsigned)kind < ELKFW_EV_KINDS_ ? kind_names[kind] : "?";
}

bool elkfw_ev_kind_parse(const char *name, elkfw_ev_kind_t *kind)
{
    for (unsigned i = 0; i < ELKFW_EV_KINDS_; i++) {
        if (strcmp(name, kind_names[i]) == 0) {
            *kind = (elkfw_ev_kind_t)i;
            return true;
        }
    }
    return false;
}

/* A text field as it goes into a record: no quote, backslash or control character (they
 * would need escapes a torn-record check cannot tell from damage), cut to the field size. */
static void clean_text(const char *in, char *out)
{
    size_t i = 0;
    for (; in[i] != '\0' && i + 1 < ELKFW_EVLOG_TEXT_MAX; i++) {
        unsigned char c = (unsigned char)in[i];
        out[i] = (c < 0x20 || c == '"' || c == '\\' || c == 0x7f) ? '?' : (char)c;
    }
    out[i] = '\0';
}

size_t elkfw_event_format(const elkfw_event_t *ev, char *buf, size_t cap)
{
    char gw[ELKFW_EVLOG_TEXT_MAX], res[ELKFW_EVLOG_TEXT_MAX], cmd[ELKFW_EVLOG_TEXT_MAX],
        cause[ELKFW_EVLOG_TEXT_MAX];
    clean_text(ev->gateway, gw);
    clean_text(ev->resource, res);
    clean_text(ev->cmd, cmd);
    clean_text(ev->cause, cause);
    int n = snprintf(buf, cap,
                     "{\"schema\":%d,\"seq\":%" PRIu64 ",\"t\":%" PRIu64 ",\"gw\":\"%s\","
                     "\"ev\":\"%s\",\"res\":\"%s\",\"token\":%" PRIu64 ",\"deadline\":%" PRIu64
                     ",\"uid\":%" PRId64 ",\"pid\":%" PRId64 ",\"cmd\":\"%s\",\"cause\":\"%s\"}",
                     ELKFW_EVLOG_SCHEMA, ev->seq, ev->t_ms, gw, elkfw_ev_kind_name(ev->kind), res,
                     ev->token, ev->deadline_ms, ev->uid, ev->pid, cmd, cause);
    return (n < 0 || (size_t)n >= cap) ? 0 : (size_t)n;
}

/* ------------------------------------------------------------------ parse */

typedef struct cursor {
    const char *p, *end;
} cursor_t;

static void skip_space(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r' || *c->p == '\n')) {
        c->p++;
    }
}

static bool eat(cursor_t *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A JSON string into out (cap bytes); \" \\ \/ kept as the character, other escapes
 * refused (our writer never makes them). */
static bool read_string(cursor_t *c, char *out, size_t cap)
{
    size_t n = 0;
    if (!eat(c, '"')) {
        return false;
    }
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\') {
            if (c->p >= c->end || (*c->p != '"' && *c->p != '\\' && *c->p != '/')) {
                return false;
            }
            ch = *c->p++;
        }
        if ((unsigned char)ch < 0x20 || n + 1 >= cap) {
            return false;
        }
        out[n++] = ch;
    }
    out[n] = '\0';
    return eat(c, '"');
}

static bool read_int(cursor_t *c, int64_t *sval, uint64_t *uval)
{
    bool neg = false;
    uint64_t v = 0;
    skip_space(c);
    if (c->p < c->end && *c->p == '-') {
        neg = true;
        c->p++;
    }
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        uint64_t d = (uint64_t)(*c->p - '0');
        if (v > (UINT64_MAX - d) / 10u) {
            return false;
        }
        v = v * 10u + d;
        c->p++;
    }
    if (c->p == start || (neg && v > (uint64_t)INT64_MAX)) {
        return false;
    }
    *uval = neg ? 0 : v;
    *sval = neg ? -(int64_t)v : (v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v);
    return true;
}

/* Fields a record must have before it counts. */
enum { F_SCHEMA = 1, F_SEQ = 2, F_T = 4, F_EV = 8, F_RES = 16 };
#define F_REQUIRED (F_SCHEMA | F_SEQ | F_T | F_EV | F_RES)

static bool store_text(const char *key, const char *val, elkfw_event_t *ev, unsigned *seen)
{
    if (strcmp(key, "gw") == 0) {
        snprintf(ev->gateway, sizeof ev->gateway, "%s", val);
    } else if (strcmp(key, "res") == 0) {
        snprintf(ev->resource, sizeof ev->resource, "%s", val);
        *seen |= F_RES;
    } else if (strcmp(key, "cmd") == 0) {
        snprintf(ev->cmd, sizeof ev->cmd, "%s", val);
    } else if (strcmp(key, "cause") == 0) {
        snprintf(ev->cause, sizeof ev->cause, "%s", val);
    } else if (strcmp(key, "ev") == 0) {
        if (!elkfw_ev_kind_parse(val, &ev->kind)) {
            return false;
        }
        *seen |= F_EV;
    }
    return true;
}

static bool store_number(const char *key, int64_t s, uint64_t u, elkfw_event_t *ev, unsigned *seen)
{
    if (strcmp(key, "schema") == 0) {
        *seen |= F_SCHEMA;
        return s == ELKFW_EVLOG_SCHEMA;
    }
    if (strcmp(key, "seq") == 0) {
        ev->seq = u;
        *seen |= F_SEQ;
    } else if (strcmp(key, "t") == 0) {
        ev->t_ms = u;
        *seen |= F_T;
    } else if (strcmp(key, "token") == 0) {
        ev->token = u;
    } else if (strcmp(key, "deadline") == 0) {
        ev->deadline_ms = u;
    } else if (strcmp(key, "uid") == 0) {
        ev->uid = s;
    } else if (strcmp(key, "pid") == 0) {
        ev->pid = s;
    }
    return true;
}

static bool read_member(cursor_t *c, elkfw_event_t *ev, unsigned *seen)
{
    char key[16], text[ELKFW_EVLOG_TEXT_MAX];
    if (!read_string(c, key, sizeof key) || !eat(c, ':')) {
        return false;
    }
    skip_space(c);
    if (c->p < c->end && *c->p == '"') {
        return read_string(c, text, sizeof text) && store_text(key, text, ev, seen);
    }
    if (c->p + 4 <= c->end && memcmp(c->p, "null", 4) == 0) {
        c->p += 4;
        return true;
    }
    int64_t s;
    uint64_t u;
    return read_int(c, &s, &u) && store_number(key, s, u, ev, seen);
}

bool elkfw_event_parse(const char *line, size_t len, elkfw_event_t *ev)
{
    cursor_t c = {line, line + len};
    unsigned seen = 0;
    memset(ev, 0, sizeof *ev);
    ev->uid = -1;
    ev->pid = -1;
    if (!eat(&c, '{')) {
        return false;
    }
    if (!eat(&c, '}')) {
        do {
            if (!read_member(&c, ev, &seen)) {
                return false;
            }
        } while (eat(&c, ','));
        if (!eat(&c, '}')) {
            return false;
        }
    }
    skip_space(&c);
    return c.p == c.end && (seen & F_REQUIRED) == F_REQUIRED;
}

/* ------------------------------------------------------------------ ring file */

static uint64_t slots_for(uint64_t size_bytes)
{
    uint64_t n = size_bytes / ELKFW_EVLOG_RECORD;
    return n < ELKFW_EVLOG_MIN_SLOTS ? ELKFW_EVLOG_MIN_SLOTS : n;
}

/* The highest sequence number among the records in the file (0 when none). */
static uint64_t last_seq(int fd)
{
    char rec[ELKFW_EVLOG_RECORD];
    elkfw_event_t ev;
    uint64_t best = 0;
    for (off_t off = 0;; off += ELKFW_EVLOG_RECORD) {
        ssize_t n = pread(fd, rec, sizeof rec, off);
        if (n != (ssize_t)sizeof rec) {
            break;
        }
        if (elkfw_event_parse(rec, sizeof rec, &ev) && ev.seq > best) {
            best = ev.seq;
        }
    }
    return best;
}

int elkfw_evlog_open(elkfw_evlog_t *log, const char *path, uint64_t size_bytes)
{
    memset(log, 0, sizeof *log);
    log->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
    if (log->fd < 0) {
        return -errno;
    }
    struct stat st;
    if (fstat(log->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = S_ISREG(st.st_mode) ? errno : EINVAL;
        elkfw_evlog_close(log);
        return -e;
    }
    log->slots = slots_for(size_bytes);
    log->seq = last_seq(log->fd);
    /* A smaller size keeps the newest records that still have a place; the reader orders
     * by sequence, so records left where the ring moved do no harm. */
    if (ftruncate(log->fd, (off_t)(log->slots * ELKFW_EVLOG_RECORD)) != 0) {
        int e = errno;
        elkfw_evlog_close(log);
        return -e;
    }
    return 0;
}

bool elkfw_evlog_append(elkfw_evlog_t *log, elkfw_event_t *ev)
{
    char rec[ELKFW_EVLOG_RECORD + 1];
    if (log->fd < 0) {
        return false;
    }
    ev->seq = log->seq + 1u;
    size_t n = elkfw_event_format(ev, rec, sizeof rec);
    if (n == 0 || n > ELKFW_EVLOG_RECORD - 1u) {
        log->dropped++;
        return false;
    }
    memset(rec + n, ' ', ELKFW_EVLOG_RECORD - 1u - n);
    rec[ELKFW_EVLOG_RECORD - 1u] = '\n';
    off_t off = (off_t)(((ev->seq - 1u) % log->slots) * ELKFW_EVLOG_RECORD);
    if (pwrite(log->fd, rec, ELKFW_EVLOG_RECORD, off) != (ssize_t)ELKFW_EVLOG_RECORD) {
        log->dropped++;
        return false;
    }
    log->seq = ev->seq;
    return true;
}

void elkfw_event_stamp(elkfw_event_t *ev, uint64_t now_mono, uint64_t deadline_mono)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ev->t_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    ev->deadline_ms = deadline_mono > now_mono ? ev->t_ms + (deadline_mono - now_mono) : 0;
}

void elkfw_evlog_close(elkfw_evlog_t *log)
{
    if (log->fd >= 0) {
        close(log->fd);
    }
    log->fd = -1;
}

static int by_seq(const void *a, const void *b)
{
    const elkfw_event_t *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Keep the newest cap of n events sorted by seq at out[0..]: returns the count kept. */
static size_t keep_newest(elkfw_event_t *out, size_t n, size_t cap)
{
    qsort(out, n, sizeof *out, by_seq);
    return n < cap ? n : cap;
}

long elkfw_evlog_read_fd(int fd, elkfw_event_t *out, size_t cap)
{
    char rec[ELKFW_EVLOG_RECORD];
    size_t n = 0;
    elkfw_event_t ev;
    if (cap == 0) {
        return 0;
    }
    for (off_t off = 0;; off += ELKFW_EVLOG_RECORD) {
        ssize_t got = pread(fd, rec, sizeof rec, off);
        if (got < 0) {
            return -errno;
        }
        if (got != (ssize_t)sizeof rec) {
            break;
        }
        if (!elkfw_event_parse(rec, sizeof rec, &ev)) {
            continue;
        }
        if (n < cap) {
            out[n++] = ev;
        } else { /* full: replace the oldest kept */
            size_t oldest = 0;
            for (size_t i = 1; i < n; i++) {
                oldest = out[i].seq < out[oldest].seq ? i : oldest;
            }
            if (ev.seq > out[oldest].seq) {
                out[oldest] = ev;
            }
        }
    }
    return (long)keep_newest(out, n, cap);
}

static int by_time(const void *a, const void *b)
{
    const elkfw_event_t *x = a, *y = b;
    if (x->t_ms != y->t_ms) {
        return (x->t_ms > y->t_ms) - (x->t_ms < y->t_ms);
    }
    int g = strcmp(x->gateway, y->gateway);
    return g != 0 ? g : by_seq(a, b);
}

void elkfw_evlog_sort(elkfw_event_t *ev, size_t n)
{
    qsort(ev, n, sizeof *ev, by_time);
}

size_t elkfw_evlog_parse_text(const char *text, size_t len, elkfw_event_t *out, size_t cap)
{
    size_t n = 0;
    const char *p = text, *end = text + len;
    while (p < end && n < cap) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        if (elkfw_event_parse(p, (size_t)(stop - p), &out[n])) {
            n++;
        }
        p = nl ? nl + 1 : end;
    }
    elkfw_evlog_sort(out, n);
    return n;
}
