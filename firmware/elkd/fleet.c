/* SPDX-License-Identifier: MIT */
/* The fleet: TCP and TLS transports, nodes, the lock client and the resources' locks. */
#include "agent.h"

#ifdef ELKD_TLS
/* The TLS files of nc could not be set up (rc): a file that cannot be opened is named with
 * the system's reason (errno), which the TLS library's "unreadable or not PEM" loses. */
static void tls_files_err(const agent_t *a, const elkfw_node_conf_t *nc, int rc, char *err,
                          size_t errlen)
{
    const char *role[3] = {"CA file", "certificate", "key"};
    const char *path[3] = {nc->tls.ca, nc->tls.cert, nc->tls.key};
    size_t k;
    for (k = 0; k < 3; k++) {
        FILE *f = path[k][0] != '\0' ? fopen(path[k], "rb") : NULL;
        if (path[k][0] != '\0' && f == NULL) {
            snprintf(err, errlen, "%s:%d: [node %s]: cannot read the %s '%s': %s", a->conf.path,
                     nc->line, nc->name, role[k], path[k], strerror(errno));
            return;
        }
        if (f != NULL) {
            fclose(f);
        }
    }
    snprintf(err, errlen, "%s:%d: [node %s]: %s (ca '%s'%s%s)", a->conf.path, nc->line, nc->name,
             elk_err_message(rc), nc->tls.ca, nc->tls.cert[0] ? ", cert " : "", nc->tls.cert);
}
#endif

/* Node i's TLS layer over its TCP transport *tcp (tls = on): *tr becomes the TLS one. */
static int setup_node_tls(agent_t *a, size_t i, elk_transport_t *tcp, elk_transport_t *tr,
                          char *err, size_t errlen)
{
    const elkfw_node_conf_t *nc = &a->conf.nodes[i];
#ifdef ELKD_TLS
    int rc;
    elk_tls_config_t tc;
    memset(&tc, 0, sizeof tc);
    tc.ca_file = nc->tls.ca;
    tc.cert_file = nc->tls.cert[0] ? nc->tls.cert : NULL;
    tc.key_file = nc->tls.key[0] ? nc->tls.key : NULL;
    rc = elk_tls_shared_init(&a->tls_shared[i], &tc, &a->entropy);
    if (rc != ELK_OK) {
        tls_files_err(a, nc, rc, err, errlen);
        return rc;
    }
    rc = elk_tls_conn_init(&a->tls_conn[i], &a->tls_shared[i], tcp, tr);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "[node %s]: TLS connection setup: %s", nc->name, elk_err_message(rc));
        return rc;
    }
    a->tls_used[i] = true;
    return ELK_OK;
#else
    (void)tcp;
    (void)tr;
    snprintf(err, errlen, "%s:%d: [node %s]: tls = on but this elkd was built without TLS",
             a->conf.path, nc->line, nc->name);
    return ELK_E_NOT_SUPPORTED;
#endif
}

static int setup_node(agent_t *a, size_t i, char *err, size_t errlen)
{
    const elkfw_node_conf_t *nc = &a->conf.nodes[i];
    elk_node_config_t cfg;
    elk_transport_t tcp, tr;
    int rc;
    elk_posix_tcp_init(&a->tcp[i], NULL, &tcp);
    tr = tcp;
    if (nc->tls.on == 1 && (rc = setup_node_tls(a, i, &tcp, &tr, err, errlen)) != ELK_OK) {
        return rc;
    }
    elk_node_config_defaults(&cfg);
    cfg.endpoint.host = nc->host;
    cfg.endpoint.port = nc->port;
    cfg.endpoint.server_name = nc->server_name[0] ? nc->server_name : NULL;
    cfg.username = nc->user[0] ? nc->user : NULL;
    cfg.password = nc->password[0] ? nc->password : NULL;
    cfg.db = nc->db;
    cfg.resp3 = CONFIG_ELK_RESP3 ? true : false;
    cfg.connect_timeout_ms = nc->connect_timeout_ms;
    cfg.request_timeout_ms = nc->request_timeout_ms;
    cfg.clock = &a->clock; /* a reply's receive time read after its recv, not before a preemption */
    rc = elk_node_init(&a->nodes[i], &cfg, &tr, &a->pool, &a->entropy, &a->lib_log);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "[node %s]: %s", nc->name, elk_err_message(rc));
        return rc;
    }
    a->nodes[i].stats.tls = nc->tls.on == 1; /* node.h: the caller sets it, for status */
    return ELK_OK;
}

