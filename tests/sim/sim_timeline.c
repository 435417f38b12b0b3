/* SPDX-License-Identifier: MIT */
/* elk-sim --timeline: a run's events through firmware/timeline.c (sim_timeline.h). */
#include "sim_timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/err.h"
#include "elkfw/timeline.h"

typedef struct collected {
    elkfw_event_t *ev;
    size_t n, cap;
} collected_t;

static collected_t run_events;

static elkfw_event_t *next_event(const sim_world_t *w, elkfw_ev_kind_t kind)
{
    if (run_events.n == run_events.cap) {
        size_t cap = run_events.cap ? run_events.cap * 2 : 4096;
        elkfw_event_t *more = realloc(run_events.ev, cap * sizeof *more);
        if (!more) {
            return NULL;
        }
        run_events.ev = more;
        run_events.cap = cap;
    }
    elkfw_event_t *e = &run_events.ev[run_events.n++];
    memset(e, 0, sizeof *e);
    e->seq = run_events.n;
    e->t_ms = w->core.now_us / 1000u;
    e->kind = kind;
    e->uid = -1;
    e->pid = -1;
    return e;
}

/* A gateway's lease event: lane "gwN / res-R". */
static void gateway_event(const sim_world_t *w, elkfw_ev_kind_t kind, uint64_t gw, uint64_t token,
                          const char *cause)
{
    if (gw >= ELK_SIM_MAX_GATEWAYS) {
        return;
    }
    elkfw_event_t *e = next_event(w, kind);
    if (e) {
        snprintf(e->gateway, sizeof e->gateway, "%s", w->gw[gw].name);
        snprintf(e->resource, sizeof e->resource, "res-%u", (unsigned)w->gw[gw].resource);
        snprintf(e->cause, sizeof e->cause, "%s", cause);
        e->token = token;
        e->pid = (int64_t)gw;
    }
}

/* A mark on a lane of its own: faults per node or gateway, violations per invariant. */
static void side_event(const sim_world_t *w, elkfw_ev_kind_t kind, const char *lane,
                       const char *what, const char *cause)
{
    elkfw_event_t *e = next_event(w, kind);
    if (e) {
        snprintf(e->gateway, sizeof e->gateway, "%s", lane);
        snprintf(e->resource, sizeof e->resource, "%s", what);
        snprintf(e->cause, sizeof e->cause, "%.63s", cause);
    }
}

static const char *err_of(uint64_t negated)
{
    return elk_err_name(-(int)negated);
}

static void on_note(void *ctx, const sim_world_t *w, const char *what, uint64_t a, uint64_t b,
                    uint64_t c, const char *text)
{
    char buf[64];
    (void)ctx;
    (void)c;
    if (strcmp(what, "acquired") == 0) {
        gateway_event(w, ELKFW_EV_GRANT, a, b, "");
    } else if (strcmp(what, "release") == 0) {
        gateway_event(w, ELKFW_EV_RELEASE, a, b, "");
    } else if (strcmp(what, "lost") == 0) {
        gateway_event(w, ELKFW_EV_LOST, a, w->gw[a < ELK_SIM_MAX_GATEWAYS ? a : 0].token, "");
    } else if (strcmp(what, "suspect") == 0) {
        gateway_event(w, ELKFW_EV_SUSPECT, a, 0, err_of(b));
    } else if (strcmp(what, "recovered") == 0) {
        gateway_event(w, ELKFW_EV_RECOVERED, a, 0, "");
    } else if (strcmp(what, "acq_fail") == 0) {
        gateway_event(w, ELKFW_EV_REFUSED, a, 0, err_of(b));
    } else if (strcmp(what, "violation") == 0) {
        side_event(w, ELKFW_EV_VIOLATION, "checker", sim_violation_name((int)a), text);
    } else if (strcmp(what, "crash") == 0 || strcmp(what, "jump") == 0 ||
               strcmp(what, "restart") == 0) {
        snprintf(buf, sizeof buf, "node %u", (unsigned)a);
        side_event(w, ELKFW_EV_FAULT, "faults", buf, what);
    } else if (strcmp(what, "pause") == 0) {
        snprintf(buf, sizeof buf, "gw%u", (unsigned)a);
        side_event(w, ELKFW_EV_FAULT, "faults", buf, what);
    } else if (strcmp(what, "partition") == 0 || strcmp(what, "heal") == 0) {
        /* a: the gateways cut off (mask), b: from the nodes (mask) */
        snprintf(buf, sizeof buf, "%s: gateways 0x%llx from nodes 0x%llx", what,
                 (unsigned long long)a, (unsigned long long)b);
        side_event(w, ELKFW_EV_FAULT, "faults", "partitions", buf);
    }
}

bool sim_timeline_start(sim_world_t *w)
{
    run_events.n = 0;
    w->note = on_note;
    w->note_ctx = &run_events;
    return true;
}

int sim_timeline_write(sim_world_t *w, const char *path, const char *title)
{
    size_t n = run_events.n, cap = n + 1;
    elkfw_timeline_t tl = {0};
    int rc = 0;
    w->note = NULL;
    tl.cap_lanes = 256;
    tl.cap_bars = tl.cap_marks = tl.cap_overlaps = cap;
    tl.lanes = calloc(tl.cap_lanes, sizeof *tl.lanes);
    tl.bars = calloc(cap, sizeof *tl.bars);
    tl.marks = calloc(cap, sizeof *tl.marks);
    tl.overlaps = calloc(cap, sizeof *tl.overlaps);
    FILE *f = NULL;
    if (tl.lanes && tl.bars && tl.marks && tl.overlaps) {
        elkfw_evlog_sort(run_events.ev, n);
        elkfw_timeline_build(&tl, run_events.ev, n);
        f = fopen(path, "w");
    }
    if (!f || elkfw_timeline_write_html(&tl, f, title) != 0) {
        rc = errno ? errno : ENOMEM;
    }
    if (f && fclose(f) != 0 && rc == 0) {
        rc = errno;
    }
    if (rc == 0) {
        printf("timeline: %s: %zu events, %zu lanes, %zu leases and waits, %zu overlaps\n", path, n,
               tl.n_lanes, tl.n_bars, tl.n_overlaps);
    }
    free(tl.lanes);
    free(tl.bars);
    free(tl.marks);
    free(tl.overlaps);
    free(run_events.ev);
    run_events.ev = NULL;
    run_events.n = run_events.cap = 0;
    return rc;
}
