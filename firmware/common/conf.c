/* SPDX-License-Identifier: MIT */
/* elkd configuration parser: table-driven INI, fixed arrays, one clear message. */
#define _GNU_SOURCE
#include "elkfw/conf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elk/platform.h"
#include "elkfw/preflight.h"
#include "elkfw/suggest.h"

/* ------------------------------------------------------------------ helpers */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Letters, digits and . _ - : / @: what a resource, node or gateway name may hold. */
static bool name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        ch == '.' || ch == '_' || ch == '-' || ch == ':' || ch == '/' || ch == '@';
}

bool elkfw_name_valid(const char *name, size_t len, size_t max)
{
    size_t i;
    if (name == NULL || len == 0 || len > max) {
        return false;
    }
    for (i = 0; i < len; i++) {
        if (!name_char((unsigned char)name[i])) {
            return false;
        }
    }
    return true;
}

size_t elkfw_resource_name_max(const elkfw_conf_t *c)
{
    /* "<prefix>{" + name + "}:released" */
    size_t overhead = strlen(c->key_prefix) + 1u + strlen("}:released");
    size_t max = overhead < CONFIG_ELK_MAX_KEY_LEN ? CONFIG_ELK_MAX_KEY_LEN - overhead : 0u;
    return max < ELKFW_NAME_MAX - 1u ? max : ELKFW_NAME_MAX - 1u;
}

/* The unit after a duration's digits (len bytes, maybe none): its multiplier to ms. */
static bool duration_unit(const char *u, size_t len, uint64_t *mult)
{
    if (len == 0 || (len == 2 && memcmp(u, "ms", 2) == 0)) {
        *mult = 1;
    } else if (len == 1 && u[0] == 's') {
        *mult = 1000;
    } else if (len == 1 && u[0] == 'm') {
        *mult = 60000;
    } else if (len == 1 && u[0] == 'h') {
        *mult = 3600000;
    } else {
        return false;
    }
    return true;
}

bool elkfw_parse_duration(const char *s, size_t len, uint32_t *ms)
{
    uint64_t v = 0, mult;
    size_t i = 0;
    if (s == NULL || len == 0) {
        return false;
    }
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        v = v * 10u + (uint64_t)(s[i] - '0');
        if (v > UINT32_MAX) {
            return false;
        }
        i++;
    }
    if (i == 0 || !duration_unit(s + i, len - i, &mult)) {
        return false;
    }
    if (v * mult > UINT32_MAX) {
        return false;
    }
    *ms = (uint32_t)(v * mult);
    return true;
}

/* Digits s[from..to) into *v (added to its value): false on any other byte or on more than
 * max_digits digits; *n gets the count. */
static bool digits_to_end(const char *s, size_t from, size_t to, int max_digits, uint64_t *v,
                          int *n)
{
    size_t i;
    *n = 0;
    for (i = from; i < to; i++) {
        if (s[i] < '0' || s[i] > '9' || ++*n > max_digits) {
            return false;
        }
        *v = *v * 10u + (uint64_t)(s[i] - '0');
    }
    return true;
}

/* "33%": 1 to 99 percent. */
static bool parse_percent(const char *s, size_t len, uint32_t *ppm)
{
    uint64_t num = 0;
    int digits;
    if (!digits_to_end(s, 0, len - 1, 3, &num, &digits) || digits == 0 || num == 0 || num >= 100) {
        return false;
    }
    *ppm = (uint32_t)(num * 10000u);
    return true;
}

/* "1/3": num (already read) over the digits after the slash at s[slash]. */
static bool parse_ratio(const char *s, size_t slash, size_t len, uint64_t num, uint32_t *ppm)
{
    uint64_t d = 0;
    int ddigits;
    if (!digits_to_end(s, slash + 1, len, 6, &d, &ddigits) || ddigits == 0 || d == 0 || num == 0 ||
        num >= d) {
        return false;
    }
    *ppm = (uint32_t)(num * 1000000u / d);
    return *ppm > 0;
}

/* "0.33", ".5": the digits after the point at s[dot]. */
static bool parse_decimal(const char *s, size_t dot, size_t len, uint32_t *ppm)
{
    uint64_t num = 0, den = 1;
    int frac_digits, k;
    if (!digits_to_end(s, dot + 1, len, 6, &num, &frac_digits) || frac_digits == 0 || num == 0) {
        return false;
    }
    for (k = 0; k < frac_digits; k++) {
        den *= 10u;
    }
    *ppm = (uint32_t)(num * 1000000u / den);
    return *ppm > 0;
}

/* "0.33", ".5", "33%", "1/3" -> parts per million in (0, 1e6). */
static bool parse_fraction(const char *s, size_t len, uint32_t *ppm)
{
    uint64_t num = 0;
    size_t i;
    int digits = 0;
    if (len == 0) {
        return false;
    }
    if (s[len - 1] == '%') {
        return parse_percent(s, len, ppm);
    }
    for (i = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (++digits > 6) {
            return false;
        }
        num = num * 10u + (uint64_t)(s[i] - '0');
    }
    if (i < len && s[i] == '/') {
        return digits != 0 && parse_ratio(s, i, len, num, ppm);
    }
    if (i < len && s[i] == '.') {
        return num == 0 && parse_decimal(s, i, len, ppm); /* "1.5" is not below 1 */
    }
    return false;
}

static int parse_bool(const char *s, size_t len)
{
    static const char *const yes[] = {"on", "yes", "true", "1"};
    static const char *const no[] = {"off", "no", "false", "0"};
    size_t i;
    for (i = 0; i < 4; i++) {
        if (strlen(yes[i]) == len && strncasecmp(s, yes[i], len) == 0) {
            return 1;
        }
        if (strlen(no[i]) == len && strncasecmp(s, no[i], len) == 0) {
            return 0;
        }
    }
    return -1;
}

