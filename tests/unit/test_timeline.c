/* SPDX-License-Identifier: MIT */
/* The lease timeline: bars, marks and overlaps from records, and the page (firmware/timeline.c). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/timeline.h"

#define CAP 32

typedef struct fixture {
    elkfw_tl_lane_t lanes[CAP];
    elkfw_tl_bar_t bars[CAP];
    elkfw_tl_mark_t marks[CAP];
    elkfw_tl_overlap_t overlaps[CAP];
    elkfw_timeline_t tl;
    elkfw_event_t ev[CAP];
    size_t n;
} fixture_t;

static fixture_t fx;

static void reset(void)
{
    memset(&fx, 0, sizeof fx);
    fx.tl.lanes = fx.lanes;
    fx.tl.cap_lanes = CAP;
    fx.tl.bars = fx.bars;
    fx.tl.cap_bars = CAP;
    fx.tl.marks = fx.marks;
    fx.tl.cap_marks = CAP;
    fx.tl.overlaps = fx.overlaps;
    fx.tl.cap_overlaps = CAP;
}

static void add(const char *gw, const char *res, elkfw_ev_kind_t kind, uint64_t t, int64_t pid,
                uint64_t token, const char *cause)
{
    elkfw_event_t *e = &fx.ev[fx.n++];
    memset(e, 0, sizeof *e);
    snprintf(e->gateway, sizeof e->gateway, "%s", gw);
    snprintf(e->resource, sizeof e->resource, "%s", res);
    snprintf(e->cause, sizeof e->cause, "%s", cause);
    e->kind = kind;
    e->t_ms = t;
    e->pid = pid;
    e->uid = 0;
    e->token = token;
    e->seq = fx.n;
}

/* Two gateways take turns on valve-1; gw-b's grant comes at b_grant. */
static void two_holders(uint64_t b_grant)
{
    reset();
    add("gw-a", "valve-1", ELKFW_EV_WAIT, 1000, 10, 0, "");
    add("gw-b", "valve-1", ELKFW_EV_WAIT, 1050, 20, 0, "");
    add("gw-a", "valve-1", ELKFW_EV_GRANT, 1100, 10, 5, "");
    add("gw-a", "valve-1", ELKFW_EV_SUSPECT, 1300, 10, 5, "");
    add("gw-a", "valve-1", ELKFW_EV_RECOVERED, 1350, 10, 5, "");
    add("gw-b", "valve-1", ELKFW_EV_GRANT, b_grant, 20, 6, "");
    add("gw-a", "valve-1", ELKFW_EV_RELEASE, 1500, 10, 5, "");
    add("gw-b", "valve-1", ELKFW_EV_LOST, 1900, 20, 6, "ELK_E_LOCK_LOST");
    elkfw_evlog_sort(fx.ev, fx.n);
    elkfw_timeline_build(&fx.tl, fx.ev, fx.n);
}

static const elkfw_tl_bar_t *hold_of(const char *gw)
{
    for (size_t i = 0; i < fx.tl.n_bars; i++) {
        if (fx.bars[i].kind == ELKFW_TL_HOLD &&
            strcmp(fx.lanes[fx.bars[i].lane].gateway, gw) == 0) {
            return &fx.bars[i];
        }
    }
    return NULL;
}

static void test_turns_without_overlap(void **state)
{
    (void)state;
    two_holders(1600);
    assert_int_equal(fx.tl.n_lanes, 2);
    assert_int_equal(fx.tl.n_bars, 4);
    assert_int_equal(fx.tl.n_marks, 3); /* suspect, recovered, lost */
    assert_int_equal(fx.tl.n_overlaps, 0);
    const elkfw_tl_bar_t *a = hold_of("gw-a"), *b = hold_of("gw-b");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->start_ms, 1100);
    assert_int_equal(a->end_ms, 1500);
    assert_int_equal(a->end_kind, ELKFW_EV_RELEASE);
    assert_int_equal(a->token, 5);
    assert_false(a->overlap);
    assert_int_equal(b->end_kind, ELKFW_EV_LOST);
    assert_string_equal(b->cause, "ELK_E_LOCK_LOST");
    assert_false(b->open_end);
    for (size_t i = 0; i < fx.tl.n_bars; i++) { /* each wait ends at its own grant */
        if (fx.bars[i].kind == ELKFW_TL_WAIT) {
            assert_int_equal(fx.bars[i].end_ms, fx.bars[i].pid == 10 ? 1100 : 1600);
        }
    }
}

