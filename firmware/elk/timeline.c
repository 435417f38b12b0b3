/* SPDX-License-Identifier: MIT */
/* The lease timeline: bars from event records, overlaps, the HTML page (elkfw/timeline.h). */
#include "elkfw/timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ build */

static size_t lane_of(elkfw_timeline_t *tl, const elkfw_event_t *ev)
{
    for (size_t i = 0; i < tl->n_lanes; i++) {
        if (strcmp(tl->lanes[i].gateway, ev->gateway) == 0 &&
            strcmp(tl->lanes[i].resource, ev->resource) == 0) {
            return i;
        }
    }
    if (tl->n_lanes == tl->cap_lanes) {
        tl->truncated++;
        return SIZE_MAX;
    }
    elkfw_tl_lane_t *l = &tl->lanes[tl->n_lanes];
    memcpy(l->gateway, ev->gateway, sizeof l->gateway);
    memcpy(l->resource, ev->resource, sizeof l->resource);
    return tl->n_lanes++;
}

/* The newest bar of kind still open in lane, preferring one of pid; NULL when none. */
static elkfw_tl_bar_t *open_bar(elkfw_timeline_t *tl, size_t lane, elkfw_tl_bar_kind_t kind,
                                int64_t pid)
{
    elkfw_tl_bar_t *any = NULL;
    for (size_t i = tl->n_bars; i-- > 0;) {
        elkfw_tl_bar_t *b = &tl->bars[i];
        if (b->lane != lane || b->kind != kind || b->end_ms != 0) {
            continue;
        }
        if (pid < 0 || b->pid == pid) {
            return b;
        }
        any = any ? any : b;
    }
    return any;
}

static elkfw_tl_bar_t *add_bar(elkfw_timeline_t *tl, size_t lane, elkfw_tl_bar_kind_t kind,
                               const elkfw_event_t *ev)
{
    if (tl->n_bars == tl->cap_bars) {
        tl->truncated++;
        return NULL;
    }
    elkfw_tl_bar_t *b = &tl->bars[tl->n_bars++];
    memset(b, 0, sizeof *b);
    b->lane = lane;
    b->kind = kind;
    b->start_ms = ev->t_ms;
    b->token = ev->token;
    b->uid = ev->uid;
    b->pid = ev->pid;
    memcpy(b->cmd, ev->cmd, sizeof b->cmd);
    return b;
}

static void close_bar(elkfw_tl_bar_t *b, const elkfw_event_t *ev, bool open_end)
{
    /* end_ms 0 means "still open" while building: a zero-length bar ends 1 ms later. */
    b->end_ms = ev->t_ms > b->start_ms ? ev->t_ms : b->start_ms + 1u;
    b->end_kind = ev->kind;
    b->open_end = open_end;
    memcpy(b->cause, ev->cause, sizeof b->cause);
}

static void add_mark(elkfw_timeline_t *tl, size_t lane, const elkfw_event_t *ev)
{
    if (tl->n_marks == tl->cap_marks) {
        tl->truncated++;
        return;
    }
    elkfw_tl_mark_t *m = &tl->marks[tl->n_marks++];
    m->lane = lane;
    m->t_ms = ev->t_ms;
    m->kind = ev->kind;
    m->token = ev->token;
    memcpy(m->cause, ev->cause, sizeof m->cause);
}

static void on_grant(elkfw_timeline_t *tl, size_t lane, const elkfw_event_t *ev)
{
    elkfw_tl_bar_t *w = open_bar(tl, lane, ELKFW_TL_WAIT, ev->pid);
    if (w) {
        close_bar(w, ev, false);
    }
    elkfw_tl_bar_t *h = open_bar(tl, lane, ELKFW_TL_HOLD, -1);
    if (h) { /* its end is not in the record (overwritten in the ring, or elkd died) */
        close_bar(h, ev, true);
    }
    add_bar(tl, lane, ELKFW_TL_HOLD, ev);
}