static bool parse_u32(const char *s, size_t len, uint32_t *out)
{
    uint64_t v = 0;
    size_t i;
    if (len == 0 || len > 10) {
        return false;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10u + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Quote a value for a message: at most 40 bytes, unprintable bytes as '?'. */
static void quote_value(char *out, size_t cap, const char *s, size_t len)
{
    size_t i, n = len > 40 ? 40 : len, o = 0;
    for (i = 0; i < n && o + 1 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[o++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (len > n && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o < cap ? o : cap - 1] = '\0';
}

const char *elkfw_mode_name(elkfw_mode_t m)
{
    return m == ELKFW_MODE_REDLOCK ? "redlock" : "single";
}

/* ------------------------------------------------------------------ key tables */

enum key_type {
    K_STR,
    K_DUR,
    K_BOOL,
    K_TRI,
    K_U32,
    K_PORT,
    K_ENUM,
    K_FRAC,
    K_NAME_ID,
    K_OCTAL,
    K_IDLIST
};

typedef struct keydef {
    const char *name;
    enum key_type type;
    size_t offset;
    size_t size;                /* K_STR: buffer size */
    const char *const *choices; /* K_ENUM: NULL-terminated; index stored as int */
    uint32_t min, max;          /* K_U32 / K_DUR bounds */
} keydef_t;

/* Host names (letters, digits, '.', '-', '_'), IPv4, and IPv6 with an optional zone
 * ("fe80::1%eth0"). Anything else cannot resolve, so elkd would retry it forever. */
static bool host_valid(const char *v, size_t len)
{
    size_t i;
    if (len == 0) {
        return false;
    }
    for (i = 0; i < len; i++) {
        char ch = v[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '-' || ch == '_' || ch == ':' || ch == '%')) {
            return false;
        }
    }
    return true;
}

/* The prefix goes in front of "{<resource>}": a brace would move the hash tag, and a
 * space or control byte cannot appear in a key anyone could type. */
static bool prefix_valid(const char *v, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch <= 0x20 || ch == 0x7f || ch == '{' || ch == '}') {
            return false;
        }
    }
    return true;
}

/* "name, 1000,other": names or ids of users or groups, commas and spaces between. Names
 * as useradd takes them; whether each exists is elkfw_access_resolve's business. */
static bool idlist_valid(const char *v, size_t len)
{
    size_t i;
    bool any = false;
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch == ',' || ch == ' ') {
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-')) {
            return false;
        }
        any = true;
    }
    return any;
}

static const char *const mode_choices[] = {"single", "redlock", NULL};
static const char *const log_choices[] = {"stderr", "syslog", NULL};
static const char *const level_choices[] = {"error", "warn", "info", "debug", NULL};
static const char *const safety_choices[] = {"warn", "refuse", "off", NULL};

#define FLEET(f) offsetof(elkfw_conf_t, f)
#define NODE(f) offsetof(elkfw_node_conf_t, f)
#define RES(f) offsetof(elkfw_resource_conf_t, f)
#define AGENT(f) offsetof(elkfw_agent_conf_t, f)
#define SZ(t, f) sizeof(((t *)0)->f)

static const keydef_t fleet_keys[] = {
    {"mode", K_ENUM, FLEET(mode), 0, mode_choices, 0, 0},
    {"gateway_id", K_NAME_ID, FLEET(gateway_id), SZ(elkfw_conf_t, gateway_id), NULL, 0, 0},
    {"key_prefix", K_STR, FLEET(key_prefix), SZ(elkfw_conf_t, key_prefix), NULL, 0, 0},
    {"tls", K_TRI, FLEET(tls.on), 0, NULL, 0, 0},
    {"ca", K_STR, FLEET(tls.ca), SZ(elkfw_conf_t, tls.ca), NULL, 0, 0},
    {"cert", K_STR, FLEET(tls.cert), SZ(elkfw_conf_t, tls.cert), NULL, 0, 0},
    {"key", K_STR, FLEET(tls.key), SZ(elkfw_conf_t, tls.key), NULL, 0, 0},
    {"connect_timeout", K_DUR, FLEET(connect_timeout_ms), 0, NULL, 1, 600000},
    {"request_timeout", K_DUR, FLEET(request_timeout_ms), 0, NULL, 1, 600000},
    {"drift_factor", K_FRAC, FLEET(drift_factor_ppm), 0, NULL, 0, 0},
    {"drift_fixed", K_DUR, FLEET(drift_fixed_ms), 0, NULL, 0, 10000},
    {"vote_hygiene", K_BOOL, FLEET(vote_hygiene), 0, NULL, 0, 0},
    {"quarantine", K_DUR, FLEET(quarantine_ms), 0, NULL, 0, 86400000},
};

static const keydef_t node_keys[] = {
    {"host", K_STR, NODE(host), SZ(elkfw_node_conf_t, host), NULL, 0, 0},
    {"port", K_PORT, NODE(port), 0, NULL, 1, 65535},
    {"tls", K_TRI, NODE(tls.on), 0, NULL, 0, 0},
    {"ca", K_STR, NODE(tls.ca), SZ(elkfw_node_conf_t, tls.ca), NULL, 0, 0},
    {"cert", K_STR, NODE(tls.cert), SZ(elkfw_node_conf_t, tls.cert), NULL, 0, 0},
    {"key", K_STR, NODE(tls.key), SZ(elkfw_node_conf_t, tls.key), NULL, 0, 0},
    {"sni", K_STR, NODE(server_name), SZ(elkfw_node_conf_t, server_name), NULL, 0, 0},
    {"server_name", K_STR, NODE(server_name), SZ(elkfw_node_conf_t, server_name), NULL, 0, 0},
    {"user", K_STR, NODE(user), SZ(elkfw_node_conf_t, user), NULL, 0, 0},
    {"password", K_STR, NODE(password), SZ(elkfw_node_conf_t, password), NULL, 0, 0},
    {"password_file", K_STR, NODE(password_file), SZ(elkfw_node_conf_t, password_file), NULL, 0, 0},
    {"db", K_U32, NODE(db), 0, NULL, 0, 65535},
    {"connect_timeout", K_DUR, NODE(connect_timeout_ms), 0, NULL, 1, 600000},
    {"request_timeout", K_DUR, NODE(request_timeout_ms), 0, NULL, 1, 600000},
};

static const keydef_t resource_keys[] = {
    {"ttl", K_DUR, RES(ttl_ms), 0, NULL, 100, 86400000},
    {"renew_fraction", K_FRAC, RES(renew_fraction_ppm), 0, NULL, 0, 0},
    {"stop_margin", K_DUR, RES(stop_margin_ms), 0, NULL, 0, 86400000},
    {"min_validity", K_DUR, RES(min_validity_ms), 0, NULL, 0, 86400000},
    {"max_hold", K_DUR, RES(max_hold_ms), 0, NULL, 0, UINT32_MAX},
    {"max_renewals", K_U32, RES(max_renewals), 0, NULL, 0, UINT32_MAX},
    {"fencing", K_BOOL, RES(fencing), 0, NULL, 0, 0},
    {"wait_min", K_DUR, RES(wait_min_ms), 0, NULL, 1, 600000},
    {"wait_max", K_DUR, RES(wait_max_ms), 0, NULL, 1, 600000},
    {"release_channel", K_BOOL, RES(release_channel), 0, NULL, 0, 0},
    {"lock_delay", K_DUR, RES(lock_delay_ms), 0, NULL, 0, 86400000},
    {"keepalive", K_DUR, RES(keepalive_ms), 0, NULL, 0, 86400000},
    {"allow_users", K_IDLIST, RES(allow_users), SZ(elkfw_resource_conf_t, allow_users), NULL, 0, 0},
    {"allow_groups", K_IDLIST, RES(allow_groups), SZ(elkfw_resource_conf_t, allow_groups), NULL, 0,
     0},
};

