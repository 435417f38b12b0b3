/* SPDX-License-Identifier: MIT */
/* Whole-file checks of a parsed configuration: what no single line can say. */
#include "conf_internal.h"

/* Whole-file checks that no single line can make. */

const char *elkfw_conf__kind(const elkfw_resource_conf_t *r)
{
    return r->semaphore ? "semaphore" : "resource";
}

/* The lease engine's own rule (elk_lock_config_explain), with a message that points at
 * the key to change: the same arithmetic elkd will run, rounding included, so a file that
 * passes --check never fails when elkd sets up its locks. */
static int check_lease_rule(parser_t *p, const elkfw_conf_t *c, const elkfw_resource_conf_t *r)
{
    elk_lock_config_t lc;
    elk_lock_config_fault_t fault;
    uint64_t drift;
    elkfw_resource_lock_config(c, r, &lc);
    if (elk_lock_config_explain(&lc, &fault) == ELK_OK) {
        return ELK_OK;
    }
    drift = elk_lock_config_drift(&lc);
    if (fault == ELK_LOCK_CFG_NO_VALIDITY) {
        /* point at the key to change: the ttl if set, else the margin that eats it */
        const char *key = r->ttl_line ? "ttl"
            : r->stop_margin_line     ? "stop_margin"
            : r->min_validity_line    ? "min_validity"
                                      : NULL;
        int line = r->ttl_line     ? r->ttl_line
            : r->stop_margin_line  ? r->stop_margin_line
            : r->min_validity_line ? r->min_validity_line
                                   : r->line;
        return elkfw_conf__fail(
            p, line,
            "%s%s%s[%s %s]: ttl %lums leaves no validity: drift %llums + stop_margin %lums + "
            "min_validity %lums must be below it",
            key ? "key '" : "", key ? key : "", key ? "' in " : "", elkfw_conf__kind(r), r->name,
            (unsigned long)r->ttl_ms, (unsigned long long)drift, (unsigned long)r->stop_margin_ms,
            (unsigned long)r->min_validity_ms);
    }
    if (fault == ELK_LOCK_CFG_RENEW_AFTER_DEADLINE) {
        return elkfw_conf__fail(
            p, r->line,
            "[%s %s]: renew_fraction makes renewal start after the local deadline "
            "(%llums); lower it",
            elkfw_conf__kind(r), r->name,
            (unsigned long long)(r->ttl_ms - drift - r->stop_margin_ms));
    }
    if (fault == ELK_LOCK_CFG_WAIT_RANGE) {
        return elkfw_conf__fail(p, r->line, "[%s %s]: wait_min %lums is above wait_max %lums",
                                elkfw_conf__kind(r), r->name, (unsigned long)r->wait_min_ms,
                                (unsigned long)r->wait_max_ms);
    }
    return elkfw_conf__fail(p, r->line, "[%s %s]: ttl or renew_fraction out of range",
                            elkfw_conf__kind(r), r->name);
}

void elkfw_resource_lock_config(const elkfw_conf_t *c, const elkfw_resource_conf_t *r,
                                elk_lock_config_t *out)
{
    elk_lock_config_defaults(out);
    out->ttl_ms = r->ttl_ms;
    out->renew_fraction_pct = (r->renew_fraction_ppm + 5000u) / 10000u;
    out->drift_factor_ppm = c->drift_factor_ppm;
    out->drift_fixed_ms = c->drift_fixed_ms;
    out->stop_margin_ms = r->stop_margin_ms;
    out->min_validity_ms = r->min_validity_ms;
    out->max_hold_ms = r->max_hold_ms;
    out->max_renewals = r->max_renewals;
    out->wait_min_ms = r->wait_min_ms;
    out->wait_max_ms = r->wait_max_ms;
    out->fencing = r->fencing;
    out->use_release_channel = r->release_channel;
    out->lock_delay_ms = r->lock_delay_ms;
    out->keepalive_ms = r->keepalive_ms;
}