static void on_refused(elkfw_timeline_t *tl, size_t lane, const elkfw_event_t *ev)
{
    elkfw_tl_bar_t *w = open_bar(tl, lane, ELKFW_TL_WAIT, ev->pid);
    if (!w) { /* refused at once: a wait of no length */
        w = add_bar(tl, lane, ELKFW_TL_WAIT, ev);
    }
    if (w) {
        close_bar(w, ev, false);
    }
}

static void on_end(elkfw_timeline_t *tl, size_t lane, const elkfw_event_t *ev)
{
    elkfw_tl_bar_t *h = open_bar(tl, lane, ELKFW_TL_HOLD, -1);
    if (h) {
        close_bar(h, ev, false);
    }
    if (ev->kind == ELKFW_EV_LOST) {
        add_mark(tl, lane, ev);
    }
}

static void on_event(elkfw_timeline_t *tl, const elkfw_event_t *ev)
{
    size_t lane = lane_of(tl, ev);
    if (lane == SIZE_MAX) {
        return;
    }
    switch (ev->kind) {
    case ELKFW_EV_GRANT:
        on_grant(tl, lane, ev);
        break;
    case ELKFW_EV_WAIT:
        add_bar(tl, lane, ELKFW_TL_WAIT, ev);
        break;
    case ELKFW_EV_REFUSED:
        on_refused(tl, lane, ev);
        break;
    case ELKFW_EV_RELEASE:
    case ELKFW_EV_LOST:
        on_end(tl, lane, ev);
        break;
    default: /* suspect, recovered, renew_failed */
        add_mark(tl, lane, ev);
        break;
    }
}

static void find_overlaps(elkfw_timeline_t *tl)
{
    for (size_t i = 0; i < tl->n_bars; i++) {
        const elkfw_tl_bar_t *a = &tl->bars[i];
        for (size_t j = i + 1; a->kind == ELKFW_TL_HOLD && j < tl->n_bars; j++) {
            const elkfw_tl_bar_t *b = &tl->bars[j];
            if (b->kind != ELKFW_TL_HOLD ||
                strcmp(tl->lanes[a->lane].resource, tl->lanes[b->lane].resource) != 0 ||
                a->start_ms >= b->end_ms || b->start_ms >= a->end_ms) {
                continue;
            }
            tl->bars[i].overlap = tl->bars[j].overlap = true;
            if (tl->n_overlaps == tl->cap_overlaps) {
                tl->truncated++;
                continue;
            }
            elkfw_tl_overlap_t *o = &tl->overlaps[tl->n_overlaps++];
            o->a = i;
            o->b = j;
            o->start_ms = a->start_ms > b->start_ms ? a->start_ms : b->start_ms;
            o->end_ms = a->end_ms < b->end_ms ? a->end_ms : b->end_ms;
        }
    }
}

/* Lanes in name order (gateway, then resource), so a page reads the same whatever order
 * the records came in; bars and marks follow their lanes. */
static void sort_lanes(elkfw_timeline_t *tl)
{
    for (size_t i = 1; i < tl->n_lanes; i++) { /* insertion sort: lanes are few */
        for (size_t j = i; j > 0; j--) {
            elkfw_tl_lane_t *a = &tl->lanes[j - 1], *b = &tl->lanes[j];
            int c = strcmp(a->gateway, b->gateway);
            if (c < 0 || (c == 0 && strcmp(a->resource, b->resource) <= 0)) {
                break;
            }
            elkfw_tl_lane_t t = *a;
            *a = *b;
            *b = t;
            for (size_t k = 0; k < tl->n_bars; k++) {
                size_t *l = &tl->bars[k].lane;
                *l = *l == j ? j - 1 : *l == j - 1 ? j : *l;
            }
            for (size_t k = 0; k < tl->n_marks; k++) {
                size_t *l = &tl->marks[k].lane;
                *l = *l == j ? j - 1 : *l == j - 1 ? j : *l;
            }
        }
    }
}

