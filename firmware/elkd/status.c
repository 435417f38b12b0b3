/* SPDX-License-Identifier: MIT */
/* STATUS and STATUS METRICS answers, and the metrics file. */
#include "agent.h"

static const char *holder_text(agent_t *a, const resource_t *r, char *buf, size_t cap)
{
    if (r->owner >= 0 && elkd__owned_by(a, r, r->owner)) {
        snprintf(buf, cap, "pid:%d", (int)a->clients[r->owner].pid);
    } else if (elkfw_sup_stopping(&r->sup)) {
        snprintf(buf, cap, "stopping:pgid:%d", (int)r->sup.pgid); /* its client left */
    } else {
        snprintf(buf, cap, "-");
    }
    return buf;
}

static void node_addr(agent_t *a, size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s:%u", a->conf.nodes[i].host, (unsigned)a->conf.nodes[i].port);
}

size_t elkd__clients_connected(agent_t *a)
{
    size_t i, n = 0;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        n += a->clients[i].fd >= 0;
    }
    return n;
}

static size_t resources_in_use(const agent_t *a)
{
    size_t i, n = 0;
    for (i = 0; i < a->n_res; i++) {
        n += a->res[i]->in_use;
    }
    return n;
}

/* s with quotes and backslashes replaced by ' and / (a server's error text can hold them;
 * the result goes inside a JSON string). Control bytes are already '?' (elk_fmt_bytes). */
static const char *json_text(const char *s, char *out, size_t cap)
{
    size_t i;
    for (i = 0; s[i] != '\0' && i + 1 < cap; i++) {
        out[i] = s[i] == '"' ? '\'' : s[i] == '\\' ? '/' : s[i];
    }
    out[i] = '\0';
    return out;
}

/* The keepalive interval of r: its hold's while held, else what a plain ACQUIRE gets. */
static uint32_t res_keepalive(const resource_t *r, uint64_t now)
{
    return elk_lock_is_held(&r->lock, now) ? r->keepalive_ms : r->conf->keepalive_ms;
}

/* ms until node i may vote again after a quarantine (0: not quarantined). */
static uint64_t quarantine_left(agent_t *a, size_t i, uint64_t now)
{
    uint64_t until = elk_client_node_quarantine(&a->client, i);
    return until > now ? until - now : 0;
}

/* Node i's vote hygiene for its STATUS line: " hygiene=<text>", its spaces written as '_'
 * (values hold none) and, while it is quarantined, ";_until_<local time>_(in_<N>_s)"
 * appended. One word: `elk status` tables take a fixed number of columns. */
static void node_hygiene_word(agent_t *a, size_t i, uint64_t now, char *buf, size_t cap)
{
    uint64_t left = quarantine_left(a, i, now);
    const char *text = elk_client_node_hygiene(&a->client, i);
    size_t k;
    int n;
    if (left == 0) {
        n = snprintf(buf, cap, " hygiene=%s", text[0] ? text : "-");
    } else {
        /* the lease clock is monotonic: the wall-clock moment is for people only */
        time_t t = time(NULL) + (time_t)((left + 999u) / 1000u);
        struct tm tm;
        char when[16] = "?";
        if (localtime_r(&t, &tm) != NULL) {
            strftime(when, sizeof when, "%H:%M:%S", &tm);
        }
        n = snprintf(buf, cap, " hygiene=%s; until %s (in %" PRIu64 " s)", text, when,
                     (left + 999u) / 1000u);
    }
    for (k = 1; n > 0 && k < (size_t)n && k < cap && buf[k] != '\0'; k++) {
        buf[k] = buf[k] == ' ' || buf[k] == '\t' ? '_' : buf[k];
    }
}

/* The local clock suspect for STATUS: "suspect" while every connected node's clock jumps
 * alike (this gateway's clock is the likely cause), else "ok"; *ppm the rate seen last. */
static const char *local_clock_word(agent_t *a, int32_t *ppm)
{
    return elk_client_local_clock_suspect(&a->client, ppm, NULL) == ELK_E_LOCAL_CLOCK ? "suspect"
                                                                                      : "ok";
}

/* The semaphore whose permit 1 is r: "semaphore" lines, one a semaphore. */
static bool sem_head(const resource_t *r)
{
    return r->in_use && !r->removing && r->own.permits != 0 && r->own.permit == 1u;
}

static size_t semaphores_served(const agent_t *a)
{
    size_t i, n = 0;
    for (i = 0; i < a->n_res; i++) {
        n += sem_head(a->res[i]);
    }
    return n;
}

