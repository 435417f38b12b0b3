/* SPDX-License-Identifier: MIT */
/* SIGHUP: a new configuration read, checked and applied where a running agent may. */
#include "agent.h"

/* A resource changed or removed by a reload: once nothing is held or in flight on it, its
 * new settings take effect (the lock is set up again) or its slot is freed. Returns true
 * when nothing is pending any more. */
bool elkd__res_settle(agent_t *a, resource_t *r)
{
    elk_lock_config_t lc;
    int rc;
    if (!r->has_pending && !r->removing) {
        return true;
    }
    if (elkd__owned_by(a, r, r->owner) || r->acquiring ||
        elk_lock_state(&r->lock) != ELK_LOCK_IDLE || elkd__lock_busy(r) ||
        elkfw_sup_stopping(&r->sup) || elkd__lock_deinit(r) != ELK_OK) {
        return false;
    }
    r->owner = -1;
    if (r->removing) {
        elkd__log(a, ELK_LOG_INFO, "%s: removed (configuration reload)", r->conf->name);
        r->in_use = r->removing = r->has_pending = false;
        return true;
    }
    r->own = r->pending;
    r->has_pending = false;
    elkfw_resource_lock_config(&a->conf, &r->own, &lc);
    rc = elkd__lock_init(a, r, &lc);
    if (rc != ELK_OK) {
        elkd__log(a, ELK_LOG_ERROR,
                  "%s: its new settings cannot be used (%s); the resource is out of service until "
                  "the next reload or restart",
                  r->conf->name, elk_err_message(rc));
        r->in_use = false;
        return true;
    }
    elkd__log(a, ELK_LOG_INFO,
              "%s: new settings in force (ttl %" PRIu32 " ms, stop_margin %" PRIu32 " ms)",
              r->conf->name, r->conf->ttl_ms, r->conf->stop_margin_ms);
    return true;
}

/* Every tick: settle what a reload left pending and give the resource to its waiters. */
void elkd__settle_reloaded(agent_t *a, uint64_t now, uint64_t *next)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = a->res[i];
        if (r->in_use && (r->has_pending || r->removing)) {
            if (elkd__res_settle(a, r)) {
                elkd__hand_to_next_waiter(a, r, now);
            } else if (!elkd__owned_by(a, r, r->owner) && now + 50 < *next) {
                *next = now + 50; /* a release round is ending: look again soon */
            }
        }
    }
}

/* What stops a rebuild of the fleet: a lease held, being taken or released, or a waiter.
 * Returns the resource's name, or NULL if nothing does. */
static const char *fleet_in_use(agent_t *a)
{
    size_t i;
    for (i = 0; i < a->n_res; i++) {
        const resource_t *r = a->res[i];
        if (r->in_use &&
            (elkd__owned_by(a, r, r->owner) || r->acquiring ||
             elk_lock_state(&r->lock) != ELK_LOCK_IDLE || elkd__lock_busy(r) ||
             elkfw_sup_stopping(&r->sup))) {
            return r->conf->name;
        }
    }
    for (i = 0; i < sizeof a->waiters / sizeof a->waiters[0]; i++) {
        if (a->waiters[i].client >= 0) {
            return a->res[a->waiters[i].res]->conf->name;
        }
    }
    return NULL;
}

/* Nothing is held: set the fleet, the lock client and every resource up from next. If that
 * fails (e.g. a TLS file), the running configuration is set up again. */
static int rebuild_fleet(agent_t *a, elkfw_conf_t *next, char *err, size_t errlen)
{
    elkfw_conf_t *old = malloc(sizeof *old);
    char err2[ELKFW_ERR_MAX];
    int rc;
    if (old == NULL) {
        snprintf(err, errlen, "out of memory");
        return ELK_E_NO_RESOURCES;
    }
    *old = a->conf;
    elkd__teardown_fleet(a);
    elkd__res_free_all(a);
    a->conf = *next;
    elkd__pick_gateway_id(a);
    memset(a->nodelog, 0, sizeof a->nodelog);
    memset(a->node_metrics, 0, sizeof a->node_metrics);
    memset(a->quarantine_until, 0, sizeof a->quarantine_until);
    rc = elkd__setup_fleet(a, err, errlen);
    if (rc != ELK_OK) {
        elkd__teardown_fleet(a);
        elkd__res_free_all(a);
        a->conf = *old; /* next keeps its resource table (the caller's to free) */
        elkd__pick_gateway_id(a);
        if (elkd__setup_fleet(a, err2, sizeof err2) != ELK_OK) {
            elkd__log(a, ELK_LOG_ERROR,
                      "reload: the running configuration cannot be set up again either: %s", err2);
        }
    } else {
        elkfw_conf_free(old); /* the running table is next's now */
    }
    free(old);
    return rc;
}