static void test_overlap_found(void **state)
{
    (void)state;
    two_holders(1400);
    assert_int_equal(fx.tl.n_overlaps, 1);
    assert_int_equal(fx.overlaps[0].start_ms, 1400);
    assert_int_equal(fx.overlaps[0].end_ms, 1500);
    assert_true(hold_of("gw-a")->overlap);
    assert_true(hold_of("gw-b")->overlap);
}

/* Touching ends are not an overlap; other resources never overlap. */
static void test_edges(void **state)
{
    (void)state;
    two_holders(1500);
    assert_int_equal(fx.tl.n_overlaps, 0);
    reset();
    add("gw-a", "valve-1", ELKFW_EV_GRANT, 100, 1, 1, "");
    add("gw-b", "valve-2", ELKFW_EV_GRANT, 150, 2, 1, "");
    add("gw-a", "valve-1", ELKFW_EV_RELEASE, 300, 1, 1, "");
    add("gw-b", "valve-2", ELKFW_EV_REFUSED, 320, 3, 0, "ELK_E_LOCK_BUSY");
    elkfw_timeline_build(&fx.tl, fx.ev, fx.n);
    assert_int_equal(fx.tl.n_overlaps, 0);
    assert_int_equal(fx.tl.n_bars, 3);
    const elkfw_tl_bar_t *b = hold_of("gw-b");
    assert_true(b->open_end); /* no end in the record */
    assert_int_equal(b->end_ms, 320);
    const elkfw_tl_bar_t *w = &fx.bars[2];
    assert_int_equal(w->kind, ELKFW_TL_WAIT);
    assert_int_equal(w->end_kind, ELKFW_EV_REFUSED);
    assert_int_equal(w->end_ms, 321); /* refused at once: one millisecond wide */
}

/* Capacities are respected and what did not fit is counted. */
static void test_truncation(void **state)
{
    (void)state;
    two_holders(1600);
    fx.tl.cap_bars = 2;
    fx.tl.cap_marks = 1;
    elkfw_timeline_build(&fx.tl, fx.ev, fx.n);
    assert_int_equal(fx.tl.n_bars, 2);
    assert_int_equal(fx.tl.n_marks, 1);
    assert_true(fx.tl.truncated >= 4);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

/* The page without its legend (whose samples use the same classes). */
static char *page(const char *title)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(elkfw_timeline_write_html(&fx.tl, f, title), 0);
    fclose(f);
    char *legend = strstr(buf, "<table class=\"legend\">");
    assert_non_null(legend);
    *legend = '\0';
    return buf;
}

static void test_page(void **state)
{
    (void)state;
    two_holders(1400);
    char *html = page("run <1> & \"quoted\"");
    assert_int_equal(count(html, "class=\"bar hold"), 2);
    assert_int_equal(count(html, "class=\"bar wait"), 2);
    assert_int_equal(count(html, "class=\"bar hold overlap"), 2);
    assert_int_equal(count(html, "class=\"overlap-band\""), 1);
    assert_int_equal(count(html, "class=\"mark suspect\""), 1);
    assert_int_equal(count(html, "class=\"mark lost\""), 1);
    assert_int_equal(count(html, "class=\"token\""), 2);
    assert_non_null(strstr(html, "data-overlaps=\"1\""));
    assert_non_null(strstr(html, "run &lt;1&gt; &amp; &quot;quoted&quot;"));
    assert_null(strstr(html, "<1>"));
    /* self-contained: nothing is fetched */
    assert_null(strstr(html, "src="));
    assert_null(strstr(html, "href="));
    assert_int_equal(count(html, "http"), count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
    free(html);
    two_holders(1600);
    html = page("t");
    assert_int_equal(count(html, "class=\"bar hold"), 2);
    assert_int_equal(count(html, "class=\"bar hold overlap"), 0);
    assert_int_equal(count(html, "class=\"overlap-band\""), 0);
    assert_non_null(strstr(html, "data-overlaps=\"0\""));
    free(html);
}

int main(void)
{
    return ELK_RUN_TESTS(test_turns_without_overlap, test_overlap_found, test_edges,
                         test_truncation, test_page);
}