/* Semaphore head's permits, held here or (the last round said so) elsewhere: for STATUS,
 * text ("pumps#2:pid:812:client:4:token:17,...") or JSON objects. Returns permits held on
 * this agent; *busy gets those a quorum said another holder has. */
static uint32_t sem_holders(agent_t *a, const resource_t *head, uint64_t now, bool json, char *out,
                            size_t cap, uint32_t *busy)
{
    size_t i, len = 0, nl = elkfw_permit_sem_len(head->own.name);
    uint32_t held = 0;
    out[0] = '\0';
    *busy = 0;
    for (i = 0; i < a->n_res; i++) {
        const resource_t *r = a->res[i];
        bool local;
        if (!r->in_use || r->own.permits == 0 || elkfw_permit_sem_len(r->own.name) != nl ||
            memcmp(r->own.name, head->own.name, nl) != 0) {
            continue;
        }
        local = elkd__owned_by(a, r, r->owner) && !r->acquiring && elk_lock_is_held(&r->lock, now);
        if (local) {
            held++;
            elkd__counts_add(out, cap, &len,
                             json ? "%s{\"permit\":\"%s\",\"where\":\"local\",\"pid\":%d,"
                                    "\"client\":%" PRIu64 ",\"token\":%" PRIu64 "}"
                                  : "%s%s:pid:%d:client:%" PRIu64 ":token:%" PRIu64,
                             len != 0 ? "," : "", r->own.name, (int)a->clients[r->owner].pid,
                             a->clients[r->owner].id, elk_lock_token(&r->lock));
        } else if (elk_lock_last_error(&r->lock) == ELK_E_LOCK_BUSY) {
            (*busy)++;
            elkd__counts_add(out, cap, &len,
                             json ? "%s{\"permit\":\"%s\",\"where\":\"remote-busy\"}"
                                  : "%s%s:remote-busy",
                             len != 0 ? "," : "", r->own.name);
        }
    }
    if (!json && len == 0) {
        snprintf(out, cap, "-");
    }
    return held;
}

/* A fair resource's place in the fleet's queue (elk_fair_ticket, elk_fair_ahead): its
 * phase ("-" when fair waiting is off), the ticket of this gateway's acquire in progress or
 * last (0: none yet) and the live waiters ahead of it by the last round. */
static const char *fair_fields(const resource_t *r, int64_t *ticket, uint32_t *ahead)
{
    static const char *const phases[] = {"idle", "taking", "queued", "locking"};
    *ticket = 0;
    *ahead = 0;
#if CONFIG_ELK_FAIR
    if (r->fair_on) {
        elk_fair_phase_t ph = elk_fair_phase(&r->fair);
        *ticket = elk_fair_ticket(&r->fair);
        *ahead = elk_fair_ahead(&r->fair);
        return (size_t)ph < sizeof phases / sizeof phases[0] ? phases[ph] : "?";
    }
#else
    (void)phases;
#endif
    (void)r;
    return "-";
}

