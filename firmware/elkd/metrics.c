/* SPDX-License-Identifier: MIT */
/* Metrics in the Prometheus text format (elkfw/metrics.h). */
#define _GNU_SOURCE
#include "elkfw/metrics.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elk/err.h"

static const uint32_t hist_bounds_ms[ELKFW_HIST_BOUNDS] = {
    1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10000, 30000, 60000, 600000, 3600000};

void elkfw_hist_add(elkfw_hist_t *h, uint64_t ms)
{
    size_t i = 0;
    while (i < ELKFW_HIST_BOUNDS && ms > hist_bounds_ms[i]) {
        i++;
    }
    h->bucket[i]++;
    h->count++;
    h->sum_ms += ms;
}

void elkfw_causes_add(elkfw_causes_t *c, int err)
{
    size_t i;
    for (i = 0; i < ELKFW_CAUSES_MAX; i++) {
        if (c->err[i] == err || c->err[i] == 0) {
            c->err[i] = err;
            c->n[i]++;
            return;
        }
    }
    c->n[ELKFW_CAUSES_MAX - 1]++; /* more distinct causes than slots: counted with the last */
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ms as seconds with 3 decimals, the way Prometheus reads a float */
static void secs(FILE *f, uint64_t ms)
{
    fprintf(f, "%" PRIu64 ".%03" PRIu64, ms / 1000u, ms % 1000u);
}

static void hist(FILE *f, const char *name, const char *label, const char *value,
                 const elkfw_hist_t *h)
{
    uint64_t cum = 0;
    size_t i;
    for (i = 0; i < ELKFW_HIST_BOUNDS; i++) {
        cum += h->bucket[i];
        fprintf(f, "%s_bucket{%s=\"%s\",le=\"", name, label, value);
        secs(f, hist_bounds_ms[i]);
        fprintf(f, "\"} %" PRIu64 "\n", cum);
    }
    fprintf(f, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, label, value, h->count);
    fprintf(f, "%s_sum{%s=\"%s\"} ", name, label, value);
    secs(f, h->sum_ms);
    fprintf(f, "\n%s_count{%s=\"%s\"} %" PRIu64 "\n", name, label, value, h->count);
}

static void causes(FILE *f, const char *name, const char *label, const char *value, const char *by,
                   const elkfw_causes_t *c)
{
    size_t i;
    for (i = 0; i < ELKFW_CAUSES_MAX && c->err[i] != 0; i++) {
        fprintf(f, "%s{%s=\"%s\",%s=\"%s\"} %" PRIu64 "\n", name, label, value, by,
                elk_err_name(c->err[i]), c->n[i]);
    }
}

typedef uint64_t (*res_get_fn)(const elkfw_metrics_res_t *r);
static uint64_t get_grants(const elkfw_metrics_res_t *r)
{
    return r->m->grants;
}
static uint64_t get_refusals(const elkfw_metrics_res_t *r)
{
    return r->m->refusals;
}
static uint64_t get_held(const elkfw_metrics_res_t *r)
{
    return r->held;
}
static uint64_t get_suspects(const elkfw_metrics_res_t *r)
{
    return r->m->suspects;
}

static void res_scalar(FILE *f, const elkfw_metrics_src_t *s, const char *name, const char *type,
                       const char *help, res_get_fn get)
{
    size_t i;
    family(f, name, type, help);
    for (i = 0; i < s->n_res; i++) {
        fprintf(f, "%s{resource=\"%s\"} %" PRIu64 "\n", name, s->res[i].name, get(&s->res[i]));
    }
}

typedef const elkfw_hist_t *(*res_hist_fn)(const elkfw_res_metrics_t *m);
static const elkfw_hist_t *h_wait(const elkfw_res_metrics_t *m)
{
    return &m->wait;
}
static const elkfw_hist_t *h_hold(const elkfw_res_metrics_t *m)
{
    return &m->hold;
}
static const elkfw_hist_t *h_round(const elkfw_res_metrics_t *m)
{
    return &m->renew_round;
}
static const elkfw_hist_t *h_left(const elkfw_res_metrics_t *m)
{
    return &m->validity_left;
}

static void res_hist(FILE *f, const elkfw_metrics_src_t *s, const char *name, const char *help,
                     res_hist_fn get)
{
    size_t i;
    family(f, name, "histogram", help);
    for (i = 0; i < s->n_res; i++) {
        hist(f, name, "resource", s->res[i].name, get(s->res[i].m));
    }
}

static void write_agent(FILE *f, const elkfw_metrics_src_t *s)
{
    family(f, "elk_agent_info", "gauge", "elkd's version and gateway id (always 1).");
    fprintf(f, "elk_agent_info{version=\"%s\",gateway=\"%s\"} 1\n", s->version, s->gateway);
    family(f, "elk_agent_uptime_seconds", "gauge", "Seconds since elkd started.");
    fprintf(f, "elk_agent_uptime_seconds %" PRIu64 "\n", s->uptime_s);
    family(f, "elk_agent_clients", "gauge", "Local programs connected to the control socket.");
    fprintf(f, "elk_agent_clients %zu\n", s->clients);
    family(f, "elk_agent_client_slots", "gauge", "Connections elkd can hold at once.");
    fprintf(f, "elk_agent_client_slots %zu\n", s->client_slots);
    family(f, "elk_agent_full_refusals_total", "counter",
           "Connections refused because no client slot was free for them (ELK_E_AGENT_FULL).");
    fprintf(f, "elk_agent_full_refusals_total %" PRIu32 "\n", s->full_refusals);
    family(f, "elk_agent_nodes_ready", "gauge", "Nodes of the fleet ready now.");
    fprintf(f, "elk_agent_nodes_ready %zu\n", s->nodes_ready);
    family(f, "elk_agent_quorum", "gauge", "Nodes a lease needs.");
    fprintf(f, "elk_agent_quorum %zu\n", s->quorum);
    family(f, "elk_agent_reloads_total", "counter", "Configuration reloads, applied or refused.");
    fprintf(f, "elk_agent_reloads_total{result=\"ok\"} %" PRIu32 "\n", s->reloads);
    fprintf(f, "elk_agent_reloads_total{result=\"failed\"} %" PRIu32 "\n", s->reload_failures);
    family(f, "elk_agent_local_clock_suspect", "gauge",
           "1 while every connected node's clock seems to jump alike: this gateway's own clock "
           "is the likely cause (docs/design.md).");
    fprintf(f, "elk_agent_local_clock_suspect %d\n", s->local_clock_suspect ? 1 : 0);
    family(f, "elk_agent_local_clock_spells_total", "counter",
           "Spells in which every connected node's clock jumped alike.");
    fprintf(f, "elk_agent_local_clock_spells_total %" PRIu32 "\n", s->local_clock_spells);
    family(f, "elk_agent_local_clock_rate", "gauge",
           "How fast the servers' clocks ran against this gateway's in the last such spell "
           "(0.05: 5 % ahead, so the gateway's clock is slow; 0 before any).");
    fprintf(f, "elk_agent_local_clock_rate %.6f\n", s->local_clock_rate_ppm / 1e6);
}

static void write_resources(FILE *f, const elkfw_metrics_src_t *s)
{
    size_t i;
    res_scalar(f, s, "elk_resource_held", "gauge", "1 while a lease on the resource is held.",
               get_held);
    res_scalar(f, s, "elk_resource_grants_total", "counter", "Leases granted.", get_grants);
    res_scalar(f, s, "elk_resource_refusals_total", "counter",
               "Acquire requests answered with an error.", get_refusals);
    family(f, "elk_resource_losses_total", "counter", "Leases lost while held, by cause.");
    for (i = 0; i < s->n_res; i++) {
        causes(f, "elk_resource_losses_total", "resource", s->res[i].name, "cause",
               &s->res[i].m->losses);
    }
    family(f, "elk_resource_renewals_total", "counter",
           "Renewal rounds, confirmed (ok) or failed.");
    for (i = 0; i < s->n_res; i++) {
        fprintf(f, "elk_resource_renewals_total{resource=\"%s\",result=\"ok\"} %" PRIu64 "\n",
                s->res[i].name, s->res[i].m->renewals_ok);
        fprintf(f, "elk_resource_renewals_total{resource=\"%s\",result=\"failed\"} %" PRIu64 "\n",
                s->res[i].name, s->res[i].m->renewals_failed);
    }
    res_scalar(f, s, "elk_lease_suspect_total", "counter",
               "Times a held lease became SUSPECT: a renewal round missed its quorum before the "
               "deadline.",
               get_suspects);
    res_hist(f, s, "elk_resource_acquire_wait_seconds", "Time from ACQUIRE to the grant.", h_wait);
    res_hist(f, s, "elk_resource_hold_seconds", "Time a lease was held (grant to release or loss).",
             h_hold);
    res_hist(f, s, "elk_resource_renewal_round_seconds",
             "Slowest reply of each confirmed renewal round.", h_round);
    res_hist(f, s, "elk_resource_validity_left_seconds",
             "Validity left after each confirmed renewal: how close the lease came to being lost.",
             h_left);
}

typedef uint64_t (*node_get_fn)(const elkfw_metrics_node_t *n);
static uint64_t get_quarantined(const elkfw_metrics_node_t *n)
{
    return n->quarantined;
}
static uint64_t get_quarantines(const elkfw_metrics_node_t *n)
{
    return n->quarantines;
}
static uint64_t get_clock_jumps(const elkfw_metrics_node_t *n)
{
    return n->clock_jumps;
}

static void node_scalar(FILE *f, const elkfw_metrics_src_t *s, const char *name, const char *type,
                        const char *help, node_get_fn get)
{
    size_t i;
    family(f, name, type, help);
    for (i = 0; i < s->n_nodes; i++) {
        fprintf(f, "%s{node=\"%s\"} %" PRIu64 "\n", name, s->nodes[i].name, get(&s->nodes[i]));
    }
}

/* Vote hygiene per node; the counters only when the library keeps them. */
static void write_hygiene(FILE *f, const elkfw_metrics_src_t *s)
{
    size_t i;
    bool stats = false;
    node_scalar(f, s, "elk_node_quarantined", "gauge",
                "1 while the node has no vote: it restarted (or may have), or its clock jumped "
                "ahead.",
                get_quarantined);
    for (i = 0; i < s->n_nodes; i++) {
        stats = stats || s->nodes[i].hygiene_stats;
    }
    if (stats) {
        node_scalar(f, s, "elk_node_quarantines_total", "counter",
                    "Quarantines begun or extended: restarts, unverifiable restarts, failed "
                    "probes and clock jumps.",
                    get_quarantines);
        node_scalar(f, s, "elk_node_clock_jumps_total", "counter",
                    "Server clock jumps seen: ahead beyond the drift bound, or back.",
                    get_clock_jumps);
    }
}

static void write_nodes(FILE *f, const elkfw_metrics_src_t *s)
{
    size_t i;
    family(f, "elk_node_up", "gauge", "1 while the node is connected and ready.");
    for (i = 0; i < s->n_nodes; i++) {
        fprintf(f, "elk_node_up{node=\"%s\"} %d\n", s->nodes[i].name, s->nodes[i].ready ? 1 : 0);
    }
    family(f, "elk_node_connects_total", "counter", "Connections that became ready.");
    for (i = 0; i < s->n_nodes; i++) {
        fprintf(f, "elk_node_connects_total{node=\"%s\"} %" PRIu32 "\n", s->nodes[i].name,
                s->nodes[i].connects);
    }
    family(f, "elk_node_failures_total", "counter",
           "Connection attempts or connections that failed, by error.");
    for (i = 0; i < s->n_nodes; i++) {
        causes(f, "elk_node_failures_total", "node", s->nodes[i].name, "error",
               &s->nodes[i].m->failures);
    }
    family(f, "elk_node_timeouts_total", "counter", "Requests that passed their deadline.");
    for (i = 0; i < s->n_nodes; i++) {
        fprintf(f, "elk_node_timeouts_total{node=\"%s\"} %" PRIu32 "\n", s->nodes[i].name,
                s->nodes[i].timeouts);
    }
    family(f, "elk_node_votes_denied_total", "counter",
           "Replies not counted because the server failed the safety check.");
    for (i = 0; i < s->n_nodes; i++) {
        fprintf(f, "elk_node_votes_denied_total{node=\"%s\"} %" PRIu64 "\n", s->nodes[i].name,
                s->nodes[i].m->votes_denied);
    }
    write_hygiene(f, s);
    family(f, "elk_node_rtt_seconds", "histogram", "Round trip of each reply in a lease round.");
    for (i = 0; i < s->n_nodes; i++) {
        hist(f, "elk_node_rtt_seconds", "node", s->nodes[i].name, &s->nodes[i].m->rtt);
    }
}

bool elkfw_metrics_write(FILE *f, const elkfw_metrics_src_t *src)
{
    write_agent(f, src);
    write_resources(f, src);
    write_nodes(f, src);
    return fflush(f) == 0 && !ferror(f);
}

bool elkfw_metrics_write_file(const char *path, const elkfw_metrics_src_t *src)
{
    char tmp[4096];
    FILE *f;
    bool ok;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        return false;
    }
    f = fopen(tmp, "we");
    if (f == NULL) {
        return false;
    }
    ok = elkfw_metrics_write(f, src) && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return false;
    }
    return true;
}
