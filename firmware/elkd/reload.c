/* SPDX-License-Identifier: MIT */
/* Reload planning: which part of a new configuration elkd may apply while it runs. */
#include "elkfw/reload.h"

#include <string.h>

static bool tls_same(const elkfw_tls_conf_t *a, const elkfw_tls_conf_t *b)
{
    return a->on == b->on && strcmp(a->ca, b->ca) == 0 && strcmp(a->cert, b->cert) == 0 &&
        strcmp(a->key, b->key) == 0;
}

static bool node_same(const elkfw_node_conf_t *a, const elkfw_node_conf_t *b)
{
    return strcmp(a->name, b->name) == 0 && strcmp(a->host, b->host) == 0 && a->port == b->port &&
        tls_same(&a->tls, &b->tls) && strcmp(a->server_name, b->server_name) == 0 &&
        strcmp(a->user, b->user) == 0 && strcmp(a->password, b->password) == 0 && a->db == b->db &&
        a->connect_timeout_ms == b->connect_timeout_ms &&
        a->request_timeout_ms == b->request_timeout_ms;
}

/* The first key of [fleet] or [node] that differs, NULL if none. */
static const char *fleet_diff(const elkfw_conf_t *a, const elkfw_conf_t *b)
{
    size_t i;
    if (a->mode != b->mode) {
        return "mode";
    }
    if (strcmp(a->gateway_id, b->gateway_id) != 0) {
        return "gateway_id";
    }
    if (strcmp(a->key_prefix, b->key_prefix) != 0) {
        return "key_prefix";
    }
    if (!tls_same(&a->tls, &b->tls)) {
        return "tls, ca, cert or key in [fleet]";
    }
    if (a->connect_timeout_ms != b->connect_timeout_ms ||
        a->request_timeout_ms != b->request_timeout_ms) {
        return "connect_timeout or request_timeout";
    }
    if (a->agent.safety_check != b->agent.safety_check) {
        return "safety_check";
    }
    if (a->vote_hygiene != b->vote_hygiene || a->quarantine_ms != b->quarantine_ms) {
        return "vote_hygiene or quarantine";
    }
    if (a->batch_renewals != b->batch_renewals) {
        return "batch_renewals";
    }
    if (a->n_nodes != b->n_nodes) {
        return "the node list";
    }
    for (i = 0; i < a->n_nodes; i++) {
        if (!node_same(&a->nodes[i], &b->nodes[i])) {
            return "a [node] section";
        }
    }
    return NULL;
}

bool elkfw_resource_conf_same(const elkfw_resource_conf_t *a, const elkfw_resource_conf_t *b)
{
    return a->ttl_ms == b->ttl_ms && a->renew_fraction_ppm == b->renew_fraction_ppm &&
        a->stop_margin_ms == b->stop_margin_ms && a->min_validity_ms == b->min_validity_ms &&
        a->max_hold_ms == b->max_hold_ms && a->max_renewals == b->max_renewals &&
        a->fencing == b->fencing && a->wait_min_ms == b->wait_min_ms &&
        a->wait_max_ms == b->wait_max_ms && a->release_channel == b->release_channel &&
        a->lock_delay_ms == b->lock_delay_ms && a->keepalive_ms == b->keepalive_ms &&
        a->fair == b->fair;
}

static const elkfw_resource_conf_t *res_named(const elkfw_conf_t *c, const char *name)
{
    return elkfw_conf_resource(c, name, strlen(name));
}

elkfw_res_change_t elkfw_reload_resource(const elkfw_conf_t *cur, const elkfw_conf_t *next,
                                         const char *name)
{
    const elkfw_resource_conf_t *a = res_named(cur, name), *b = res_named(next, name);
    if (a == NULL) {
        return b == NULL ? ELKFW_RES_SAME : ELKFW_RES_ADDED;
    }
    if (b == NULL) {
        return ELKFW_RES_REMOVED;
    }
    if (!elkfw_resource_conf_same(a, b) || cur->drift_factor_ppm != next->drift_factor_ppm ||
        cur->drift_fixed_ms != next->drift_fixed_ms) {
        return ELKFW_RES_CHANGED;
    }
    return ELKFW_RES_SAME;
}

void elkfw_reload_plan(const elkfw_conf_t *cur, const elkfw_conf_t *next, elkfw_reload_plan_t *plan)
{
    size_t i;
    memset(plan, 0, sizeof *plan);
    plan->fleet_key = fleet_diff(cur, next);
    if (strcmp(cur->agent.socket_path, next->agent.socket_path) != 0) {
        plan->restart_key = "socket";
    } else if (cur->agent.log_target != next->agent.log_target) {
        plan->restart_key = "log";
    } else if (cur->agent.socket_mode != next->agent.socket_mode ||
               strcmp(cur->agent.socket_group, next->agent.socket_group) != 0) {
        plan->restart_key = "socket_mode or socket_group";
    }
    plan->log_level_changed = cur->agent.log_level != next->agent.log_level;
    plan->drift_changed = cur->drift_factor_ppm != next->drift_factor_ppm ||
        cur->drift_fixed_ms != next->drift_fixed_ms;
    for (i = 0; i < cur->n_resources; i++) {
        elkfw_res_change_t ch = elkfw_reload_resource(cur, next, cur->resources[i].name);
        plan->changed += ch == ELKFW_RES_CHANGED;
        plan->removed += ch == ELKFW_RES_REMOVED;
    }
    for (i = 0; i < next->n_resources; i++) {
        plan->added += res_named(cur, next->resources[i].name) == NULL;
    }
}