/* STATUS: "OK STATUS <n>", then the agent, each resource and each node on a line. */
static void send_status_text(agent_t *a, int slot, uint64_t now)
{
    size_t i;
    int32_t ppm = 0;
    char holder[32], addr[300], hyg[256];
    uint64_t uptime_s = (now - a->started_at) / 1000u;
    const char *clock = local_clock_word(a, &ppm); /* before ppm is read */
    elkd__client_send(a, slot, "OK STATUS %zu\n",
                      1 + resources_in_use(a) + semaphores_served(a) + a->fleet.count);
    elkd__client_send(a, slot,
                      "agent gateway=%s pid=%d version=%s uptime_s=%" PRIu64
                      " mode=%s nodes_ready=%zu/%zu quorum=%zu "
                      "shutting_down=%s clients=%zu/%d reloads=%" PRIu32 " reload_failures=%" PRIu32
                      " local_clock=%s local_clock_ppm=%" PRId32 "\n",
                      a->gateway_id, (int)getpid(), ELK_VERSION_STRING, uptime_s,
                      elkfw_mode_name(a->conf.mode), elk_fleet_ready_count(&a->fleet),
                      a->fleet.count, elk_client_quorum(&a->client),
                      a->shutting_down ? "yes" : "no", elkd__clients_connected(a), ELKD_MAX_CLIENTS,
                      a->reloads, a->reload_failures, clock, ppm);
    for (i = 0; i < a->n_res; i++) {
        const resource_t *r = a->res[i];
        int64_t ticket;
        uint32_t ahead;
        const char *fair;
        if (!r->in_use) {
            continue;
        }
        fair = fair_fields(r, &ticket, &ahead);
        elkd__client_send(
            a, slot,
            "resource name=%s state=%s holder=%s token=%" PRIu64 " validity_ms=%" PRIu32
            " ttl_ms=%" PRIu32 " renewals=%" PRIu32 " last_error=%s keepalive_ms=%" PRIu32
            " lock_delay_ms=%" PRIu32 " fair=%s ticket=%" PRId64 " ahead=%" PRIu32 "\n",
            r->conf->name, elk_lock_state_name(elk_lock_state(&r->lock)),
            holder_text(a, r, holder, sizeof holder), elk_lock_token(&r->lock),
            elk_lock_validity(&r->lock, now), r->conf->ttl_ms, elk_lock_renewals(&r->lock),
            elk_lock_last_error(&r->lock) == ELK_OK ? "-"
                                                    : elk_err_name(elk_lock_last_error(&r->lock)),
            res_keepalive(r, now), r->conf->lock_delay_ms, fair, ticket, ahead);
    }
    for (i = 0; i < a->n_res; i++) {
        char holders[1024];
        uint32_t busy, held;
        if (!sem_head(a->res[i])) {
            continue;
        }
        held = sem_holders(a, a->res[i], now, false, holders, sizeof holders, &busy);
        elkd__client_send(a, slot,
                          "semaphore name=%.*s permits=%" PRIu32 " held=%" PRIu32
                          " busy_elsewhere=%" PRIu32 " holders=%s\n",
                          (int)elkfw_permit_sem_len(a->res[i]->own.name), a->res[i]->own.name,
                          a->res[i]->own.permits, held, busy, holders);
    }
    for (i = 0; i < a->fleet.count; i++) {
        const elk_node_stats_t *st = elk_node_stats(&a->nodes[i]);
        node_addr(a, i, addr, sizeof addr);
        node_hygiene_word(a, i, now, hyg, sizeof hyg);
        elkd__client_send(
            a, slot,
            "node name=%s addr=%s state=%s tls=%s rtt_ms=%" PRIu32 " connects=%" PRIu32
            " failures=%" PRIu32 " timeouts=%" PRIu32 " last_error=%s votes=%s%s check=%s\n",
            a->conf.nodes[i].name, addr, elk_node_state_name(elk_node_state(&a->nodes[i])),
            st->tls ? "yes" : "no", st->last_rtt_ms, st->connects, st->failures, st->timeouts,
            st->last_error == ELK_OK ? "-" : elk_err_name(st->last_error),
            elk_client_node_votes(&a->client, i) ? "yes" : "no", hyg,
            elk_client_node_check(&a->client, i));
    }
}

/* STATUS JSON's layout version (docs/control-protocol.md): 2 since absent values are null
 * (holder, last_error); the layout before had no "schema" and wrote "-" or "" for them. */
#define ELKD_STATUS_SCHEMA 2

/* A JSON value for text that may be absent ("-"): null, or the text quoted (it holds no
 * byte that needs escaping: names and error names). */
static const char *json_or_null(const char *text, char *buf, size_t cap)
{
    if (text == NULL || strcmp(text, "-") == 0) {
        return "null";
    }
    snprintf(buf, cap, "\"%s\"", text);
    return buf;
}