void elkfw_timeline_build(elkfw_timeline_t *tl, const elkfw_event_t *ev, size_t n)
{
    tl->n_lanes = tl->n_bars = tl->n_marks = tl->n_overlaps = tl->truncated = 0;
    tl->first_ms = n ? ev[0].t_ms : 0;
    tl->last_ms = n ? ev[n - 1].t_ms : 0;
    for (size_t i = 0; i < n; i++) {
        on_event(tl, &ev[i]);
    }
    for (size_t i = 0; i < tl->n_bars; i++) { /* still open when the record ends */
        elkfw_tl_bar_t *b = &tl->bars[i];
        if (b->end_ms == 0) {
            b->end_ms = tl->last_ms > b->start_ms ? tl->last_ms : b->start_ms + 1u;
            b->open_end = true;
            b->end_kind = ELKFW_EV_GRANT;
        }
    }
    sort_lanes(tl);
    find_overlaps(tl);
}

/* ------------------------------------------------------------------ HTML */

enum { LEFT = 260, WIDTH = 1100, TOP = 34, LANE_H = 30, BAR_H = 16, WAIT_H = 6 };

typedef struct page {
    FILE *f;
    const elkfw_timeline_t *tl;
    uint64_t t0, span; /* the record's first time and its length (ms, at least 1) */
} page_t;

static void esc(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
            break;
        }
    }
}

static double xpos(const page_t *p, uint64_t t)
{
    return LEFT + (double)(t - p->t0) * WIDTH / (double)p->span;
}

/* "12:04:05.123" (UTC) of a wall-clock time in ms. */
static void clock_text(uint64_t t_ms, char *buf, size_t cap)
{
    time_t s = (time_t)(t_ms / 1000u);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(buf, cap, "%02d:%02d:%02d.%03u", tm.tm_hour, tm.tm_min, tm.tm_sec,
             (unsigned)(t_ms % 1000u));
}