static const keydef_t agent_keys[] = {
    {"socket", K_STR, AGENT(socket_path), SZ(elkfw_agent_conf_t, socket_path), NULL, 0, 0},
    {"log", K_ENUM, AGENT(log_target), 0, log_choices, 0, 0},
    {"log_level", K_ENUM, AGENT(log_level), 0, level_choices, 0, 0},
    {"safety_check", K_ENUM, AGENT(safety_check), 0, safety_choices, 0, 0},
    {"socket_mode", K_OCTAL, AGENT(socket_mode), 0, NULL, 0, 0777},
    {"socket_group", K_IDLIST, AGENT(socket_group), SZ(elkfw_agent_conf_t, socket_group), NULL, 0,
     0},
    {"max_clients_per_uid", K_U32, AGENT(max_clients_per_uid), 0, NULL, 1, 1024},
    {"log_summary", K_DUR, AGENT(log_summary_ms), 0, NULL, 1000, 86400000},
    {"metrics_file", K_STR, AGENT(metrics_file), SZ(elkfw_agent_conf_t, metrics_file), NULL, 0, 0},
    {"metrics_interval", K_DUR, AGENT(metrics_interval_ms), 0, NULL, 1000, 86400000},
    {"events_file", K_STR, AGENT(events_file), SZ(elkfw_agent_conf_t, events_file), NULL, 0, 0},
    {"events_max", K_U32, AGENT(events_max), 0, NULL, 16, 1048576},
    {"client_stall_timeout", K_DUR, AGENT(client_stall_timeout_ms), 0, NULL, 100, 3600000},
    {"client_idle_timeout", K_DUR, AGENT(client_idle_timeout_ms), 0, NULL, 0, 86400000},
};

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

/* ------------------------------------------------------------------ parser */

enum section_kind { SEC_NONE, SEC_FLEET, SEC_NODE, SEC_RESOURCE, SEC_AGENT };

typedef struct parser {
    elkfw_conf_t *c;
    const char *file;
    char *err;
    size_t errlen;
    int line;
    enum section_kind kind;
    void *obj; /* struct the current section's keys write into */
    const keydef_t *keys;
    size_t n_keys;
    char section[ELKFW_NAME_MAX + 16]; /* "[resource valve-1]" for messages */
    uint32_t seen;                     /* keys of the current section already set */
    int seen_line[32];
    bool fleet_seen, agent_seen;
    int fleet_line, agent_line;
    int errors;        /* problems found so far: each is one line of err */
    size_t used;       /* bytes of err written */
    bool skip_section; /* its header was wrong: its keys are not read (nor blamed) */
} parser_t;

/* One problem, as one more line of p->err ("file:line: text"): the parser goes on, so one
 * run (elkd --check) names every problem of the file. Returns ELK_E_CONFIG. */
static int fail(parser_t *p, int line, const char *fmt, ...)
{
    va_list ap;
    size_t n = p->used;
    int w;
    p->errors++;
    if (p->errlen == 0 || n + 1 >= p->errlen) {
        return ELK_E_CONFIG;
    }
    if (n != 0) {
        p->err[n++] = '\n';
    }
    if (line > 0) {
        w = snprintf(p->err + n, p->errlen - n, "%s:%d: ", p->file, line);
    } else {
        w = snprintf(p->err + n, p->errlen - n, "%s: ", p->file);
    }
    n += w > 0 ? (size_t)w : 0u;
    if (n < p->errlen) {
        va_start(ap, fmt);
        w = vsnprintf(p->err + n, p->errlen - n, fmt, ap);
        va_end(ap);
        n += w > 0 ? (size_t)w : 0u;
    }
    p->used = n < p->errlen ? n : p->errlen - 1;
    return ELK_E_CONFIG;
}

void elkfw_conf_defaults(elkfw_conf_t *c)
{
    memset(c, 0, sizeof *c);
    c->mode = ELKFW_MODE_SINGLE;
    strcpy(c->key_prefix, "elk:");
    c->tls.on = 0;
    c->connect_timeout_ms = 2000;
    c->request_timeout_ms = 1000;
    c->drift_factor_ppm = CONFIG_ELK_DRIFT_FACTOR_PPM;
    c->drift_fixed_ms = CONFIG_ELK_DRIFT_FIXED_MS;
    c->vote_hygiene = true;
    c->quarantine_ms = 0;
    strcpy(c->agent.socket_path, "/run/elkd/elkd.sock");
    c->agent.socket_mode = 0660;
    c->agent.log_target = ELKFW_LOG_STDERR;
    c->agent.log_level = ELK_LOG_INFO;
    c->agent.safety_check = ELKFW_SAFETY_WARN;
    c->agent.log_summary_ms = 60000;
    c->agent.metrics_interval_ms = 15000;
    c->agent.events_max = 2048; /* 1 MiB of 512-byte records */
    c->agent.client_stall_timeout_ms = 10000;
    c->agent.client_idle_timeout_ms = 60000;
}

static void resource_defaults(elkfw_resource_conf_t *r)
{
    memset(r, 0, sizeof *r);
    r->ttl_ms = CONFIG_ELK_DEFAULT_TTL_MS;
    r->renew_fraction_ppm = (uint32_t)CONFIG_ELK_RENEW_FRACTION_PCT * 10000u;
    r->stop_margin_ms = 500;
    r->min_validity_ms = 0; /* filled in the check: a fifth of the ttl unless set */
    r->fencing = true;
    r->max_hold_ms = CONFIG_ELK_DEFAULT_MAX_HOLD_MS;
    r->wait_min_ms = 50;
    r->wait_max_ms = 200;
    r->release_channel = false;
}

static void node_defaults(elkfw_node_conf_t *n)
{
    memset(n, 0, sizeof *n);
    n->port = 6379;
    n->tls.on = -1;
}