/* The slot table's size once slot k is needed: doubled (a reload adding many resources
 * one by one grows it a few times), within the build's limit. */
static size_t grown_cap(const agent_t *a, size_t k)
{
    size_t cap = a->res_cap * 2u > k + 1u ? a->res_cap * 2u : k + 1u;
    return cap < (size_t)ELKFW_MAX_RESOURCES ? cap : (size_t)ELKFW_MAX_RESOURCES;
}

/* A resource of next that no slot serves: a slot removed by an earlier reload but still
 * held takes it back; else a free slot gets it. */
static void reload_add(agent_t *a, const elkfw_resource_conf_t *nr)
{
    elk_lock_config_t lc;
    size_t k;
    int rc;
    for (k = 0; k < a->n_res; k++) {
        resource_t *r = a->res[k];
        if (r->in_use && strcmp(r->own.name, nr->name) == 0) {
            r->removing = false;
            r->has_pending = !elkfw_resource_conf_same(&r->own, nr);
            r->pending = *nr;
            return;
        }
    }
    for (k = 0; k < a->n_res && a->res[k]->in_use; k++) {
    }
    if (k < a->n_res ||
        (k < (size_t)ELKFW_MAX_RESOURCES && elkd__res_reserve(a, grown_cap(a, k)))) {
        resource_t *r = elkd__res_slot(a, k);
        if (r == NULL) {
            elkd__log(a, ELK_LOG_ERROR, "%s: not added: no memory for it", nr->name);
            return;
        }
        r->agent = a;
        r->own = *nr;
        r->conf = &r->own;
        r->owner = -1;
        elkfw_resource_lock_config(&a->conf, nr, &lc);
        rc = elkd__lock_init(a, r, &lc);
        if (rc != ELK_OK) {
            elkd__log(a, ELK_LOG_ERROR, "%s: cannot be added: %s", nr->name, elk_err_message(rc));
            return;
        }
        r->in_use = true;
        a->n_res = k >= a->n_res ? k + 1 : a->n_res;
        elkd__log(a, ELK_LOG_INFO, "%s: added (configuration reload)", nr->name);
        return;
    }
    elkd__log(a, ELK_LOG_ERROR,
              "%s: not added: %s (removed resources still held free their slots when released; "
              "reload again then)",
              nr->name,
              k < (size_t)ELKFW_MAX_RESOURCES ? "no memory for its slot"
                                              : "every resource slot this build has is taken");
}

/* Apply the resource part of next: changed and removed resources settle once idle
 * (their waiters for a removed one are told now), added ones get a slot. */
static void reload_resources(agent_t *a, const elkfw_conf_t *next, uint64_t now)
{
    size_t i, k;
    for (i = 0; i < a->n_res; i++) {
        resource_t *r = a->res[i];
        const elkfw_resource_conf_t *nr;
        if (!r->in_use) {
            continue;
        }
        nr = elkfw_conf_resource(next, r->own.name, strlen(r->own.name));
        r->removing = nr == NULL;
        r->has_pending = nr != NULL &&
            (!elkfw_resource_conf_same(&r->own, nr) ||
             a->conf.drift_factor_ppm != next->drift_factor_ppm ||
             a->conf.drift_fixed_ms != next->drift_fixed_ms);
        if (r->has_pending) {
            r->pending = *nr;
        }
        if (nr != NULL) {
            /* a semaphore's size is not a lease setting: STATUS says the new one at once */
            r->own.permits = nr->permits;
        }
        for (k = 0; r->removing && k < sizeof a->waiters / sizeof a->waiters[0]; k++) {
            if (a->waiters[k].client >= 0 && a->waiters[k].res == i) {
                elkd__client_err(a, a->waiters[k].client, ELK_E_RESOURCE_UNKNOWN,
                                 "removed from the configuration");
                a->waiters[k].client = -1;
            }
        }
        if ((r->removing || r->has_pending) && elkd__owned_by(a, r, r->owner)) {
            elkd__log(a, ELK_LOG_INFO, "%s: %s once its lease (token %" PRIu64 ") is released",
                      r->own.name, r->removing ? "goes" : "new settings apply",
                      elk_lock_token(&r->lock));
        }
    }
    /* settled and added resources take the new drift settings; next's resource table is
     * the running one from now on */
    elkfw_conf_free(&a->conf);
    a->conf = *next;
    for (i = 0; i < next->n_resources; i++) {
        if (elkd__find_res(a, next->resources[i].name) == NULL) {
            reload_add(a, &next->resources[i]);
        }
    }
    elkd__settle_reloaded(a, now, &(uint64_t){UINT64_MAX});
}

