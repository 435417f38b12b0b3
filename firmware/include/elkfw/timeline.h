/* SPDX-License-Identifier: MIT */
/*
 * The lease timeline: lease event records (elkfw/evlog.h) of one or more gateways turned
 * into lanes (one per gateway and resource), bars (a lease from grant to release or loss,
 * a wait from ACQUIRE to grant or refusal) and markers (SUSPECT, RECOVERED, a failed
 * renewal, a loss), with the overlaps between holders of one resource found; then written
 * as one self-contained HTML page (inline SVG, CSS and script: no network fetch) with zoom
 * and a hover that shows each bar's details. `elk timeline` and `elk-sim --timeline` use it.
 *
 * The caller owns every array (the build fills them up to their capacity and counts what
 * did not fit in `truncated`).
 */
#ifndef ELKFW_TIMELINE_H
#define ELKFW_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "elkfw/evlog.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elkfw_tl_lane {
    char gateway[ELKFW_EVLOG_TEXT_MAX];
    char resource[ELKFW_EVLOG_TEXT_MAX];
} elkfw_tl_lane_t;

typedef enum elkfw_tl_bar_kind { ELKFW_TL_HOLD = 0, ELKFW_TL_WAIT } elkfw_tl_bar_kind_t;

typedef struct elkfw_tl_bar {
    size_t lane;
    elkfw_tl_bar_kind_t kind;
    uint64_t start_ms, end_ms; /* wall clock */
    bool open_end;             /* no end in the record: drawn to the record's last time */
    elkfw_ev_kind_t end_kind;  /* release, lost, grant (a wait), refused; open: grant */
    uint64_t token;
    int64_t uid, pid;
    char cmd[ELKFW_EVLOG_TEXT_MAX];
    char cause[ELKFW_EVLOG_TEXT_MAX];
    bool overlap; /* a hold that overlaps another gateway's hold of the same resource */
} elkfw_tl_bar_t;

typedef struct elkfw_tl_mark {
    size_t lane;
    uint64_t t_ms;
    elkfw_ev_kind_t kind; /* suspect, recovered, renew_failed, lost */
    uint64_t token;
    char cause[ELKFW_EVLOG_TEXT_MAX];
} elkfw_tl_mark_t;

/* An interval in which two holds of one resource overlap (bars a and b). */
typedef struct elkfw_tl_overlap {
    size_t a, b;
    uint64_t start_ms, end_ms;
} elkfw_tl_overlap_t;

typedef struct elkfw_timeline {
    elkfw_tl_lane_t *lanes;
    size_t n_lanes, cap_lanes;
    elkfw_tl_bar_t *bars;
    size_t n_bars, cap_bars;
    elkfw_tl_mark_t *marks;
    size_t n_marks, cap_marks;
    elkfw_tl_overlap_t *overlaps;
    size_t n_overlaps, cap_overlaps;
    uint64_t first_ms, last_ms; /* the record's span */
    size_t truncated;           /* lanes, bars, marks or overlaps that did not fit */
} elkfw_timeline_t;

/* Build the timeline from n events sorted by elkfw_evlog_sort into tl (its arrays and
 * capacities set by the caller; counts are reset). Then finds the overlaps. */
void elkfw_timeline_build(elkfw_timeline_t *tl, const elkfw_event_t *ev, size_t n);

/* Write tl as a self-contained HTML page to f, with title (HTML-escaped). Returns 0, or
 * -errno when writing failed. */
int elkfw_timeline_write_html(const elkfw_timeline_t *tl, FILE *f, const char *title);

#ifdef __cplusplus
}
#endif

#endif /* ELKFW_TIMELINE_H */