/* [fleet] or [agent]: one of each, keys written into obj. */
static int open_single(parser_t *p, enum section_kind kind, const char *label, bool *seen,
                       int *first_line, void *obj, const keydef_t *keys, size_t n_keys)
{
    if (*seen) {
        return fail(p, p->line, "section %s appears twice (first on line %d)", label, *first_line);
    }
    *seen = true;
    *first_line = p->line;
    p->kind = kind;
    p->obj = obj;
    p->keys = keys;
    p->n_keys = n_keys;
    snprintf(p->section, sizeof p->section, "%s", label);
    return ELK_OK;
}

/* The line of the section already named name (in the names at base, stride bytes apart,
 * each followed at line_off by its line), or 0. */
static int named_line(const void *base, size_t n, size_t stride, size_t line_off, const char *name,
                      size_t len)
{
    size_t i;
    for (i = 0; i < n; i++) {
        const char *other = (const char *)base + i * stride;
        if (strlen(other) == len && memcmp(other, name, len) == 0) {
            int line;
            memcpy(&line, other + line_off, sizeof line);
            return line;
        }
    }
    return 0;
}

/* Keys from here on go into obj (section "[kind name]" in messages). */
static void enter_named(parser_t *p, void *obj, const keydef_t *keys, size_t n_keys,
                        const char *kind, const char *name)
{
    p->obj = obj;
    p->keys = keys;
    p->n_keys = n_keys;
    snprintf(p->section, sizeof p->section, "[%s %s]", kind, name);
}

/* [node NAME]: q is the name quoted for messages. */
static int open_node(parser_t *p, const char *name, size_t name_len, const char *q)
{
    elkfw_node_conf_t *n;
    int first;
    if (!elkfw_name_valid(name, name_len, ELKFW_NAME_MAX - 1)) {
        return fail(p, p->line,
                    "node name '%s' is not valid (1-%d bytes of letters, digits and . _ - : / @)",
                    q, ELKFW_NAME_MAX - 1);
    }
    first = named_line(p->c->nodes, p->c->n_nodes, sizeof p->c->nodes[0],
                       offsetof(elkfw_node_conf_t, line) - offsetof(elkfw_node_conf_t, name), name,
                       name_len);
    if (first != 0) {
        return fail(p, p->line, "section [node %s] appears twice (first on line %d)", q, first);
    }
    if (p->c->n_nodes >= CONFIG_ELK_MAX_NODES) {
        return fail(p, p->line, "too many nodes: this build allows %d (CONFIG_ELK_MAX_NODES)",
                    CONFIG_ELK_MAX_NODES);
    }
    n = &p->c->nodes[p->c->n_nodes++];
    node_defaults(n);
    memcpy(n->name, name, name_len);
    n->line = p->line;
    enter_named(p, n, node_keys, NKEYS(node_keys), "node", n->name);
    return ELK_OK;
}

/* [resource NAME]: q is the name quoted for messages. */
static int open_resource(parser_t *p, const char *name, size_t name_len, const char *q)
{
    elkfw_resource_conf_t *r;
    size_t max = elkfw_resource_name_max(p->c);
    int first;
    if (!elkfw_name_valid(name, name_len, max)) {
        return fail(
            p, p->line,
            "resource name '%s' is not valid (1-%zu bytes of letters, digits and . _ - : / @; "
            "the limit follows from CONFIG_ELK_MAX_KEY_LEN and key_prefix)",
            q, max);
    }
    first =
        named_line(p->c->resources, p->c->n_resources, sizeof p->c->resources[0],
                   offsetof(elkfw_resource_conf_t, line) - offsetof(elkfw_resource_conf_t, name),
                   name, name_len);
    if (first != 0) {
        return fail(p, p->line, "section [resource %s] appears twice (first on line %d)", q, first);
    }
    if (p->c->n_resources >= ELKFW_MAX_RESOURCES) {
        return fail(p, p->line, "too many resources: at most %d", ELKFW_MAX_RESOURCES);
    }
    r = &p->c->resources[p->c->n_resources++];
    resource_defaults(r);
    memcpy(r->name, name, name_len);
    r->line = p->line;
    enter_named(p, r, resource_keys, NKEYS(resource_keys), "resource", r->name);
    return ELK_OK;
}

/* "node NAME" / "node.NAME", "resource NAME" / "resource.NAME": the kind, and the length
 * of what follows the separator in *name_len; SEC_NONE for anything else. */
static enum section_kind named_kind(const char *s, size_t len, size_t *name_len)
{
    if (len > 5 && memcmp(s, "node", 4) == 0 && (s[4] == ' ' || s[4] == '.')) {
        *name_len = len - 5;
        return SEC_NODE;
    }
    if (len > 9 && memcmp(s, "resource", 8) == 0 && (s[8] == ' ' || s[8] == '.')) {
        *name_len = len - 9;
        return SEC_RESOURCE;
    }
    return SEC_NONE;
}

static int open_section(parser_t *p, const char *s, size_t len)
{
    const char *name;
    size_t name_len;
    char q[64];

    /* "[node a]", "[node.a]", "[resource valve-1]": kind, then a name after one
     * space (or, for the dotted form, one dot). */
    if (len == 5 && memcmp(s, "fleet", 5) == 0) {
        return open_single(p, SEC_FLEET, "[fleet]", &p->fleet_seen, &p->fleet_line, p->c,
                           fleet_keys, NKEYS(fleet_keys));
    }
    if (len == 5 && memcmp(s, "agent", 5) == 0) {
        return open_single(p, SEC_AGENT, "[agent]", &p->agent_seen, &p->agent_line, &p->c->agent,
                           agent_keys, NKEYS(agent_keys));
    }
    p->kind = named_kind(s, len, &name_len);
    if (p->kind == SEC_NONE) {
        quote_value(q, sizeof q, s, len);
        return fail(
            p, p->line,
            "unknown section [%s] (expected [fleet], [node NAME], [resource NAME] or [agent])", q);
    }
    name = s + (len - name_len);
    while (name_len > 0 && is_space(name[0])) {
        name++;
        name_len--;
    }
    quote_value(q, sizeof q, name, name_len);
    return p->kind == SEC_NODE ? open_node(p, name, name_len, q)
                               : open_resource(p, name, name_len, q);
}