/* SIGHUP: check the file as --check does; on any error keep everything running as it
 * is and say why. Otherwise apply what may change while leases are held
 * (elkfw/reload.h). */
/* Every in-use slot takes its resource's allow lists from next (resolved into allow,
 * indexed like next->resources): who may take a resource changes at once, held or not. */
static void reload_allow(agent_t *a, const elkfw_conf_t *next, const elkfw_allow_t *allow)
{
    size_t i, k;
    for (i = 0; i < a->n_res; i++) {
        for (k = 0; a->res[i]->in_use && k < next->n_resources; k++) {
            if (strcmp(a->res[i]->own.name, next->resources[k].name) == 0) {
                a->allow[i] = allow[k];
            }
        }
    }
}

/* A valid but risky configuration (max_hold = 0, ...) is said in the log too, not only
 * by --check: at start and after each reload. */
void elkd__log_conf_warnings(agent_t *a)
{
    char w[ELKFW_ERR_MAX];
    size_t pos = 0;
    while (elkfw_conf_warning(&a->conf, &pos, w, sizeof w)) {
        elkd__log(a, ELK_LOG_WARN, "%s", w);
    }
}

void elkd__reload_config(agent_t *a, uint64_t now)
{
    elkfw_conf_t *next = calloc(1, sizeof *next);
    elkfw_allow_t *allow = NULL;
    gid_t gid;
    elkfw_reload_plan_t plan;
    const char *busy;
    char err[ELKFW_ERR_MAX], old_events[ELKFW_STR_MAX];
    uint32_t old_events_max = a->conf.agent.events_max;
    int rc;
    err[0] = '\0';
    snprintf(old_events, sizeof old_events, "%s", a->conf.agent.events_file);
    elkfw_notify_reloading(&a->notify);
    if (next == NULL) {
        snprintf(err, sizeof err, "out of memory");
    } else if (elkd__read_conf(a, next, &allow, &gid, err, sizeof err) == ELK_OK) {
        elkfw_reload_plan(&a->conf, next, &plan);
        if (plan.restart_key != NULL) {
            elkd__log(a, ELK_LOG_WARN,
                      "reload: [agent] %s changed; only a restart applies it (the running value is "
                      "kept)",
                      plan.restart_key);
            strcpy(next->agent.socket_path, a->conf.agent.socket_path);
            next->agent.log_target = a->conf.agent.log_target;
            next->agent.socket_mode = a->conf.agent.socket_mode;
            strcpy(next->agent.socket_group, a->conf.agent.socket_group);
        }
        if (plan.fleet_key != NULL && (busy = fleet_in_use(a)) != NULL) {
            snprintf(err, sizeof err,
                     "%s changed, which would change the quorum of held leases, and %s is held or "
                     "in use; release it (or restart elkd) to apply that",
                     plan.fleet_key, busy);
        } else if (plan.fleet_key != NULL) {
            rc = rebuild_fleet(a, next, err, sizeof err);
            if (rc == ELK_OK) {
                elkd__log(
                    a, ELK_LOG_INFO,
                    "reload: %s changed and no lease was held: fleet set up again (%zu node%s, "
                    "%zu resource%s)",
                    plan.fleet_key, a->conf.n_nodes, a->conf.n_nodes == 1 ? "" : "s", a->n_res,
                    a->n_res == 1 ? "" : "s");
            }
        } else {
            reload_resources(a, next, now);
            elkd__log(a, ELK_LOG_INFO,
                      "reload: %zu resource%s added, %zu changed (held leases keep their settings "
                      "until released), %zu removed",
                      plan.added, plan.added == 1 ? "" : "s", plan.changed, plan.removed);
        }
        if (err[0] == '\0') {
            reload_allow(a, next, allow);
        }
    }
    if (next != NULL && next->resources != a->conf.resources) {
        elkfw_conf_free(next); /* not the running table: refused, or the fleet's rebuild failed */
    }
    free(next);
    free(allow);
    (void)elkfw_notify_send(&a->notify, "READY=1");
    if (err[0] != '\0') {
        a->reload_failures++;
        snprintf(a->reload_error, sizeof a->reload_error, "%s", err);
        elkd__log(a, ELK_LOG_ERROR, "reload failed, keeping the running configuration: %s", err);
        return;
    }
    a->reloads++;
    a->reload_error[0] = '\0';
    elkd__evlog_apply(a, old_events, old_events_max);
    elkd__log_conf_warnings(a);
    a->log_level = a->level_override >= 0 ? a->level_override : a->conf.agent.log_level;
    a->lib_log.level = a->log_level;
}