/* The fleet as a whole: enough nodes for the mode, something to lock. */
static int check_fleet(parser_t *p, const elkfw_conf_t *c)
{
    if (c->n_nodes == 0) {
        return elkfw_conf__fail(p, 0,
                                "no [node NAME] section: the fleet needs at least one Redis node");
    }
    if (c->mode == ELKFW_MODE_SINGLE && c->n_nodes != 1) {
        return elkfw_conf__fail(
            p, 0, "[fleet] mode = single takes exactly one [node], found %zu (use mode = redlock)",
            c->n_nodes);
    }
    if (c->mode == ELKFW_MODE_REDLOCK && c->n_nodes < 3) {
        return elkfw_conf__fail(
            p, 0, "[fleet] mode = redlock needs at least 3 independent nodes, found %zu",
            c->n_nodes);
    }
    if (c->key_prefix[0] != '\0' && strpbrk(c->key_prefix, "{} \t") != NULL) {
        /* unreachable from a file (set_key checks the line); kept for callers that fill c */
        return elkfw_conf__fail(p, 0, "[fleet] key_prefix '%s' must not contain braces or spaces",
                                c->key_prefix);
    }
    if (c->n_resources == 0) {
        return elkfw_conf__fail(p, 0,
                                "no [resource NAME] or [semaphore NAME] section: nothing to lock");
    }
    return ELK_OK;
}

/* A node with TLS on: the [fleet] files it does not set itself, and a usable setup. */
static int check_node_tls(parser_t *p, const elkfw_conf_t *c, elkfw_node_conf_t *n)
{
    if (n->tls.ca[0] == '\0') {
        memcpy(n->tls.ca, c->tls.ca, sizeof n->tls.ca);
    }
    if (n->tls.cert[0] == '\0') {
        memcpy(n->tls.cert, c->tls.cert, sizeof n->tls.cert);
    }
    if (n->tls.key[0] == '\0') {
        memcpy(n->tls.key, c->tls.key, sizeof n->tls.key);
    }
    if (n->tls.ca[0] == '\0') {
        return elkfw_conf__fail(
            p, n->line, "[node %s]: tls is on but no 'ca' is set (here or in [fleet])", n->name);
    }
    if (n->server_name[0] == '\0' && elkfw_host_is_ip(n->host)) {
        /* the certificate name check would fail on every connection, forever */
        return elkfw_conf__fail(
            p, n->line,
            "[node %s]: tls is on and host '%s' is an IP address: set 'server_name' to the name "
            "in the server's certificate",
            n->name, n->host);
    }
    if ((n->tls.cert[0] == '\0') != (n->tls.key[0] == '\0')) {
        return elkfw_conf__fail(
            p, n->line, "[node %s]: a client 'cert' needs its 'key' and the other way round",
            n->name);
    }
    return ELK_OK;
}

/* One node: required keys, what it inherits from [fleet], its TLS setup. */
static int check_node(parser_t *p, const elkfw_conf_t *c, elkfw_node_conf_t *n)
{
    int tls = n->tls.on >= 0 ? n->tls.on : c->tls.on;
    if (n->host[0] == '\0') {
        return elkfw_conf__fail(p, n->line, "[node %s]: key 'host' is required", n->name);
    }
    if (n->password[0] != '\0' && n->password_file[0] != '\0') {
        return elkfw_conf__fail(p, n->line,
                                "[node %s]: set 'password' or 'password_file', not both", n->name);
    }
    if (n->tls.on < 0) {
        n->tls.on = c->tls.on;
    }
    if (tls == 1 && check_node_tls(p, c, n) != ELK_OK) {
        return ELK_E_CONFIG;
    }
    if (n->connect_timeout_ms == 0) {
        n->connect_timeout_ms = c->connect_timeout_ms;
    }
    if (n->request_timeout_ms == 0) {
        n->request_timeout_ms = c->request_timeout_ms;
    }
    return ELK_OK;
}