/* Remember the line of the keys that whole-file checks and later lookups name. */
static void note_key_line(parser_t *p, const char *name)
{
    static const struct {
        enum section_kind kind;
        const char *name;
        size_t offset;
    } lines[] = {
        {SEC_RESOURCE, "ttl", offsetof(elkfw_resource_conf_t, ttl_line)},
        {SEC_RESOURCE, "stop_margin", offsetof(elkfw_resource_conf_t, stop_margin_line)},
        {SEC_RESOURCE, "min_validity", offsetof(elkfw_resource_conf_t, min_validity_line)},
        {SEC_RESOURCE, "max_hold", offsetof(elkfw_resource_conf_t, max_hold_line)},
        {SEC_FLEET, "vote_hygiene", offsetof(elkfw_conf_t, vote_hygiene_line)},
        {SEC_RESOURCE, "allow_users", offsetof(elkfw_resource_conf_t, allow_users_line)},
        {SEC_RESOURCE, "allow_groups", offsetof(elkfw_resource_conf_t, allow_groups_line)},
        {SEC_NODE, "password_file", offsetof(elkfw_node_conf_t, password_file_line)},
        {SEC_AGENT, "socket_group", offsetof(elkfw_agent_conf_t, socket_group_line)},
    };
    size_t i;
    for (i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        if (lines[i].kind == p->kind && strcmp(lines[i].name, name) == 0) {
            memcpy((uint8_t *)p->obj + lines[i].offset, &p->line, sizeof p->line);
        }
    }
}

/* "0660": up to four octal digits, at most max. */
static bool parse_octal(const char *v, size_t vlen, uint32_t max, uint32_t *out)
{
    uint32_t u = 0;
    size_t k;
    if (vlen == 0 || vlen > 4) {
        return false;
    }
    for (k = 0; k < vlen; k++) {
        if (v[k] < '0' || v[k] > '7') {
            return false;
        }
        u = u * 8u + (uint32_t)(v[k] - '0');
    }
    *out = u;
    return u <= max;
}

/* One "key = value" line being applied: the key's definition, the raw value, both quoted
 * for messages, and where the value goes. */
typedef struct key_value {
    const keydef_t *kd;
    const char *kq, *vq; /* key and value, quoted */
    const char *v;
    size_t vlen;
    uint8_t *dst;
} key_value_t;

/* What a string value must look like beyond its length, by key type and key. */
static int check_str_value(parser_t *p, const key_value_t *kv)
{
    const keydef_t *kd = kv->kd;
    if (kd->type == K_IDLIST && !idlist_valid(kv->v, kv->vlen)) {
        return fail(
            p, p->line,
            "key '%s' in %s: '%s' is not a comma-separated list of user or group names or numeric "
            "ids (letters, digits and . _ -)",
            kv->kq, p->section, kv->vq);
    }
    if (kd->type == K_NAME_ID && !elkfw_name_valid(kv->v, kv->vlen, kd->size - 1)) {
        return fail(p, p->line,
                    "key '%s' in %s: '%s' is not a valid id (letters, digits and . _ - : / @)",
                    kv->kq, p->section, kv->vq);
    }
    if (p->kind == SEC_FLEET && strcmp(kd->name, "key_prefix") == 0 &&
        !prefix_valid(kv->v, kv->vlen)) {
        return fail(
            p, p->line,
            "key '%s' in %s: '%s' must not contain braces, spaces or control bytes (the key is "
            "<prefix>{<resource>})",
            kv->kq, p->section, kv->vq);
    }
    if (p->kind == SEC_NODE && strcmp(kd->name, "host") == 0 && !host_valid(kv->v, kv->vlen)) {
        /* caught here, or elkd would retry the name lookup forever */
        return fail(
            p, p->line,
            "key '%s' in %s: '%s' is not a host name or numeric address (letters, digits and "
            ". - _ : %%; no spaces or control bytes)",
            kv->kq, p->section, kv->vq);
    }
    return ELK_OK;
}

/* K_STR, K_NAME_ID, K_IDLIST: a NUL-terminated copy into a buffer of kd->size bytes. */
static int set_str(parser_t *p, const key_value_t *kv)
{
    int rc;
    if (kv->vlen >= kv->kd->size) {
        return fail(p, p->line, "key '%s' in %s: value is %zu bytes long; at most %zu allowed",
                    kv->kq, p->section, kv->vlen, kv->kd->size - 1);
    }
    rc = check_str_value(p, kv);
    if (rc != ELK_OK) {
        return rc;
    }
    memcpy(kv->dst, kv->v, kv->vlen);
    kv->dst[kv->vlen] = '\0';
    return ELK_OK;
}

static int set_octal(parser_t *p, const key_value_t *kv)
{
    uint32_t u = 0;
    if (!parse_octal(kv->v, kv->vlen, kv->kd->max, &u)) {
        return fail(p, p->line,
                    "key '%s' in %s: '%s' is not an octal mode from 0 to 0777 (e.g. 0660)", kv->kq,
                    p->section, kv->vq);
    }
    memcpy(kv->dst, &u, sizeof u);
    return ELK_OK;
}

static int set_duration(parser_t *p, const key_value_t *kv)
{
    uint32_t ms;
    if (!elkfw_parse_duration(kv->v, kv->vlen, &ms)) {
        return fail(p, p->line, "key '%s' in %s: '%s' is not a duration (use e.g. 500ms or 10s)",
                    kv->kq, p->section, kv->vq);
    }
    if (ms < kv->kd->min || ms > kv->kd->max) {
        return fail(p, p->line, "key '%s' in %s: %s is out of range (%lums to %lums)", kv->kq,
                    p->section, kv->vq, (unsigned long)kv->kd->min, (unsigned long)kv->kd->max);
    }
    memcpy(kv->dst, &ms, sizeof ms);
    return ELK_OK;
}

/* K_U32 (stored as uint32_t) and K_PORT (uint16_t). */
static int set_number(parser_t *p, const key_value_t *kv)
{
    uint32_t u;
    if (!parse_u32(kv->v, kv->vlen, &u) || u < kv->kd->min || u > kv->kd->max) {
        return fail(p, p->line, "key '%s' in %s: '%s' is not a whole number from %lu to %lu",
                    kv->kq, p->section, kv->vq, (unsigned long)kv->kd->min,
                    (unsigned long)kv->kd->max);
    }
    if (kv->kd->type == K_PORT) {
        uint16_t port = (uint16_t)u;
        memcpy(kv->dst, &port, sizeof port);
    } else {
        memcpy(kv->dst, &u, sizeof u);
    }
    return ELK_OK;
}