static void date_text(uint64_t t_ms, char *buf, size_t cap)
{
    /* before 1973: not a wall clock but a run's own time (elk-sim) */
    if (t_ms < 100000000000u) {
        snprintf(buf, cap, "t=%.3f s", (double)t_ms / 1000.0);
        return;
    }
    time_t s = (time_t)(t_ms / 1000u);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

static const char *const css =
    "body{font:14px system-ui,sans-serif;margin:16px;color:#222}"
    "h1{font-size:18px;margin:0 0 4px}.summary{margin:0 0 8px;color:#444}"
    "svg{width:100%;height:auto;border:1px solid #ccc;background:#fff;cursor:grab}"
    ".lane-bg{fill:#f6f7f9}.lane-bg.odd{fill:#eceef2}.lane-label{font-size:12px;fill:#222}"
    ".tick{stroke:#d0d4da}.tick-label{font-size:11px;fill:#555}"
    ".bar.hold{fill:#3b7dd8;stroke:#1d4f94}.bar.hold.lost{fill:#8f6ad8}"
    ".bar.hold.open{fill-opacity:.45;stroke-dasharray:4 2}"
    ".bar.wait{fill:#b8bec7}.bar.wait.refused{fill:#e0a03c}"
    ".bar.hold.overlap{fill:#e03131;stroke:#8a1010;stroke-width:2}"
    ".overlap-band{fill:#e03131;fill-opacity:.18;stroke:#e03131;stroke-width:1}"
    ".token{font-size:11px;fill:#fff;pointer-events:none}"
    ".mark.suspect path{fill:#f08c00}.mark.recovered path{fill:#2f9e44}"
    ".mark.renew_failed path{fill:#868e96}.mark.lost path{fill:#c92a2a}"
    ".mark.fault path{fill:#5f3dc4}.mark.violation path{fill:#e03131;stroke:#000}"
    ".tip{position:fixed;background:#222;color:#fff;padding:6px 8px;border-radius:4px;"
    "font-size:12px;white-space:pre;pointer-events:none;z-index:9}"
    ".controls{margin:6px 0}.controls button{margin-right:4px}"
    "table.legend{margin-top:10px;border-collapse:collapse;font-size:12px}"
    "table.legend td{padding:2px 8px}";

static void write_head(const page_t *p, const char *title)
{
    char a[40], b[40];
    size_t holds = 0, violations = 0;
    for (size_t i = 0; i < p->tl->n_bars; i++) {
        holds += p->tl->bars[i].kind == ELKFW_TL_HOLD;
    }
    for (size_t i = 0; i < p->tl->n_marks; i++) {
        violations += p->tl->marks[i].kind == ELKFW_EV_VIOLATION;
    }
    date_text(p->tl->first_ms, a, sizeof a);
    date_text(p->tl->last_ms, b, sizeof b);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", p->f);
    esc(p->f, title);
    fprintf(p->f, "</title><style>%s</style></head><body>\n<h1>", css);
    esc(p->f, title);
    fprintf(p->f,
            "</h1>\n<p class=\"summary\" id=\"summary\" data-lanes=\"%zu\" data-holds=\"%zu\" "
            "data-waits=\"%zu\" data-overlaps=\"%zu\" data-violations=\"%zu\">%zu lanes, %zu "
            "leases, %zu waits, <strong>%zu overlaps</strong>%s; %s to %s%s</p>\n",
            p->tl->n_lanes, holds, p->tl->n_bars - holds, p->tl->n_overlaps, violations,
            p->tl->n_lanes, holds, p->tl->n_bars - holds, p->tl->n_overlaps,
            violations ? ", <strong>checker violations marked</strong>" : "", a, b,
            p->tl->truncated ? " (some events did not fit: see elk timeline --help)" : "");
    fputs("<div class=\"controls\"><button id=\"zin\">Zoom in</button><button id=\"zout\">Zoom "
          "out</button><button id=\"zreset\">Whole record</button> mouse wheel: zoom, drag: "
          "pan, hover: details</div>\n",
          p->f);
}

static void write_ticks(const page_t *p, double height)
{
    char t[40];
    fputs("<g id=\"axis\">", p->f);
    for (int i = 0; i < 8; i++) {
        uint64_t at = p->t0 + p->span * (uint64_t)i / 8u;
        double x = xpos(p, at);
        clock_text(at, t, sizeof t);
        fprintf(p->f,
                "<line class=\"tick\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%.0f\"/>"
                "<text class=\"tick-label\" x=\"%.1f\" y=\"%d\">%s</text>",
                x, x, TOP - 6, height, x + 2, TOP - 10, t);
    }
    fputs("</g>\n", p->f);
}

static void write_lanes(const page_t *p)
{
    for (size_t i = 0; i < p->tl->n_lanes; i++) {
        int y = TOP + (int)i * LANE_H;
        fprintf(p->f,
                "<g class=\"lane\"><rect class=\"lane-bg%s\" x=\"0\" y=\"%d\" width=\"%d\" "
                "height=\"%d\"/><text class=\"lane-label\" x=\"6\" y=\"%d\">",
                i % 2 ? " odd" : "", y, LEFT + WIDTH, LANE_H, y + LANE_H / 2 + 4);
        esc(p->f, p->tl->lanes[i].gateway);
        fputs(" / ", p->f);
        esc(p->f, p->tl->lanes[i].resource);
        fputs("</text></g>\n", p->f);
    }
}

/* The hover text of a bar: every detail the record has. */
static void bar_info(const page_t *p, const elkfw_tl_bar_t *b)
{
    char s[40], e[40];
    clock_text(b->start_ms, s, sizeof s);
    clock_text(b->end_ms, e, sizeof e);
    fprintf(p->f, "%s on ", b->kind == ELKFW_TL_HOLD ? "lease" : "wait");
    esc(p->f, p->tl->lanes[b->lane].resource);
    fputs(" by ", p->f);
    esc(p->f, p->tl->lanes[b->lane].gateway);
    fprintf(p->f, "&#10;%s to %s (%" PRIu64 " ms)%s", s, e, b->end_ms - b->start_ms,
            b->open_end ? ", end not in the record" : "");
    if (b->token) {
        fprintf(p->f, "&#10;token %" PRIu64, b->token);
    }
    fprintf(p->f, "&#10;uid %" PRId64 ", pid %" PRId64, b->uid, b->pid);
    if (b->cmd[0]) {
        fputs(", command ", p->f);
        esc(p->f, b->cmd);
    }
    fprintf(p->f, "&#10;ended by %s", b->open_end ? "-" : elkfw_ev_kind_name(b->end_kind));
    if (b->cause[0]) {
        fputs(" (", p->f);
        esc(p->f, b->cause);
        fputs(")", p->f);
    }
    if (b->overlap) {
        fputs("&#10;OVERLAPS another holder of this resource", p->f);
    }
}

static void write_bar(const page_t *p, size_t i)
{
    const elkfw_tl_bar_t *b = &p->tl->bars[i];
    bool hold = b->kind == ELKFW_TL_HOLD;
    int h = hold ? BAR_H : WAIT_H;
    int y = TOP + (int)b->lane * LANE_H + (LANE_H - h) / 2;
    double x0 = xpos(p, b->start_ms), x1 = xpos(p, b->end_ms);
    fprintf(p->f,
            "<rect class=\"bar %s%s%s%s\" id=\"bar%zu\" data-s=\"%" PRIu64 "\" data-e=\"%" PRIu64
            "\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" data-info=\"",
            hold ? "hold" : "wait", b->overlap ? " overlap" : "", b->open_end ? " open" : "",
            b->end_kind == ELKFW_EV_LOST          ? " lost"
                : b->end_kind == ELKFW_EV_REFUSED ? " refused"
                                                  : "",
            i, b->start_ms - p->t0, b->end_ms - p->t0, x0, y, x1 - x0 < 2 ? 2.0 : x1 - x0, h);
    bar_info(p, b);
    fputs("\"/>", p->f);
    if (hold && b->token) {
        /* Tokens are server times in microseconds (16 digits): the bar shows the last six,
         * which differ from holder to holder; the hover has the whole token. */
        char shown[32];
        if (b->token >= 10000000u) {
            snprintf(shown, sizeof shown, "&#8230;%06" PRIu64, b->token % 1000000u);
        } else {
            snprintf(shown, sizeof shown, "%" PRIu64, b->token);
        }
        fprintf(p->f, "<text class=\"token\" data-s=\"%" PRIu64 "\" x=\"%.2f\" y=\"%d\">%s</text>",
                b->start_ms - p->t0, x0 + 3, y + BAR_H - 4, shown);
    }
    fputc('\n', p->f);
}

static void write_mark(const page_t *p, const elkfw_tl_mark_t *m)
{
    char t[40];
    int y = TOP + (int)m->lane * LANE_H + 2;
    clock_text(m->t_ms, t, sizeof t);
    fprintf(p->f,
            "<g class=\"mark %s\" data-t=\"%" PRIu64 "\" transform=\"translate(%.2f,0)\" "
            "data-info=\"%s at %s",
            elkfw_ev_kind_name(m->kind), m->t_ms - p->t0, xpos(p, m->t_ms),
            elkfw_ev_kind_name(m->kind), t);
    if (m->token) {
        fprintf(p->f, ", token %" PRIu64, m->token);
    }
    if (m->cause[0]) {
        fputs("&#10;", p->f);
        esc(p->f, m->cause);
    }
    fprintf(p->f, "\"><path d=\"M-5,%d L5,%d L0,%d Z\"/></g>\n", y, y, y + 9);
}

static void write_overlap(const page_t *p, const elkfw_tl_overlap_t *o)
{
    size_t la = p->tl->bars[o->a].lane, lb = p->tl->bars[o->b].lane;
    size_t top = la < lb ? la : lb, bottom = la < lb ? lb : la;
    double x0 = xpos(p, o->start_ms), x1 = xpos(p, o->end_ms);
    fprintf(p->f,
            "<rect class=\"overlap-band\" data-s=\"%" PRIu64 "\" data-e=\"%" PRIu64
            "\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" data-info=\"two holders of ",
            o->start_ms - p->t0, o->end_ms - p->t0, x0, TOP + (int)top * LANE_H,
            x1 - x0 < 2 ? 2.0 : x1 - x0, (int)(bottom - top + 1) * LANE_H);
    esc(p->f, p->tl->lanes[la].resource);
    fprintf(p->f, " for %" PRIu64 " ms (bars %zu and %zu)\"/>\n", o->end_ms - o->start_ms, o->a,
            o->b);
}

/* Zoom and pan move every element from its data-s/data-e/data-t (ms after the record's
 * start); the page is already drawn for the whole record without the script. */
static const char *const script =
    "(function(){var svg=document.getElementById('tl'),L=+svg.dataset.left,"
    "W=+svg.dataset.width,span=+svg.dataset.span,t0=+svg.dataset.t0,v0=0,v1=span;"
    "function X(t){return L+(t-v0)*W/(v1-v0);}"
    "function cl(x){return Math.max(L,Math.min(L+W,x));}"
    "function fmt(t){return new Date(t0+t).toISOString().substr(11,12);}"
    "function ticks(){var g=document.getElementById('axis'),h=svg.viewBox.baseVal.height,"
    "s='';for(var i=0;i<8;i++){var t=v0+(v1-v0)*i/8,x=X(t);s+='<line class=\"tick\" x1=\"'+x+"
    "'\" x2=\"'+x+'\" y1=\"28\" y2=\"'+h+'\"/><text class=\"tick-label\" x=\"'+(x+2)+"
    "'\" y=\"24\">'+fmt(t)+'</text>';}g.innerHTML=s;}"
    "function layout(){svg.querySelectorAll('[data-s]').forEach(function(e){"
    "var s=+e.dataset.s,n=e.dataset.e===undefined?s:+e.dataset.e,a=X(s),b=X(n);"
    "var out=b<L||a>L+W;e.style.display=out?'none':'';if(out)return;"
    "if(e.tagName==='text'){e.setAttribute('x',cl(a)+3);}else{e.setAttribute('x',cl(a));"
    "e.setAttribute('width',Math.max(cl(b)-cl(a),2));}});"
    "svg.querySelectorAll('[data-t]').forEach(function(e){var x=X(+e.dataset.t);"
    "e.style.display=(x<L||x>L+W)?'none':'';e.setAttribute('transform','translate('+x+',0)');});"
    "ticks();}"
    "function zoom(f,c){var w=(v1-v0)*f;if(w<1)w=1;v0=c-(c-v0)*w/(v1-v0);v1=v0+w;layout();}"
    "function at(ev){var r=svg.getBoundingClientRect(),"
    "x=(ev.clientX-r.left)*svg.viewBox.baseVal.width/r.width;return v0+(x-L)*(v1-v0)/W;}"
    "svg.addEventListener('wheel',function(ev){ev.preventDefault();"
    "zoom(ev.deltaY<0?0.8:1.25,at(ev));});"
    "var drag=null;svg.addEventListener('mousedown',function(ev){drag=at(ev);});"
    "window.addEventListener('mouseup',function(){drag=null;});"
    "svg.addEventListener('mousemove',function(ev){if(drag===null)return;var d=drag-at(ev);"
    "v0+=d;v1+=d;layout();});"
    "document.getElementById('zin').onclick=function(){zoom(0.5,(v0+v1)/2);};"
    "document.getElementById('zout').onclick=function(){zoom(2,(v0+v1)/2);};"
    "document.getElementById('zreset').onclick=function(){v0=0;v1=span;layout();};"
    "var tip=document.getElementById('tip');"
    "svg.addEventListener('mouseover',function(ev){var e=ev.target.closest('[data-info]');"
    "if(!e){tip.hidden=true;return;}tip.textContent=e.dataset.info;tip.hidden=false;});"
    "svg.addEventListener('mousemove',function(ev){tip.style.left=(ev.clientX+12)+'px';"
    "tip.style.top=(ev.clientY+12)+'px';});"
    "svg.addEventListener('mouseleave',function(){tip.hidden=true;});"
    "if(location.hash==='#zoom-in'){zoom(0.5,(v0+v1)/2);}"
    "document.body.setAttribute('data-ready','1');})();";

static void write_legend(FILE *f)
{
    fputs("<table class=\"legend\"><tr><td><svg width=\"30\" height=\"12\"><rect "
          "class=\"bar hold\" width=\"30\" height=\"12\"/></svg></td><td>lease held (token "
          "on the bar)</td><td><svg width=\"30\" height=\"12\"><rect class=\"bar hold lost\" "
          "width=\"30\" height=\"12\"/></svg></td><td>lease that ended lost</td></tr>"
          "<tr><td><svg width=\"30\" height=\"12\"><rect class=\"bar wait\" width=\"30\" "
          "height=\"6\"/></svg></td><td>waiting for the resource</td><td><svg width=\"30\" "
          "height=\"12\"><rect class=\"bar hold overlap\" width=\"30\" height=\"12\"/></svg></td>"
          "<td>two holders of one resource at once</td></tr>"
          "<tr><td>&#9660; orange</td><td>SUSPECT (a renewal missed its quorum)</td>"
          "<td>&#9660; red</td><td>lost</td></tr><tr><td>&#9660; green</td><td>recovered</td>"
          "<td>&#9660; grey</td><td>a renewal round failed</td></tr><tr><td>&#9660; violet</td>"
          "<td>a fault injected (simulator)</td><td>&#9660; red, outlined</td><td>an invariant "
          "broken (simulator's checker)</td></tr></table>\n",
          f);
}

int elkfw_timeline_write_html(const elkfw_timeline_t *tl, FILE *f, const char *title)
{
    page_t p = {f, tl, tl->first_ms, tl->last_ms > tl->first_ms ? tl->last_ms - tl->first_ms : 1};
    double height = TOP + (double)(tl->n_lanes ? tl->n_lanes : 1) * LANE_H + 6;
    write_head(&p, title);
    fprintf(f,
            "<svg id=\"tl\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %.0f\" "
            "data-left=\"%d\" data-width=\"%d\" data-span=\"%" PRIu64 "\" data-t0=\"%" PRIu64
            "\">\n",
            LEFT + WIDTH + 10, height, LEFT, WIDTH, p.span, p.t0);
    write_lanes(&p);
    write_ticks(&p, height);
    fputs("<g id=\"overlaps\">\n", f);
    for (size_t i = 0; i < tl->n_overlaps; i++) {
        write_overlap(&p, &tl->overlaps[i]);
    }
    fputs("</g><g id=\"bars\">\n", f);
    for (size_t i = 0; i < tl->n_bars; i++) {
        write_bar(&p, i);
    }
    fputs("</g><g id=\"marks\">\n", f);
    for (size_t i = 0; i < tl->n_marks; i++) {
        write_mark(&p, &tl->marks[i]);
    }
    fputs("</g></svg>\n<div id=\"tip\" class=\"tip\" hidden></div>\n", f);
    write_legend(f);
    fprintf(f, "<script>%s</script>\n</body></html>\n", script);
    return ferror(f) ? -EIO : 0;
}