/* One resource: its defaults that depend on other keys, then the lease rules. */
static int check_resource(parser_t *p, const elkfw_conf_t *c, elkfw_resource_conf_t *r)
{
    if (r->min_validity_ms == 0) {
        r->min_validity_ms = r->ttl_ms / 5u;
    }
    if ((r->renew_fraction_ppm + 5000u) / 10000u < 1u ||
        (r->renew_fraction_ppm + 5000u) / 10000u > 90u) {
        return elkfw_conf__fail(p, r->line,
                                "[%s %s]: renew_fraction must be between 1%% and 90%% of the ttl",
                                elkfw_conf__kind(r), r->name);
    }
    if (check_lease_rule(p, c, r) != ELK_OK) {
        return ELK_E_CONFIG;
    }
    if (r->max_hold_line == 0 && r->max_hold_ms < r->ttl_ms) {
        r->max_hold_ms = r->ttl_ms; /* the default cap, for a lease longer than it */
    }
    if (r->max_hold_ms != 0 && r->max_hold_ms < r->ttl_ms) {
        return elkfw_conf__fail(p, r->line, "[%s %s]: max_hold %lums is shorter than ttl %lums",
                                elkfw_conf__kind(r), r->name, (unsigned long)r->max_hold_ms,
                                (unsigned long)r->ttl_ms);
    }
    return ELK_OK;
}

/* A [semaphore]'s permits: set, in range, and their names fit the key layout. */
static int check_permits(parser_t *p, const elkfw_resource_conf_t *t)
{
    size_t max = elkfw_resource_name_max(p->c);
    if (t->permits_line == 0) {
        return elkfw_conf__fail(p, t->line,
                                "[semaphore %s]: key 'permits' is required (1 to %d, how many may "
                                "hold it at once)",
                                t->name, ELKFW_MAX_PERMITS);
    }
    if (t->permits == 0 || t->permits > ELKFW_MAX_PERMITS) {
        return elkfw_conf__fail(p, t->permits_line,
                                "key 'permits' in [semaphore %s]: %lu is out of range: a semaphore "
                                "has 1 to %d permits (ELKFW_MAX_PERMITS)",
                                t->name, (unsigned long)t->permits, ELKFW_MAX_PERMITS);
    }
    if (strlen(t->name) + 1u + (t->permits >= 10u ? 2u : 1u) > max) {
        return elkfw_conf__fail(p, t->line,
                                "[semaphore %s]: the permit name %s#%lu is longer than the %zu "
                                "bytes the key layout allows; shorten the name",
                                t->name, t->name, (unsigned long)t->permits, max);
    }
    return ELK_OK;
}

/* fair = on: a [resource]'s setting, and only in a build with fair waiting. */
static int check_fair(parser_t *p, const elkfw_resource_conf_t *r)
{
    if (!r->fair) {
        return ELK_OK;
    }
    if (r->semaphore) {
        return elkfw_conf__fail(p, r->fair_line,
                                "key 'fair' in [semaphore %s]: fair waiting is for a [resource] "
                                "only (a semaphore's waiters try every permit); remove the key",
                                r->name);
    }
#if !CONFIG_ELK_FAIR
    return elkfw_conf__fail(p, r->fair_line,
                            "key 'fair' in [resource %s]: this build has no fair waiting "
                            "(CONFIG_ELK_FAIR is off); rebuild with CONFIG_ELK_FAIR=1 or remove "
                            "the key",
                            r->name);
#else
    return ELK_OK;
#endif
}

/* A quarantine set by hand must outlast every lease this file's resources can have on a
 * node: ttl + drift + lock_delay. Shorter, a node restarted empty would vote again while a
 * lease it forgot can still be valid on the others. */
static int check_quarantine(parser_t *p, const elkfw_conf_t *c)
{
    size_t i;
    for (i = 0; c->quarantine_ms != 0 && i < c->n_resources; i++) {
        const elkfw_resource_conf_t *r = &c->resources[i];
        elk_lock_config_t lc;
        uint64_t need;
        elkfw_resource_lock_config(c, r, &lc);
        need = (uint64_t)r->ttl_ms + elk_lock_config_drift(&lc) + r->lock_delay_ms;
        if (c->quarantine_ms < need) {
            return elkfw_conf__fail(
                p, 0,
                "[fleet] quarantine %lums is shorter than ttl + drift + lock_delay of "
                "[%s %s] (%llums): a restarted node would vote while a lease it lost "
                "may still be valid; raise it or use 0 (automatic)",
                (unsigned long)c->quarantine_ms, elkfw_conf__kind(r), r->name,
                (unsigned long long)need);
        }
    }
    return ELK_OK;
}