void elkd__send_status(agent_t *a, int slot, bool json, uint64_t now)
{
    size_t i;
    bool first = true;
    char holder[32], addr[300], check[ELK_LOCK_CHECK_TEXT_MAX], hyg[256], hq[40], eq[48];
    uint64_t uptime_s = (now - a->started_at) / 1000u;
    int32_t ppm = 0;
    const char *clock = local_clock_word(a, &ppm); /* before ppm is read */
    if (!json) {
        send_status_text(a, slot, now);
        return;
    }
    elkd__client_send(
        a, slot,
        "OK JSON "
        "{\"schema\":%d,\"gateway\":\"%s\",\"pid\":%d,\"version\":\"%s\",\"uptime_s\":%" PRIu64
        ",\"mode\":\"%s\",\"quorum\":%zu,\"nodes_ready\":%zu,"
        "\"shutting_down\":%s,\"clients\":%zu,\"max_clients\":%d,\"reloads\":%" PRIu32
        ",\"reload_failures\":%" PRIu32 ",\"local_clock\":\"%s\",\"local_clock_ppm\":%" PRId32
        ",\"resources\":[",
        ELKD_STATUS_SCHEMA, a->gateway_id, (int)getpid(), ELK_VERSION_STRING, uptime_s,
        elkfw_mode_name(a->conf.mode), elk_client_quorum(&a->client),
        elk_fleet_ready_count(&a->fleet), a->shutting_down ? "true" : "false",
        elkd__clients_connected(a), ELKD_MAX_CLIENTS, a->reloads, a->reload_failures, clock, ppm);
    for (i = 0; i < a->n_res; i++) {
        const resource_t *r = a->res[i];
        int64_t ticket;
        uint32_t ahead;
        const char *fair;
        if (!r->in_use) {
            continue;
        }
        fair = fair_fields(r, &ticket, &ahead);
        elkd__client_send(
            a, slot,
            "%s{\"name\":\"%s\",\"state\":\"%s\",\"holder\":%s,\"token\":%" PRIu64
            ",\"validity_ms\":%" PRIu32 ",\"renewals\":%" PRIu32 ",\"ttl_ms\":%" PRIu32
            ",\"stop_margin_ms\":%" PRIu32 ",\"last_error\":%s,\"keepalive_ms\":%" PRIu32
            ",\"lock_delay_ms\":%" PRIu32 ",\"fair\":\"%s\",\"ticket\":%" PRId64
            ",\"ahead\":%" PRIu32 "}",
            first ? "" : ",", r->conf->name, elk_lock_state_name(elk_lock_state(&r->lock)),
            json_or_null(holder_text(a, r, holder, sizeof holder), hq, sizeof hq),
            elk_lock_token(&r->lock), elk_lock_validity(&r->lock, now), elk_lock_renewals(&r->lock),
            r->conf->ttl_ms, r->conf->stop_margin_ms,
            json_or_null(elk_lock_last_error(&r->lock) == ELK_OK
                             ? "-"
                             : elk_err_name(elk_lock_last_error(&r->lock)),
                         eq, sizeof eq),
            res_keepalive(r, now), r->conf->lock_delay_ms, fair, ticket, ahead);
        first = false;
    }
    elkd__client_send(a, slot, "],\"semaphores\":[");
    first = true;
    for (i = 0; i < a->n_res; i++) {
        char holders[2048];
        uint32_t busy, held;
        if (!sem_head(a->res[i])) {
            continue;
        }
        held = sem_holders(a, a->res[i], now, true, holders, sizeof holders, &busy);
        elkd__client_send(a, slot,
                          "%s{\"name\":\"%.*s\",\"permits\":%" PRIu32 ",\"held\":%" PRIu32
                          ",\"busy_elsewhere\":%" PRIu32 ",\"holders\":[%s]}",
                          first ? "" : ",", (int)elkfw_permit_sem_len(a->res[i]->own.name),
                          a->res[i]->own.name, a->res[i]->own.permits, held, busy, holders);
        first = false;
    }
    elkd__client_send(a, slot, "],\"nodes\":[");
    for (i = 0; i < a->fleet.count; i++) {
        const elk_node_stats_t *st = elk_node_stats(&a->nodes[i]);
        node_addr(a, i, addr, sizeof addr);
        elkd__client_send(
            a, slot,
            "%s{\"name\":\"%s\",\"addr\":\"%s\",\"state\":\"%s\",\"connected\":%s,\"tls\":%s,"
            "\"rtt_ms\":%" PRIu32 ",\"connects\":%" PRIu32 ",\"failures\":%" PRIu32
            ",\"timeouts\":%" PRIu32 ",\"last_error\":%s,\"votes\":%s,\"check\":\"%s\","
            "\"hygiene\":\"%s\",\"quarantined_ms\":%" PRIu64 "}",
            i ? "," : "", a->conf.nodes[i].name, addr,
            elk_node_state_name(elk_node_state(&a->nodes[i])),
            elk_node_is_ready(&a->nodes[i]) ? "true" : "false", st->tls ? "true" : "false",
            st->last_rtt_ms, st->connects, st->failures, st->timeouts,
            json_or_null(st->last_error == ELK_OK ? "-" : elk_err_name(st->last_error), eq,
                         sizeof eq),
            elk_client_node_votes(&a->client, i) ? "true" : "false",
            json_text(elk_client_node_check(&a->client, i), check, sizeof check),
            json_text(elk_client_node_hygiene(&a->client, i), hyg, sizeof hyg),
            quarantine_left(a, i, now));
    }
    elkd__client_send(a, slot, "]}\n");
}

/* ------------------------------------------------------------------ metrics */

