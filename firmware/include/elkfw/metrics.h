/* SPDX-License-Identifier: MIT */
/*
 * elkd's metrics: counters and histograms kept in fixed arrays in the agent (no heap in
 * lib/: elkd feeds them from the lease engine's events, the node state callback and the
 * library's getters), written in the Prometheus text exposition format (version 0.0.4):
 * `elk status --metrics` and [agent] metrics_file (node_exporter's textfile collector).
 * Names start with elk_; times are in seconds, as Prometheus wants.
 */
#ifndef ELKFW_METRICS_H
#define ELKFW_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bucket upper bounds in ms (+Inf after the last): 1 ms .. 1 h. */
#define ELKFW_HIST_BOUNDS 15
/* Distinct error codes counted per resource or node; others add to the last slot. */
#define ELKFW_CAUSES_MAX 8

typedef struct elkfw_hist {
    uint64_t bucket[ELKFW_HIST_BOUNDS + 1]; /* per bucket, not cumulative; the last is +Inf */
    uint64_t count;
    uint64_t sum_ms;
} elkfw_hist_t;

typedef struct elkfw_causes {
    int err[ELKFW_CAUSES_MAX]; /* 0: free slot */
    uint64_t n[ELKFW_CAUSES_MAX];
} elkfw_causes_t;

typedef struct elkfw_res_metrics {
    uint64_t grants, refusals; /* ACQUIRE answered with a lease / with an error */
    uint64_t renewals_ok, renewals_failed;
    uint64_t suspects;          /* SUSPECT spells (a renewal round missed its quorum) */
    elkfw_causes_t losses;      /* by LOST cause */
    elkfw_hist_t wait;          /* ACQUIRE to grant */
    elkfw_hist_t hold;          /* grant to release or loss */
    elkfw_hist_t renew_round;   /* slowest reply of each confirmed renewal round */
    elkfw_hist_t validity_left; /* validity after each confirmed renewal */
} elkfw_res_metrics_t;

typedef struct elkfw_node_metrics {
    elkfw_causes_t failures; /* connection failures by error */
    uint64_t votes_denied;   /* round replies not counted: the server failed the safety check */
    elkfw_hist_t rtt;        /* every reply in a lease round */
} elkfw_node_metrics_t;

void elkfw_hist_add(elkfw_hist_t *h, uint64_t ms);
void elkfw_causes_add(elkfw_causes_t *c, int err);

/* What one exposition shows: the caller points these at its state. */
typedef struct elkfw_metrics_res {
    const char *name;
    bool held;
    const elkfw_res_metrics_t *m;
} elkfw_metrics_res_t;

typedef struct elkfw_metrics_node {
    const char *name;
    bool ready;
    uint32_t connects, failures, timeouts; /* from elk_node_stats */
    bool quarantined;                      /* vote hygiene: no vote now (restart, clock jump) */
    bool hygiene_stats;                    /* the two counters below are known */
    uint64_t quarantines, clock_jumps;     /* quarantines begun, server clock jumps seen */
    const elkfw_node_metrics_t *m;
} elkfw_metrics_node_t;

typedef struct elkfw_metrics_src {
    const char *version, *gateway;
    uint64_t uptime_s;
    size_t clients, nodes_ready, quorum;
    size_t client_slots;    /* connections elkd can hold at once */
    uint32_t full_refusals; /* connections refused: no free slot (ELK_E_AGENT_FULL) */
    uint32_t reloads, reload_failures;
    const elkfw_metrics_res_t *res;
    size_t n_res;
    const elkfw_metrics_node_t *nodes;
    size_t n_nodes;
    /* the local clock suspect (elk_client_local_clock_suspect): every node's clock seems to
     * jump alike, so this gateway's own clock is the likely cause */
    bool local_clock_suspect;
    uint32_t local_clock_spells;
    int32_t local_clock_rate_ppm; /* > 0: the servers ran ahead of this gateway's clock */
} elkfw_metrics_src_t;

/* Write the exposition (HELP and TYPE lines, every family's samples together) to f.
 * Returns false if a write failed. */
bool elkfw_metrics_write(FILE *f, const elkfw_metrics_src_t *src);

/* Replace path atomically (path.tmp, fsync, rename) with the exposition; false and errno
 * on failure. For node_exporter's textfile collector, which may read at any moment. */
bool elkfw_metrics_write_file(const char *path, const elkfw_metrics_src_t *src);

#endif /* ELKFW_METRICS_H */