bool elkfw_conf_warning(const elkfw_conf_t *c, size_t *pos, char *out, size_t cap)
{
    while (*pos <= c->n_resources) {
        size_t i = (*pos)++;
        if (i < c->n_resources && c->resources[i].max_hold_ms == 0) {
            const elkfw_resource_conf_t *r = &c->resources[i];
            if (r->permit > 1u) {
                continue; /* a semaphore's permits share its settings: said once */
            }
            snprintf(out, cap,
                     "%s:%d: warning: [%s %s] max_hold = 0: a hung holder keeps the "
                     "resource forever; set a cap (e.g. max_hold = 1h)",
                     c->path, r->max_hold_line ? r->max_hold_line : r->line, elkfw_conf__kind(r),
                     r->name);
            return true;
        }
        if (i == c->n_resources && !c->vote_hygiene) {
            snprintf(out, cap,
                     "%s:%d: warning: [fleet] vote_hygiene = off: a master that restarted empty "
                     "or whose clock jumped ahead keeps its vote and two holders can overlap "
                     "(for negative controls only)",
                     c->path, c->vote_hygiene_line);
            return true;
        }
    }
    return false;
}

int elkfw_conf__check_conf(parser_t *p)
{
    elkfw_conf_t *c = p->c;
    size_t i;
    /* each check adds its problem to p->err and the next one still runs */
    (void)check_fleet(p, c);
    for (i = 0; i < c->n_nodes; i++) {
        (void)check_node(p, c, &c->nodes[i]);
    }
    for (i = 0; i < c->n_resources; i++) {
        (void)check_resource(p, c, &c->resources[i]);
        (void)check_fair(p, &c->resources[i]);
        if (c->resources[i].semaphore) {
            (void)check_permits(p, &c->resources[i]);
        }
    }
    (void)check_quarantine(p, c);
    if (c->agent.socket_path[0] == '\0') {
        (void)elkfw_conf__fail(p, 0, "[agent] socket must not be empty");
    }
    return p->errors != 0 ? ELK_E_CONFIG : ELK_OK;
}

/* The permits of template t (a [semaphore] section, checked) as entries "NAME#1".."NAME#N"
 * of out, from *n on (check_permits found it right). */
static void expand_one(const elkfw_resource_conf_t *t, elkfw_resource_conf_t *out, size_t *n)
{
    uint32_t k;
    for (k = 1; k <= t->permits; k++) {
        elkfw_resource_conf_t *r = &out[(*n)++];
        char num[8];
        size_t nl = strlen(t->name);
        int w = snprintf(num, sizeof num, "#%u", (unsigned)k);
        *r = *t;
        memcpy(r->name + nl, num, (size_t)w + 1u); /* fits: the length was checked above */
        r->permit = k;
    }
}

/* Every [semaphore] template replaced by its permits, in place of it (the table order is
 * the file's). Returns ELK_OK, or ELK_E_CONFIG / ELK_E_NO_RESOURCES with the reason said. */
int elkfw_conf__expand_semaphores(parser_t *p)
{
    elkfw_conf_t *c = p->c;
    size_t i, total = 0, n = 0;
    elkfw_resource_conf_t *t;
    bool any = false;
    for (i = 0; i < c->n_resources; i++) {
        const elkfw_resource_conf_t *r = &c->resources[i];
        bool counted = r->semaphore && r->permits >= 1u && r->permits <= ELKFW_MAX_PERMITS;
        total += counted ? r->permits : 1u; /* a bad count is said by expand_one */
        any |= r->semaphore;
    }
    if (!any) {
        return ELK_OK;
    }
    if (total > (size_t)ELKFW_MAX_RESOURCES) {
        return elkfw_conf__fail(p, 0,
                                "too many resources: the semaphores' permits make %zu, at most %d "
                                "in this build (%s)",
                                total, ELKFW_MAX_RESOURCES, ELKFW_MAX_RESOURCES_HINT);
    }
    t = calloc(total != 0 ? total : 1u, sizeof *t);
    if (t == NULL) {
        (void)elkfw_conf__fail(p, 0, "no memory for %zu resources", total);
        return ELK_E_NO_RESOURCES;
    }
    for (i = 0; i < c->n_resources; i++) {
        if (!c->resources[i].semaphore) {
            t[n++] = c->resources[i];
        } else {
            expand_one(&c->resources[i], t, &n);
        }
    }
    free(c->resources);
    c->resources = t;
    c->n_resources = c->cap_resources = total;
    return ELK_OK;
}