/* One exposition's view of the agent: res and nodes are the caller's arrays. */
static void metrics_src(agent_t *a, uint64_t now, elkfw_metrics_src_t *src,
                        elkfw_metrics_res_t *res, elkfw_metrics_node_t *nodes)
{
    size_t i;
    memset(src, 0, sizeof *src);
    src->version = ELK_VERSION_STRING;
    src->gateway = a->gateway_id;
    src->uptime_s = (now - a->started_at) / 1000u;
    src->clients = elkd__clients_connected(a);
    src->nodes_ready = elk_fleet_ready_count(&a->fleet);
    src->quorum = elk_client_quorum(&a->client);
    src->reloads = a->reloads;
    src->reload_failures = a->reload_failures;
    src->client_slots = ELKD_MAX_CLIENTS;
    src->full_refusals = a->full_refusals;
    src->res = res;
    src->nodes = nodes;
    src->local_clock_suspect =
        elk_client_local_clock_suspect(&a->client, &src->local_clock_rate_ppm,
                                       &src->local_clock_spells) == ELK_E_LOCAL_CLOCK;
    for (i = 0; i < a->n_res; i++) {
        if (a->res[i]->in_use) {
            res[src->n_res].name = a->res[i]->conf->name;
            res[src->n_res].held = elk_lock_is_held(&a->res[i]->lock, now);
            res[src->n_res].m = &a->res[i]->metrics;
            src->n_res++;
        }
    }
    for (i = 0; i < a->fleet.count; i++) {
        const elk_node_stats_t *st = elk_node_stats(&a->nodes[i]);
        memset(&nodes[i], 0, sizeof nodes[i]);
        nodes[i].name = a->conf.nodes[i].name;
        nodes[i].ready = elk_node_is_ready(&a->nodes[i]);
        nodes[i].connects = st->connects;
        nodes[i].failures = st->failures;
        nodes[i].timeouts = st->timeouts;
        nodes[i].quarantined = quarantine_left(a, i, now) > 0;
        {
            uint32_t quarantines = 0, clock_jumps = 0;
            nodes[i].hygiene_stats =
                elk_client_node_hygiene_stats(&a->client, i, &quarantines, &clock_jumps) == ELK_OK;
            nodes[i].quarantines = quarantines;
            nodes[i].clock_jumps = clock_jumps;
        }
        nodes[i].m = &a->node_metrics[i];
    }
    src->n_nodes = a->fleet.count;
}

/* STATUS METRICS: "OK METRICS <n>" and n lines. Larger than the back-pressure limit, so
 * the client's queue grows to take it whole (the next request waits until it is sent). */
void elkd__send_metrics(agent_t *a, int slot, uint64_t now)
{
    elkfw_metrics_res_t *res = calloc(a->n_res + 1u, sizeof *res); /* as many as served */
    elkfw_metrics_node_t nodes[CONFIG_ELK_MAX_NODES];
    elkfw_metrics_src_t src;
    char *body = NULL;
    size_t body_len = 0, lines = 0, k;
    FILE *f = NULL;
    bool ok = false;
    if (res != NULL) {
        metrics_src(a, now, &src, res, nodes);
        f = open_memstream(&body, &body_len);
        ok = f != NULL && elkfw_metrics_write(f, &src);
        ok = (f == NULL || fclose(f) == 0) && ok;
    }
    free(res);
    if (!ok) {
        free(body);
        elkd__client_err(a, slot, ELK_E_NO_RESOURCES, "metrics");
        return;
    }
    for (k = 0; k < body_len; k++) {
        lines += body[k] == '\n';
    }
    elkd__client_send(a, slot, "OK METRICS %zu\n", lines);
    elkd__client_write(a, slot, body, body_len);
    free(body);
}

/* [agent] metrics_file: rewritten every metrics_interval. */
void elkd__metrics_step(agent_t *a, uint64_t now, uint64_t *next)
{
    elkfw_metrics_res_t *res;
    elkfw_metrics_node_t nodes[CONFIG_ELK_MAX_NODES];
    elkfw_metrics_src_t src;
    bool ok;
    if (a->conf.agent.metrics_file[0] == '\0') {
        return;
    }
    if (now >= a->metrics_next) {
        res = calloc(a->n_res + 1u, sizeof *res);
        if (res != NULL) {
            metrics_src(a, now, &src, res, nodes);
            ok = elkfw_metrics_write_file(a->conf.agent.metrics_file, &src);
        } else {
            errno = ENOMEM;
            ok = false;
        }
        free(res);
        if (!ok) {
            if (!a->metrics_failed) {
                elkd__log(a, ELK_LOG_WARN,
                          "cannot write metrics_file %s: %s (retrying every %" PRIu32 " ms)",
                          a->conf.agent.metrics_file, strerror(errno),
                          a->conf.agent.metrics_interval_ms);
            }
            a->metrics_failed = true;
        } else {
            a->metrics_failed = false;
        }
        a->metrics_next = now + a->conf.agent.metrics_interval_ms;
    }
    if (a->metrics_next < *next) {
        *next = a->metrics_next;
    }
}