static int setup_client(agent_t *a, char *err, size_t errlen)
{
    int rc;
    elk_client_config_t cc;
    elk_client_config_defaults(&cc);
    cc.gateway_id = a->gateway_id;
    cc.key_prefix = a->conf.key_prefix;
    cc.mode = a->conf.mode == ELKFW_MODE_REDLOCK ? ELK_MODE_REDLOCK : ELK_MODE_SINGLE;
    cc.on_node_state = elkd__on_node_state;
    cc.node_state_user = a;
    cc.safety = a->conf.agent.safety_check == ELKFW_SAFETY_OFF ? ELK_SAFETY_OFF
        : a->conf.agent.safety_check == ELKFW_SAFETY_REFUSE    ? ELK_SAFETY_REFUSE
                                                               : ELK_SAFETY_WARN;
    cc.vote_hygiene = a->conf.vote_hygiene;
    cc.quarantine_ms = a->conf.quarantine_ms;
    cc.batch_renewals = a->conf.batch_renewals;
    rc = elk_client_init(&a->client, &cc, &a->fleet, &a->entropy, &a->lib_log);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "lock client (gateway_id '%s', key_prefix '%s'): %s", a->gateway_id,
                 a->conf.key_prefix, elk_err_message(rc));
        return rc;
    }
    return ELK_OK;
}

static int setup_resources(agent_t *a, char *err, size_t errlen)
{
    size_t i;
    int rc;
    if (!elkd__res_reserve(a, a->conf.n_resources)) {
        snprintf(err, errlen, "no memory for %zu resources", a->conf.n_resources);
        return ELK_E_NO_RESOURCES;
    }
    for (i = 0; i < a->conf.n_resources; i++) {
        const elkfw_resource_conf_t *rc_ = &a->conf.resources[i];
        elk_lock_config_t lc;
        resource_t *r = elkd__res_slot(a, a->n_res);
        if (r == NULL) {
            snprintf(err, errlen, "no memory for resource %s", rc_->name);
            return ELK_E_NO_RESOURCES;
        }
        elkfw_resource_lock_config(&a->conf, rc_, &lc);
        r->agent = a;
        r->own = *rc_;
        r->conf = &r->own;
        r->owner = -1;
        r->in_use = true;
        rc = elkd__lock_init(a, r, &lc);
        if (rc != ELK_OK) {
            snprintf(err, errlen, "%s:%d: [resource %s]: %s", a->conf.path, rc_->line, rc_->name,
                     elk_err_message(rc));
            return rc;
        }
        a->n_res++;
    }
    return ELK_OK;
}

int elkd__setup_fleet(agent_t *a, char *err, size_t errlen)
{
    size_t i;
    int rc;
    rc = elk_pool_init(&a->pool, a->pool_mem, sizeof a->pool_mem, CONFIG_ELK_POOL_BLOCK_SIZE,
                       2u * a->conf.n_nodes + 2u);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "buffer pool: %s", elk_err_message(rc));
        return rc;
    }
    for (i = 0; i < a->conf.n_nodes; i++) {
        if ((rc = setup_node(a, i, err, errlen)) != ELK_OK) {
            return rc;
        }
    }
    rc = elk_fleet_init(&a->fleet, a->nodes, a->conf.n_nodes);
    if (rc != ELK_OK) {
        snprintf(err, errlen, "fleet: %s", elk_err_message(rc));
        return rc;
    }
    rc = setup_client(a, err, errlen);
    return rc != ELK_OK ? rc : setup_resources(a, err, errlen);
}

void elkd__teardown_fleet(agent_t *a)
{
    size_t i;
    uint64_t now = a->clock.now_ms(a->clock.ctx);
    for (i = 0; i < a->fleet.count; i++) {
        elk_node_close(&a->nodes[i], now);
    }
#ifdef ELKD_TLS
    for (i = 0; i < a->conf.n_nodes; i++) {
        if (a->tls_used[i]) {
            elk_tls_conn_free(&a->tls_conn[i]);
            elk_tls_shared_free(&a->tls_shared[i]);
            a->tls_used[i] = false; /* a reload may set the fleet up again */
        }
    }
#endif
}