/* K_BOOL (stored as bool) and K_TRI (int: 0 or 1; -1 "unset" is only a default). */
static int set_switch(parser_t *p, const key_value_t *kv)
{
    int b = parse_bool(kv->v, kv->vlen);
    if (b < 0) {
        return fail(p, p->line,
                    "key '%s' in %s: '%s' is not on or off (use on/off, yes/no, true/false, 1/0)",
                    kv->kq, p->section, kv->vq);
    }
    if (kv->kd->type == K_BOOL) {
        bool bv = b == 1;
        memcpy(kv->dst, &bv, sizeof bv);
    } else {
        memcpy(kv->dst, &b, sizeof b);
    }
    return ELK_OK;
}

/* "a, b, c": the choices of an enum key, for its message. */
static void choices_list(const char *const *choices, char *list, size_t cap)
{
    size_t o = 0;
    int idx;
    list[0] = '\0';
    for (idx = 0; choices[idx] != NULL && o < cap; idx++) {
        int w = snprintf(list + o, cap - o, "%s%s", idx ? ", " : "", choices[idx]);
        o += w > 0 ? (size_t)w : 0;
    }
}

/* K_ENUM: the index of the choice (log levels: the ELK_LOG_ value), stored as int. */
static int set_enum(parser_t *p, const key_value_t *kv)
{
    const char *const *choices = kv->kd->choices;
    char list[96];
    int idx;
    for (idx = 0; choices[idx] != NULL; idx++) {
        if (strlen(choices[idx]) == kv->vlen && memcmp(choices[idx], kv->v, kv->vlen) == 0) {
            int val = idx;
            if (choices == level_choices) {
                val = idx + ELK_LOG_ERROR; /* error=1 ... debug=4, as in platform.h */
            }
            memcpy(kv->dst, &val, sizeof val);
            return ELK_OK;
        }
    }
    choices_list(choices, list, sizeof list);
    return fail(p, p->line, "key '%s' in %s: '%s' is not one of: %s", kv->kq, p->section, kv->vq,
                list);
}

static int set_fraction(parser_t *p, const key_value_t *kv)
{
    uint32_t ppm;
    if (!parse_fraction(kv->v, kv->vlen, &ppm)) {
        return fail(
            p, p->line,
            "key '%s' in %s: '%s' is not a fraction between 0 and 1 (use e.g. 0.33, 33%% or 1/3)",
            kv->kq, p->section, kv->vq);
    }
    memcpy(kv->dst, &ppm, sizeof ppm);
    return ELK_OK;
}

/* The value setter of each key type. */
static int (*const key_setters[])(parser_t *p, const key_value_t *kv) = {
    [K_STR] = set_str,     [K_DUR] = set_duration, [K_BOOL] = set_switch, [K_TRI] = set_switch,
    [K_U32] = set_number,  [K_PORT] = set_number,  [K_ENUM] = set_enum,   [K_FRAC] = set_fraction,
    [K_NAME_ID] = set_str, [K_OCTAL] = set_octal,  [K_IDLIST] = set_str,
};

/* The index of key k in the current section's table, or -1. */
static int find_key(const parser_t *p, const char *k, size_t klen)
{
    size_t i;
    for (i = 0; i < p->n_keys; i++) {
        if (strlen(p->keys[i].name) == klen && memcmp(p->keys[i].name, k, klen) == 0) {
            return (int)i;
        }
    }
    return -1;
}

/* A key this section does not have: said with the closest one it has, if it looks like a
 * slip. */
static int unknown_key(parser_t *p, const char *k, size_t klen, const char *kq)
{
    const char *names[32];
    const char *guess;
    size_t i, n = p->n_keys < 32 ? p->n_keys : 32;
    for (i = 0; i < n; i++) {
        names[i] = p->keys[i].name;
    }
    guess = elkfw_suggest(k, klen, names, n);
    if (guess != NULL) {
        return fail(p, p->line, "unknown key '%s' in %s (did you mean '%s'? see elkd.conf(5))", kq,
                    p->section, guess);
    }
    return fail(p, p->line, "unknown key '%s' in %s (the keys of each section: elkd.conf(5))", kq,
                p->section);
}

static int set_key(parser_t *p, const char *k, size_t klen, const char *v, size_t vlen)
{
    key_value_t kv;
    char kq[48], vq[64];
    int i;

    quote_value(kq, sizeof kq, k, klen);
    if (p->kind == SEC_NONE) {
        return fail(p, p->line,
                    "key '%s' outside any section (start with [fleet], [node NAME], ...)", kq);
    }
    i = find_key(p, k, klen);
    if (i < 0) {
        return unknown_key(p, k, klen, kq);
    }
    if (p->seen & (1u << i)) {
        return fail(p, p->line, "key '%s' in %s is set twice (first on line %d)", kq, p->section,
                    p->seen_line[i]);
    }
    p->seen |= 1u << i;
    p->seen_line[i] = p->line;
    note_key_line(p, p->keys[i].name);
    quote_value(vq, sizeof vq, v, vlen);
    kv.kd = &p->keys[i];
    kv.kq = kq;
    kv.vq = vq;
    kv.v = v;
    kv.vlen = vlen;
    kv.dst = (uint8_t *)p->obj + kv.kd->offset;
    if ((size_t)kv.kd->type < NKEYS(key_setters) && key_setters[kv.kd->type] != NULL) {
        return key_setters[kv.kd->type](p, &kv);
    }
    return fail(p, p->line, "internal error on key '%s'", kq);
}

