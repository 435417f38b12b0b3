/* SPDX-License-Identifier: MIT */
/*
 * What reloading elkd's configuration would change: the running configuration compared
 * with a newly loaded one. Pure (no I/O, no clock), so the rules are tested alone
 * (tests/unit/test_reload.c); elkd applies the plan (SIGHUP, `elk reload`).
 *
 * Which keys reload:
 *   [resource NAME] every key, resources added or removed: a held lease keeps the values it
 *       was granted with; new values apply to the next grant; a removed resource goes once
 *       its lease is released.
 *   drift_factor, drift_fixed: like a change of every resource.
 *   [resource NAME] allow_users, allow_groups: at once, for the next ACQUIRE (held or not).
 *   [agent] log_level, log_summary, metrics_file, metrics_interval, max_clients_per_uid,
 *       client_stall_timeout, client_idle_timeout.
 * Which keys change the quorum of held leases (applied only while no lease is held or
 * being taken; refused otherwise): mode, gateway_id, key_prefix, tls/ca/cert/key,
 * connect_timeout, request_timeout, safety_check and every [node] section.
 * Which keys only a restart applies (kept as running, with a warning): [agent] socket, log,
 * socket_mode, socket_group.
 */
#ifndef ELKFW_RELOAD_H
#define ELKFW_RELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "elkfw/conf.h"

typedef struct elkfw_reload_plan {
    const char *fleet_key;   /* first changed key that alters the quorum, NULL if none */
    const char *restart_key; /* first changed key only a restart applies, NULL if none */
    bool log_level_changed;
    bool drift_changed; /* drift_factor or drift_fixed: every resource's lock settings */
    size_t added, changed, removed; /* resources */
} elkfw_reload_plan_t;

typedef enum elkfw_res_change {
    ELKFW_RES_SAME = 0,
    ELKFW_RES_CHANGED,
    ELKFW_RES_ADDED,
    ELKFW_RES_REMOVED
} elkfw_res_change_t;

/* Compare the running configuration cur with next; fills *plan. Both stay unchanged. */
void elkfw_reload_plan(const elkfw_conf_t *cur, const elkfw_conf_t *next,
                       elkfw_reload_plan_t *plan);

/* How resource name (NUL-terminated) changes from cur to next: SAME, CHANGED (a key of it,
 * or the fleet's drift settings, differ), ADDED (only in next) or REMOVED (only in cur).
 * SAME for a name in neither. */
elkfw_res_change_t elkfw_reload_resource(const elkfw_conf_t *cur, const elkfw_conf_t *next,
                                         const char *name);

/* True if two resource sections give a lease the same settings (names and line numbers
 * are not compared). */
bool elkfw_resource_conf_same(const elkfw_resource_conf_t *a, const elkfw_resource_conf_t *b);

#endif /* ELKFW_RELOAD_H */
