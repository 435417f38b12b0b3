/* SPDX-License-Identifier: MIT */
/* elkd's log: levels, targets (stderr, journal, syslog), rate limits, node state lines. */
#include "agent.h"

static const char *level_name(int level)
{
    switch (level) {
    case ELK_LOG_ERROR:
        return "error";
    case ELK_LOG_WARN:
        return "warn";
    case ELK_LOG_INFO:
        return "info";
    default:
        return "debug";
    }
}

static void log_write(agent_t *a, int level, const char *module, const char *text, size_t len)
{
    if (a->log_target == ELKFW_LOG_SYSLOG) {
        static const int prio[] = {LOG_ERR, LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
        syslog(prio[level >= 1 && level <= 4 ? level : 4], "%s: %.*s", module, (int)len, text);
    } else if (a->journal) {
        /* the journal stamps the time itself and reads the priority from <N> */
        static const int prio[] = {3, 3, 4, 6, 7};
        fprintf(stderr, "<%d>%s %s: %.*s\n", prio[level >= 1 && level <= 4 ? level : 4],
                level_name(level), module, (int)len, text);
    } else {
        struct timespec ts;
        struct tm tm;
        char when[32];
        clock_gettime(CLOCK_REALTIME, &ts); /* for people reading logs only, never for leases */
        gmtime_r(&ts.tv_sec, &tm);
        strftime(when, sizeof when, "%H:%M:%S", &tm);
        fprintf(stderr, "%s.%03ldZ elkd %s %s: %.*s\n", when, ts.tv_nsec / 1000000L,
                level_name(level), module, (int)len, text);
    }
}

/* A summary of repeated lines left out (elkfw/say.h). */
void elkd__log_summary(void *ctx, int level, const char *text, size_t len)
{
    log_write(ctx, level, "elkd", text, len);
}

/* Every line elkd writes. Warnings and errors that repeat are rate-limited: a flood
 * (connections refused in a loop, a client refused again and again) costs a few lines and
 * a count, not the log. */
static void log_line(agent_t *a, int level, const char *module, const char *text, size_t len)
{
    if (level > a->log_level) {
        return;
    }
    if (level <= ELK_LOG_WARN && a->clock.now_ms != NULL &&
        !elkfw_lograte_admit(&a->lograte, level, module, text, len, a->clock.now_ms(a->clock.ctx),
                             elkd__log_summary, a)) {
        return;
    }
    log_write(a, level, module, text, len);
}

/* The library's lines, made quieter for flash and small log buffers: a node's lines while
 * it is down and that was said (its summary and its return are elkd's, elkfw/nodelog.h),
 * and the lease engine's per-event lines (elkd logs grant, loss and release itself, with
 * holder and durations) go to debug. */
void elkd__lib_log_write(void *ctx, int level, const char *module, const char *text, size_t len)
{
    agent_t *a = ctx;
    size_t i;
    if (level == ELK_LOG_INFO && strcmp(module, "lock") == 0) {
        level = ELK_LOG_DEBUG;
    }
    for (i = 0; level < ELK_LOG_DEBUG && strcmp(module, "node") == 0 && i < a->conf.n_nodes; i++) {
        char addr[ELKFW_STR_MAX + 16];
        int n = snprintf(addr, sizeof addr, "%s:%u ", a->conf.nodes[i].host,
                         (unsigned)a->conf.nodes[i].port);
        if (n > 0 && (size_t)n <= len && memcmp(text, addr, (size_t)n) == 0 &&
            elkfw_nodelog_quiet(&a->nodelog[i])) {
            level = ELK_LOG_DEBUG;
        }
    }
    log_line(a, level, module, text, len);
}

__attribute__((format(printf, 3, 4))) void elkd__log(agent_t *a, int level, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    int n;
    if (level > a->log_level) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    log_line(a, level, "elkd", buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* ------------------------------------------------------------------ node state log */

static void span_text(uint64_t ms, char *buf, size_t cap)
{
    if (ms < 120000u) {
        snprintf(buf, cap, "%" PRIu64 ".%01" PRIu64 " s", ms / 1000u, ms % 1000u / 100u);
    } else if (ms < 7200000u) {
        snprintf(buf, cap, "%" PRIu64 " min", ms / 60000u);
    } else {
        snprintf(buf, cap, "%" PRIu64 " h", ms / 3600000u);
    }
}

/* The lock client forwards every node state change: a failure is counted (the library
 * said the first one), a node ready again after being down gets one line. */
void elkd__on_node_state(void *user, elk_node_t *node, elk_node_state_t state, int err)
{
    agent_t *a = user;
    size_t i = (size_t)(node - a->nodes);
    uint64_t now = a->clock.now_ms(a->clock.ctx);
    elkfw_nodelog_t *nl;
    char span[32];
    if (i >= a->fleet.count) {
        return;
    }
    nl = &a->nodelog[i];
    if (state == ELK_NODE_BACKOFF) {
        elkfw_causes_add(&a->node_metrics[i].failures, err);
        elkfw_nodelog_failed(nl, err, now, a->conf.agent.log_summary_ms);
    } else if (state == ELK_NODE_READY) {
        uint32_t attempts = nl->attempts;
        int last = nl->last_err;
        if (elkfw_nodelog_ready(nl)) {
            span_text(now - nl->down_since, span, sizeof span);
            elkd__log(a, ELK_LOG_INFO,
                      "node %s (%s:%u) is back after %s down (%" PRIu32 " failed attempt%s, last "
                      "error %s)",
                      a->conf.nodes[i].name, a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port,
                      span, attempts, attempts == 1 ? "" : "s", elk_err_name(last));
        }
    }
}

/* At most one "still down" line per node and log_summary interval. */
void elkd__node_summaries(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    char span[32];
    for (i = 0; i < a->fleet.count && !a->shutting_down; i++) {
        elkfw_nodelog_t *nl = &a->nodelog[i];
        if (elkfw_nodelog_summary_due(nl, now, a->conf.agent.log_summary_ms, next)) {
            span_text(now - nl->down_since, span, sizeof span);
            elkd__log(
                a, ELK_LOG_WARN,
                "node %s (%s:%u) still down after %s: %" PRIu32 " failed attempts, last error "
                "%s (%s)",
                a->conf.nodes[i].name, a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port, span,
                nl->attempts, elk_err_name(nl->last_err), elk_err_message(nl->last_err));
        }
    }
}