/* Whole-file checks that no single line can make. */

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
        return fail(
            p, line,
            "%s%s%s[resource %s]: ttl %lums leaves no validity: drift %llums + stop_margin %lums + "
            "min_validity %lums must be below it",
            key ? "key '" : "", key ? key : "", key ? "' in " : "", r->name,
            (unsigned long)r->ttl_ms, (unsigned long long)drift, (unsigned long)r->stop_margin_ms,
            (unsigned long)r->min_validity_ms);
    }
    if (fault == ELK_LOCK_CFG_RENEW_AFTER_DEADLINE) {
        return fail(p, r->line,
                    "[resource %s]: renew_fraction makes renewal start after the local deadline "
                    "(%llums); lower it",
                    r->name, (unsigned long long)(r->ttl_ms - drift - r->stop_margin_ms));
    }
    if (fault == ELK_LOCK_CFG_WAIT_RANGE) {
        return fail(p, r->line, "[resource %s]: wait_min %lums is above wait_max %lums", r->name,
                    (unsigned long)r->wait_min_ms, (unsigned long)r->wait_max_ms);
    }
    return fail(p, r->line, "[resource %s]: ttl or renew_fraction out of range", r->name);
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
        return fail(p, 0, "no [node NAME] section: the fleet needs at least one Redis node");
    }
    if (c->mode == ELKFW_MODE_SINGLE && c->n_nodes != 1) {
        return fail(
            p, 0, "[fleet] mode = single takes exactly one [node], found %zu (use mode = redlock)",
            c->n_nodes);
    }
    if (c->mode == ELKFW_MODE_REDLOCK && c->n_nodes < 3) {
        return fail(p, 0, "[fleet] mode = redlock needs at least 3 independent nodes, found %zu",
                    c->n_nodes);
    }
    if (c->key_prefix[0] != '\0' && strpbrk(c->key_prefix, "{} \t") != NULL) {
        /* unreachable from a file (set_key checks the line); kept for callers that fill c */
        return fail(p, 0, "[fleet] key_prefix '%s' must not contain braces or spaces",
                    c->key_prefix);
    }
    if (c->n_resources == 0) {
        return fail(p, 0, "no [resource NAME] section: nothing to lock");
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
        return fail(p, n->line, "[node %s]: tls is on but no 'ca' is set (here or in [fleet])",
                    n->name);
    }
    if (n->server_name[0] == '\0' && elkfw_host_is_ip(n->host)) {
        /* the certificate name check would fail on every connection, forever */
        return fail(
            p, n->line,
            "[node %s]: tls is on and host '%s' is an IP address: set 'server_name' to the name "
            "in the server's certificate",
            n->name, n->host);
    }
    if ((n->tls.cert[0] == '\0') != (n->tls.key[0] == '\0')) {
        return fail(p, n->line,
                    "[node %s]: a client 'cert' needs its 'key' and the other way round", n->name);
    }
    return ELK_OK;
}

/* One node: required keys, what it inherits from [fleet], its TLS setup. */
static int check_node(parser_t *p, const elkfw_conf_t *c, elkfw_node_conf_t *n)
{
    int tls = n->tls.on >= 0 ? n->tls.on : c->tls.on;
    if (n->host[0] == '\0') {
        return fail(p, n->line, "[node %s]: key 'host' is required", n->name);
    }
    if (n->password[0] != '\0' && n->password_file[0] != '\0') {
        return fail(p, n->line, "[node %s]: set 'password' or 'password_file', not both", n->name);
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
        return fail(p, r->line,
                    "[resource %s]: renew_fraction must be between 1%% and 90%% of the ttl",
                    r->name);
    }
    if (check_lease_rule(p, c, r) != ELK_OK) {
        return ELK_E_CONFIG;
    }
    if (r->max_hold_line == 0 && r->max_hold_ms < r->ttl_ms) {
        r->max_hold_ms = r->ttl_ms; /* the default cap, for a lease longer than it */
    }
    if (r->max_hold_ms != 0 && r->max_hold_ms < r->ttl_ms) {
        return fail(p, r->line, "[resource %s]: max_hold %lums is shorter than ttl %lums", r->name,
                    (unsigned long)r->max_hold_ms, (unsigned long)r->ttl_ms);
    }
    return ELK_OK;
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
            return fail(p, 0,
                        "[fleet] quarantine %lums is shorter than ttl + drift + lock_delay of "
                        "[resource %s] (%llums): a restarted node would vote while a lease it lost "
                        "may still be valid; raise it or use 0 (automatic)",
                        (unsigned long)c->quarantine_ms, r->name, (unsigned long long)need);
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
            snprintf(out, cap,
                     "%s:%d: warning: [resource %s] max_hold = 0: a hung holder keeps the "
                     "resource forever; set a cap (e.g. max_hold = 1h)",
                     c->path, r->max_hold_line ? r->max_hold_line : r->line, r->name);
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

static int check_conf(parser_t *p)
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
    }
    (void)check_quarantine(p, c);
    if (c->agent.socket_path[0] == '\0') {
        (void)fail(p, 0, "[agent] socket must not be empty");
    }
    return p->errors != 0 ? ELK_E_CONFIG : ELK_OK;
}

/* Narrow [*b, *e) past the spaces at both ends. */
static void trim(const char *line, size_t *b, size_t *e)
{
    while (*b < *e && is_space(line[*b])) {
        (*b)++;
    }
    while (*e > *b && is_space(line[*e - 1])) {
        (*e)--;
    }
}

/* "[ name ]" in line[b..e), which starts with '['. */
static int section_line(parser_t *p, const char *line, size_t b, size_t e)
{
    size_t sb = b + 1, se;
    if (line[e - 1] != ']') {
        p->skip_section = true;
        return fail(p, p->line,
                    "section header is not closed: expected ']' at the end of the line");
    }
    se = e - 1;
    trim(line, &sb, &se);
    p->seen = 0;
    p->skip_section = open_section(p, line + sb, se - sb) != ELK_OK;
    return p->skip_section ? ELK_E_CONFIG : ELK_OK;
}

/* "key = value" in line[b..e). */
static int key_line(parser_t *p, const char *line, size_t b, size_t e)
{
    const char *eq = memchr(line + b, '=', e - b);
    size_t kb = b, ke, vb, ve = e;
    char q[64];
    if (eq == NULL) {
        quote_value(q, sizeof q, line + b, e - b);
        return fail(p, p->line, "'%s' is not 'key = value' or a [section]", q);
    }
    ke = (size_t)(eq - line);
    vb = ke + 1;
    while (ke > kb && is_space(line[ke - 1])) {
        ke--;
    }
    while (vb < ve && is_space(line[vb])) {
        vb++;
    }
    if (ke == kb) {
        return fail(p, p->line, "missing key name before '='");
    }
    /* Optional double quotes keep leading/trailing spaces in a value. */
    if (ve - vb >= 2 && line[vb] == '"' && line[ve - 1] == '"') {
        vb++;
        ve--;
    }
    return set_key(p, line + kb, ke - kb, line + vb, ve - vb);
}

/* One line (ll bytes, without its newline): blank, comment, section header or key. */
static int parse_line(parser_t *p, const char *line, size_t ll)
{
    size_t b = 0, e = ll;
    trim(line, &b, &e);
    if (b == e || line[b] == '#' || line[b] == ';') {
        return ELK_OK;
    }
    if (memchr(line + b, '\0', e - b) != NULL) {
        return fail(p, p->line, "line contains a NUL byte (is this a text file?)");
    }
    if (line[b] != '[' && p->skip_section) {
        return ELK_OK; /* a key of a section that was not understood: said once, at its header */
    }
    return line[b] == '[' ? section_line(p, line, b, e) : key_line(p, line, b, e);
}

int elkfw_conf_parse(elkfw_conf_t *c, const char *filename, const char *text, size_t len, char *err,
                     size_t errlen)
{
    parser_t p;
    size_t pos = 0;
    int rc;

    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    if (c == NULL || (text == NULL && len > 0)) {
        return ELK_E_INVALID_ARG;
    }
    elkfw_conf_defaults(c);
    memset(&p, 0, sizeof p);
    p.c = c;
    p.file = filename != NULL ? filename : "(config)";
    p.err = err;
    p.errlen = err != NULL ? errlen : 0;
    snprintf(c->path, sizeof c->path, "%s", p.file);

    while (pos < len) {
        const char *line = text + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t ll = nl != NULL ? (size_t)(nl - line) : len - pos;
        pos += ll + (nl != NULL ? 1u : 0u);
        p.line++;
        (void)parse_line(&p, line, ll); /* a problem is kept in err; the next line is read */
    }
    rc = check_conf(&p);
    return rc;
}

const elkfw_resource_conf_t *elkfw_conf_resource(const elkfw_conf_t *c, const char *name,
                                                 size_t len)
{
    size_t i;
    for (i = 0; i < c->n_resources; i++) {
        if (strlen(c->resources[i].name) == len && memcmp(c->resources[i].name, name, len) == 0) {
            return &c->resources[i];
        }
    }
    return NULL;
}

bool elkfw_host_is_ip(const char *host)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* Read a whole small file into buf; returns bytes read or -1 with errno set. */
static long read_file(const char *path, char *buf, size_t cap, bool *too_big, bool *others_read)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    struct stat st;
    *too_big = false;
    if (f == NULL) {
        return -1;
    }
    *others_read = fstat(fileno(f), &st) == 0 && (st.st_mode & S_IROTH) != 0;
    n = fread(buf, 1, cap, f);
    if (ferror(f)) {
        int e = errno;
        fclose(f);
        errno = e;
        return -1;
    }
    if (n == cap && fgetc(f) != EOF) {
        *too_big = true;
    }
    fclose(f);
    return (long)n;
}

/* A node's password_file into nd->password: one non-empty line, not readable by others. */
static int load_password_file(elkfw_node_conf_t *nd, const char *path, char *err, size_t errlen)
{
    char pw[ELKFW_STR_MAX + 1];
    bool too_big, others_read;
    long m = read_file(nd->password_file, pw, sizeof pw, &too_big, &others_read);
    if (m < 0) {
        snprintf(err, errlen, "%s:%d: key 'password_file' in [node %s]: cannot read '%s': %s", path,
                 nd->password_file_line, nd->name, nd->password_file, strerror(errno));
        return ELK_E_CONFIG;
    }
    while (m > 0 && (pw[m - 1] == '\n' || pw[m - 1] == '\r')) {
        m--;
    }
    if (too_big || m >= (long)sizeof nd->password) {
        snprintf(err, errlen,
                 "%s:%d: key 'password_file' in [node %s]: '%s' holds more than %zu bytes", path,
                 nd->password_file_line, nd->name, nd->password_file, sizeof nd->password - 1);
        return ELK_E_CONFIG;
    }
    if (m == 0 || memchr(pw, '\0', (size_t)m) != NULL || memchr(pw, '\n', (size_t)m) != NULL) {
        snprintf(err, errlen,
                 "%s:%d: key 'password_file' in [node %s]: '%s' must hold one non-empty line", path,
                 nd->password_file_line, nd->name, nd->password_file);
        return ELK_E_CONFIG;
    }
    memcpy(nd->password, pw, (size_t)m);
    nd->password[m] = '\0';
    explicit_bzero(pw, sizeof pw);
    if (others_read) {
        /* A secret every local account can read is no secret. */
        snprintf(err, errlen,
                 "%s:%d: key 'password_file' in [node %s]: '%s' is readable by every user: "
                 "run chmod o-r '%s'",
                 path, nd->password_file_line, nd->name, nd->password_file, nd->password_file);
        return ELK_E_CONFIG;
    }
    return ELK_OK;
}

/* The file's passwords: those in password files read in, none inline in a file others read. */
static int load_passwords(elkfw_conf_t *c, const char *path, bool conf_others_read, char *err,
                          size_t errlen)
{
    size_t i;
    for (i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].password_file[0] != '\0' &&
            load_password_file(&c->nodes[i], path, err, errlen) != ELK_OK) {
            return ELK_E_CONFIG;
        }
    }
    for (i = 0; i < c->n_nodes && conf_others_read; i++) {
        if (c->nodes[i].password[0] != '\0' && c->nodes[i].password_file[0] == '\0') {
            snprintf(err, errlen,
                     "%s:%d: [node %s] has an inline 'password' and the file is readable by every "
                     "user: run chmod o-r '%s', or move it to a 'password_file' only elkd can read",
                     path, c->nodes[i].line, c->nodes[i].name, path);
            return ELK_E_CONFIG;
        }
    }
    return ELK_OK;
}

int elkfw_conf_load(elkfw_conf_t *c, const char *path, char *err, size_t errlen)
{
    enum { MAX_CONF = 256 * 1024 };
    char *text;
    long n;
    bool too_big, conf_others_read;
    int rc;

    if (c == NULL || path == NULL || err == NULL || errlen == 0) {
        return ELK_E_INVALID_ARG;
    }
    text = malloc(MAX_CONF);
    if (text == NULL) {
        snprintf(err, errlen, "%s: out of memory reading the configuration", path);
        return ELK_E_CONFIG;
    }
    n = read_file(path, text, MAX_CONF, &too_big, &conf_others_read);
    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read the configuration: %s", path, strerror(errno));
        free(text);
        return ELK_E_CONFIG;
    }
    if (too_big) {
        snprintf(err, errlen, "%s: file is larger than %d bytes; is this the right file?", path,
                 MAX_CONF);
        free(text);
        return ELK_E_CONFIG;
    }
    rc = elkfw_conf_parse(c, path, text, (size_t)n, err, errlen);
    free(text);
    if (rc != ELK_OK) {
        return rc;
    }
    rc = load_passwords(c, path, conf_others_read, err, errlen);
    return rc != ELK_OK ? rc : elkfw_preflight(c, err, errlen);
}
