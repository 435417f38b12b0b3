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

/* ------------------------------------------------------------------ helpers */

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

bool elkfw_name_valid(const char *name, size_t len, size_t max)
{
    size_t i;
    if (name == NULL || len == 0 || len > max) {
        return false;
    }
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '_' || ch == '-' || ch == ':' || ch == '/' || ch == '@';
        if (!ok) {
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
    if (i == 0) {
        return false;
    }
    if (i == len || (len - i == 2 && memcmp(s + i, "ms", 2) == 0)) {
        mult = 1;
    } else if (len - i == 1 && s[i] == 's') {
        mult = 1000;
    } else if (len - i == 1 && s[i] == 'm') {
        mult = 60000;
    } else if (len - i == 1 && s[i] == 'h') {
        mult = 3600000;
    } else {
        return false;
    }
    if (v * mult > UINT32_MAX) {
        return false;
    }
    *ms = (uint32_t)(v * mult);
    return true;
}

/* "0.33", ".5", "33%", "1/3" -> parts per million in (0, 1e6). */
static bool parse_fraction(const char *s, size_t len, uint32_t *ppm)
{
    uint64_t num = 0, den = 1;
    size_t i = 0;
    int digits = 0;
    if (len == 0) {
        return false;
    }
    if (s[len - 1] == '%') {
        for (i = 0; i + 1 < len; i++) {
            if (s[i] < '0' || s[i] > '9' || ++digits > 3) {
                return false;
            }
            num = num * 10u + (uint64_t)(s[i] - '0');
        }
        if (digits == 0 || num == 0 || num >= 100) {
            return false;
        }
        *ppm = (uint32_t)(num * 10000u);
        return true;
    }
    for (i = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (++digits > 6) {
            return false;
        }
        num = num * 10u + (uint64_t)(s[i] - '0');
    }
    if (i < len && s[i] == '/') {
        uint64_t d = 0;
        size_t j;
        int ddigits = 0;
        if (digits == 0) {
            return false;
        }
        for (j = i + 1; j < len; j++) {
            if (s[j] < '0' || s[j] > '9' || ++ddigits > 6) {
                return false;
            }
            d = d * 10u + (uint64_t)(s[j] - '0');
        }
        if (ddigits == 0 || d == 0 || num == 0 || num >= d) {
            return false;
        }
        *ppm = (uint32_t)(num * 1000000u / d);
        return *ppm > 0;
    }
    if (i < len && s[i] == '.') {
        int frac_digits = 0;
        if (num != 0) {
            return false; /* "1.5" is not below 1 */
        }
        for (i = i + 1; i < len; i++) {
            if (s[i] < '0' || s[i] > '9' || ++frac_digits > 6) {
                return false;
            }
            num = num * 10u + (uint64_t)(s[i] - '0');
            den *= 10u;
        }
        if (frac_digits == 0 || num == 0) {
            return false;
        }
        *ppm = (uint32_t)(num * 1000000u / den);
        return *ppm > 0;
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

enum key_type { K_STR, K_DUR, K_BOOL, K_TRI, K_U32, K_PORT, K_ENUM, K_FRAC, K_NAME_ID, K_OCTAL, K_IDLIST };

typedef struct keydef {
    const char *name;
    enum key_type type;
    size_t offset;
    size_t size;                  /* K_STR: buffer size */
    const char *const *choices;   /* K_ENUM: NULL-terminated; index stored as int */
    uint32_t min, max;            /* K_U32 / K_DUR bounds */
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
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '-' || ch == '_' || ch == ':' || ch == '%')) {
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
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '-')) {
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
    {"allow_users", K_IDLIST, RES(allow_users), SZ(elkfw_resource_conf_t, allow_users), NULL, 0, 0},
    {"allow_groups", K_IDLIST, RES(allow_groups), SZ(elkfw_resource_conf_t, allow_groups), NULL, 0, 0},
};

static const keydef_t agent_keys[] = {
    {"socket", K_STR, AGENT(socket_path), SZ(elkfw_agent_conf_t, socket_path), NULL, 0, 0},
    {"log", K_ENUM, AGENT(log_target), 0, log_choices, 0, 0},
    {"log_level", K_ENUM, AGENT(log_level), 0, level_choices, 0, 0},
    {"safety_check", K_ENUM, AGENT(safety_check), 0, safety_choices, 0, 0},
    {"socket_mode", K_OCTAL, AGENT(socket_mode), 0, NULL, 0, 0777},
    {"socket_group", K_IDLIST, AGENT(socket_group), SZ(elkfw_agent_conf_t, socket_group), NULL, 0, 0},
    {"max_clients_per_uid", K_U32, AGENT(max_clients_per_uid), 0, NULL, 1, 1024},
    {"log_summary", K_DUR, AGENT(log_summary_ms), 0, NULL, 1000, 86400000},
    {"metrics_file", K_STR, AGENT(metrics_file), SZ(elkfw_agent_conf_t, metrics_file), NULL, 0, 0},
    {"metrics_interval", K_DUR, AGENT(metrics_interval_ms), 0, NULL, 1000, 86400000},
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
    void *obj;                   /* struct the current section's keys write into */
    const keydef_t *keys;
    size_t n_keys;
    char section[ELKFW_NAME_MAX + 16]; /* "[resource valve-1]" for messages */
    uint32_t seen;               /* keys of the current section already set */
    int seen_line[32];
    bool fleet_seen, agent_seen;
    int fleet_line, agent_line;
} parser_t;

static int fail(parser_t *p, int line, const char *fmt, ...)
{
    va_list ap;
    size_t n = 0;
    if (p->errlen == 0) {
        return ELK_E_CONFIG;
    }
    if (line > 0) {
        int w = snprintf(p->err, p->errlen, "%s:%d: ", p->file, line);
        n = w > 0 ? (size_t)w : 0;
    } else {
        int w = snprintf(p->err, p->errlen, "%s: ", p->file);
        n = w > 0 ? (size_t)w : 0;
    }
    if (n < p->errlen) {
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - n, fmt, ap);
        va_end(ap);
    }
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
    strcpy(c->agent.socket_path, "/run/elkd/elkd.sock");
    c->agent.socket_mode = 0660;
    c->agent.log_target = ELKFW_LOG_STDERR;
    c->agent.log_level = ELK_LOG_INFO;
    c->agent.safety_check = ELKFW_SAFETY_WARN;
    c->agent.log_summary_ms = 60000;
    c->agent.metrics_interval_ms = 15000;
}

static void resource_defaults(elkfw_resource_conf_t *r)
{
    memset(r, 0, sizeof *r);
    r->ttl_ms = CONFIG_ELK_DEFAULT_TTL_MS;
    r->renew_fraction_ppm = (uint32_t)CONFIG_ELK_RENEW_FRACTION_PCT * 10000u;
    r->stop_margin_ms = 500;
    r->min_validity_ms = 0; /* filled in the check: a fifth of the ttl unless set */
    r->fencing = true;
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

static int open_section(parser_t *p, const char *s, size_t len)
{
    const char *name = NULL;
    size_t name_len = 0, i;
    char q[64];

    /* "[node a]", "[node.a]", "[resource valve-1]": kind, then a name after one
     * space (or, for the dotted form, one dot). */
    if (len == 5 && memcmp(s, "fleet", 5) == 0) {
        if (p->fleet_seen) {
            return fail(p, p->line, "section [fleet] appears twice (first on line %d)", p->fleet_line);
        }
        p->fleet_seen = true;
        p->fleet_line = p->line;
        p->kind = SEC_FLEET;
        p->obj = p->c;
        p->keys = fleet_keys;
        p->n_keys = NKEYS(fleet_keys);
        snprintf(p->section, sizeof p->section, "[fleet]");
        return ELK_OK;
    }
    if (len == 5 && memcmp(s, "agent", 5) == 0) {
        if (p->agent_seen) {
            return fail(p, p->line, "section [agent] appears twice (first on line %d)", p->agent_line);
        }
        p->agent_seen = true;
        p->agent_line = p->line;
        p->kind = SEC_AGENT;
        p->obj = &p->c->agent;
        p->keys = agent_keys;
        p->n_keys = NKEYS(agent_keys);
        snprintf(p->section, sizeof p->section, "[agent]");
        return ELK_OK;
    }
    if (len > 5 && memcmp(s, "node", 4) == 0 && (s[4] == ' ' || s[4] == '.')) {
        p->kind = SEC_NODE;
        name = s + 5;
        name_len = len - 5;
    } else if (len > 9 && memcmp(s, "resource", 8) == 0 && (s[8] == ' ' || s[8] == '.')) {
        p->kind = SEC_RESOURCE;
        name = s + 9;
        name_len = len - 9;
    } else {
        quote_value(q, sizeof q, s, len);
        return fail(p, p->line,
                    "unknown section [%s] (expected [fleet], [node NAME], [resource NAME] or [agent])", q);
    }
    while (name_len > 0 && is_space(name[0])) {
        name++;
        name_len--;
    }
    quote_value(q, sizeof q, name, name_len);
    if (p->kind == SEC_NODE) {
        elkfw_node_conf_t *n;
        if (!elkfw_name_valid(name, name_len, ELKFW_NAME_MAX - 1)) {
            return fail(p, p->line,
                        "node name '%s' is not valid (1-%d bytes of letters, digits and . _ - : / @)", q,
                        ELKFW_NAME_MAX - 1);
        }
        for (i = 0; i < p->c->n_nodes; i++) {
            if (strlen(p->c->nodes[i].name) == name_len && memcmp(p->c->nodes[i].name, name, name_len) == 0) {
                return fail(p, p->line, "section [node %s] appears twice (first on line %d)", q,
                            p->c->nodes[i].line);
            }
        }
        if (p->c->n_nodes >= CONFIG_ELK_MAX_NODES) {
            return fail(p, p->line, "too many nodes: this build allows %d (CONFIG_ELK_MAX_NODES)",
                        CONFIG_ELK_MAX_NODES);
        }
        n = &p->c->nodes[p->c->n_nodes++];
        node_defaults(n);
        memcpy(n->name, name, name_len);
        n->line = p->line;
        p->obj = n;
        p->keys = node_keys;
        p->n_keys = NKEYS(node_keys);
        snprintf(p->section, sizeof p->section, "[node %s]", n->name);
    } else {
        elkfw_resource_conf_t *r;
        size_t max = elkfw_resource_name_max(p->c);
        if (!elkfw_name_valid(name, name_len, max)) {
            return fail(p, p->line,
                        "resource name '%s' is not valid (1-%zu bytes of letters, digits and . _ - : / @; "
                        "the limit follows from CONFIG_ELK_MAX_KEY_LEN and key_prefix)", q, max);
        }
        for (i = 0; i < p->c->n_resources; i++) {
            if (strlen(p->c->resources[i].name) == name_len &&
                memcmp(p->c->resources[i].name, name, name_len) == 0) {
                return fail(p, p->line, "section [resource %s] appears twice (first on line %d)", q,
                            p->c->resources[i].line);
            }
        }
        if (p->c->n_resources >= ELKFW_MAX_RESOURCES) {
            return fail(p, p->line, "too many resources: at most %d", ELKFW_MAX_RESOURCES);
        }
        r = &p->c->resources[p->c->n_resources++];
        resource_defaults(r);
        memcpy(r->name, name, name_len);
        r->line = p->line;
        p->obj = r;
        p->keys = resource_keys;
        p->n_keys = NKEYS(resource_keys);
        snprintf(p->section, sizeof p->section, "[resource %s]", r->name);
    }
    return ELK_OK;
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

static int set_key(parser_t *p, const char *k, size_t klen, const char *v, size_t vlen)
{
    const keydef_t *kd = NULL;
    char kq[48], vq[64];
    uint8_t *dst;
    size_t i;

    quote_value(kq, sizeof kq, k, klen);
    if (p->kind == SEC_NONE) {
        return fail(p, p->line, "key '%s' outside any section (start with [fleet], [node NAME], ...)", kq);
    }
    for (i = 0; i < p->n_keys; i++) {
        if (strlen(p->keys[i].name) == klen && memcmp(p->keys[i].name, k, klen) == 0) {
            kd = &p->keys[i];
            break;
        }
    }
    if (kd == NULL) {
        return fail(p, p->line, "unknown key '%s' in %s (see the Configuration section of README.md)", kq,
                    p->section);
    }
    if (p->seen & (1u << i)) {
        return fail(p, p->line, "key '%s' in %s is set twice (first on line %d)", kq, p->section,
                    p->seen_line[i]);
    }
    p->seen |= 1u << i;
    p->seen_line[i] = p->line;
    note_key_line(p, kd->name);
    quote_value(vq, sizeof vq, v, vlen);
    dst = (uint8_t *)p->obj + kd->offset;

    switch (kd->type) {
    case K_STR:
    case K_NAME_ID:
    case K_IDLIST:
        if (vlen >= kd->size) {
            return fail(p, p->line, "key '%s' in %s: value is %zu bytes long; at most %zu allowed", kq,
                        p->section, vlen, kd->size - 1);
        }
        if (kd->type == K_IDLIST && !idlist_valid(v, vlen)) {
            return fail(p, p->line,
                        "key '%s' in %s: '%s' is not a comma-separated list of user or group names or numeric "
                        "ids (letters, digits and . _ -)", kq, p->section, vq);
        }
        if (kd->type == K_NAME_ID && !elkfw_name_valid(v, vlen, kd->size - 1)) {
            return fail(p, p->line,
                        "key '%s' in %s: '%s' is not a valid id (letters, digits and . _ - : / @)", kq,
                        p->section, vq);
        }
        if (p->kind == SEC_FLEET && strcmp(kd->name, "key_prefix") == 0 && !prefix_valid(v, vlen)) {
            return fail(p, p->line,
                        "key '%s' in %s: '%s' must not contain braces, spaces or control bytes (the key is "
                        "<prefix>{<resource>})", kq, p->section, vq);
        }
        if (p->kind == SEC_NODE && strcmp(kd->name, "host") == 0 && !host_valid(v, vlen)) {
            /* caught here, or elkd would retry the name lookup forever */
            return fail(p, p->line,
                        "key '%s' in %s: '%s' is not a host name or numeric address (letters, digits and "
                        ". - _ : %%; no spaces or control bytes)", kq, p->section, vq);
        }
        memcpy(dst, v, vlen);
        dst[vlen] = '\0';
        return ELK_OK;
    case K_OCTAL: {
        uint32_t u = 0;
        if (!parse_octal(v, vlen, kd->max, &u)) {
            return fail(p, p->line, "key '%s' in %s: '%s' is not an octal mode from 0 to 0777 (e.g. 0660)", kq,
                        p->section, vq);
        }
        memcpy(dst, &u, sizeof u);
        return ELK_OK;
    }
    case K_DUR: {
        uint32_t ms;
        if (!elkfw_parse_duration(v, vlen, &ms)) {
            return fail(p, p->line, "key '%s' in %s: '%s' is not a duration (use e.g. 500ms or 10s)", kq,
                        p->section, vq);
        }
        if (ms < kd->min || ms > kd->max) {
            return fail(p, p->line, "key '%s' in %s: %s is out of range (%lums to %lums)", kq, p->section,
                        vq, (unsigned long)kd->min, (unsigned long)kd->max);
        }
        memcpy(dst, &ms, sizeof ms);
        return ELK_OK;
    }
    case K_U32:
    case K_PORT: {
        uint32_t u;
        if (!parse_u32(v, vlen, &u) || u < kd->min || u > kd->max) {
            return fail(p, p->line, "key '%s' in %s: '%s' is not a whole number from %lu to %lu", kq,
                        p->section, vq, (unsigned long)kd->min, (unsigned long)kd->max);
        }
        if (kd->type == K_PORT) {
            uint16_t port = (uint16_t)u;
            memcpy(dst, &port, sizeof port);
        } else {
            memcpy(dst, &u, sizeof u);
        }
        return ELK_OK;
    }
    case K_BOOL:
    case K_TRI: {
        int b = parse_bool(v, vlen);
        if (b < 0) {
            return fail(p, p->line, "key '%s' in %s: '%s' is not on or off (use on/off, yes/no, true/false, 1/0)",
                        kq, p->section, vq);
        }
        if (kd->type == K_BOOL) {
            bool bv = b == 1;
            memcpy(dst, &bv, sizeof bv);
        } else {
            memcpy(dst, &b, sizeof b);
        }
        return ELK_OK;
    }
    case K_ENUM: {
        char list[96];
        size_t o = 0;
        int idx;
        for (idx = 0; kd->choices[idx] != NULL; idx++) {
            if (strlen(kd->choices[idx]) == vlen && memcmp(kd->choices[idx], v, vlen) == 0) {
                int val = idx;
                if (kd->choices == level_choices) {
                    val = idx + ELK_LOG_ERROR; /* error=1 ... debug=4, as in platform.h */
                }
                memcpy(dst, &val, sizeof val);
                return ELK_OK;
            }
        }
        list[0] = '\0';
        for (idx = 0; kd->choices[idx] != NULL && o < sizeof list; idx++) {
            int w = snprintf(list + o, sizeof list - o, "%s%s", idx ? ", " : "", kd->choices[idx]);
            o += w > 0 ? (size_t)w : 0;
        }
        return fail(p, p->line, "key '%s' in %s: '%s' is not one of: %s", kq, p->section, vq, list);
    }
    case K_FRAC: {
        uint32_t ppm;
        if (!parse_fraction(v, vlen, &ppm)) {
            return fail(p, p->line,
                        "key '%s' in %s: '%s' is not a fraction between 0 and 1 (use e.g. 0.33, 33%% or 1/3)",
                        kq, p->section, vq);
        }
        memcpy(dst, &ppm, sizeof ppm);
        return ELK_OK;
    }
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
                          : r->stop_margin_line ? "stop_margin"
                          : r->min_validity_line ? "min_validity" : NULL;
        int line = r->ttl_line ? r->ttl_line
                   : r->stop_margin_line ? r->stop_margin_line
                   : r->min_validity_line ? r->min_validity_line : r->line;
        return fail(p, line,
                    "%s%s%s[resource %s]: ttl %lums leaves no validity: drift %llums + stop_margin %lums + "
                    "min_validity %lums must be below it",
                    key ? "key '" : "", key ? key : "", key ? "' in " : "", r->name, (unsigned long)r->ttl_ms,
                    (unsigned long long)drift, (unsigned long)r->stop_margin_ms,
                    (unsigned long)r->min_validity_ms);
    }
    if (fault == ELK_LOCK_CFG_RENEW_AFTER_DEADLINE) {
        return fail(p, r->line,
                    "[resource %s]: renew_fraction makes renewal start after the local deadline "
                    "(%llums); lower it", r->name, (unsigned long long)(r->ttl_ms - drift - r->stop_margin_ms));
    }
    if (fault == ELK_LOCK_CFG_WAIT_RANGE) {
        return fail(p, r->line, "[resource %s]: wait_min %lums is above wait_max %lums", r->name,
                    (unsigned long)r->wait_min_ms, (unsigned long)r->wait_max_ms);
    }
    return fail(p, r->line, "[resource %s]: ttl or renew_fraction out of range", r->name);
}

void elkfw_resource_lock_config(const elkfw_conf_t *c, const elkfw_resource_conf_t *r, elk_lock_config_t *out)
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
}

static int check_conf(parser_t *p)
{
    elkfw_conf_t *c = p->c;
    size_t i;
    if (c->n_nodes == 0) {
        return fail(p, 0, "no [node NAME] section: the fleet needs at least one Redis node");
    }
    if (c->mode == ELKFW_MODE_SINGLE && c->n_nodes != 1) {
        return fail(p, 0, "[fleet] mode = single takes exactly one [node], found %zu (use mode = redlock)",
                    c->n_nodes);
    }
    if (c->mode == ELKFW_MODE_REDLOCK && c->n_nodes < 3) {
        return fail(p, 0, "[fleet] mode = redlock needs at least 3 independent nodes, found %zu",
                    c->n_nodes);
    }
    if (c->key_prefix[0] != '\0' && strpbrk(c->key_prefix, "{} \t") != NULL) {
        /* unreachable from a file (set_key checks the line); kept for callers that fill c */
        return fail(p, 0, "[fleet] key_prefix '%s' must not contain braces or spaces", c->key_prefix);
    }
    if (c->n_resources == 0) {
        return fail(p, 0, "no [resource NAME] section: nothing to lock");
    }
    for (i = 0; i < c->n_nodes; i++) {
        elkfw_node_conf_t *n = &c->nodes[i];
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
        if (tls == 1) {
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
                return fail(p, n->line, "[node %s]: tls is on but no 'ca' is set (here or in [fleet])", n->name);
            }
            if (n->server_name[0] == '\0' && elkfw_host_is_ip(n->host)) {
                /* the certificate name check would fail on every connection, forever */
                return fail(p, n->line,
                            "[node %s]: tls is on and host '%s' is an IP address: set 'server_name' to the name "
                            "in the server's certificate", n->name, n->host);
            }
            if ((n->tls.cert[0] == '\0') != (n->tls.key[0] == '\0')) {
                return fail(p, n->line, "[node %s]: a client 'cert' needs its 'key' and the other way round",
                            n->name);
            }
        }
        if (n->connect_timeout_ms == 0) {
            n->connect_timeout_ms = c->connect_timeout_ms;
        }
        if (n->request_timeout_ms == 0) {
            n->request_timeout_ms = c->request_timeout_ms;
        }
    }
    for (i = 0; i < c->n_resources; i++) {
        elkfw_resource_conf_t *r = &c->resources[i];
        if (r->min_validity_ms == 0) {
            r->min_validity_ms = r->ttl_ms / 5u;
        }
        if ((r->renew_fraction_ppm + 5000u) / 10000u < 1u || (r->renew_fraction_ppm + 5000u) / 10000u > 90u) {
            return fail(p, r->line, "[resource %s]: renew_fraction must be between 1%% and 90%% of the ttl",
                        r->name);
        }
        if (check_lease_rule(p, c, r) != ELK_OK) {
            return ELK_E_CONFIG;
        }
        if (r->max_hold_ms != 0 && r->max_hold_ms < r->ttl_ms) {
            return fail(p, r->line, "[resource %s]: max_hold %lums is shorter than ttl %lums", r->name,
                        (unsigned long)r->max_hold_ms, (unsigned long)r->ttl_ms);
        }
    }
    if (c->agent.socket_path[0] == '\0') {
        return fail(p, 0, "[agent] socket must not be empty");
    }
    return ELK_OK;
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
        size_t b = 0, e = ll;
        pos += ll + (nl != NULL ? 1u : 0u);
        p.line++;

        while (b < e && is_space(line[b])) {
            b++;
        }
        while (e > b && is_space(line[e - 1])) {
            e--;
        }
        if (b == e || line[b] == '#' || line[b] == ';') {
            continue;
        }
        if (memchr(line + b, '\0', e - b) != NULL) {
            return fail(&p, p.line, "line contains a NUL byte (is this a text file?)");
        }
        if (line[b] == '[') {
            size_t sb = b + 1, se;
            if (line[e - 1] != ']') {
                return fail(&p, p.line, "section header is not closed: expected ']' at the end of the line");
            }
            se = e - 1;
            while (sb < se && is_space(line[sb])) {
                sb++;
            }
            while (se > sb && is_space(line[se - 1])) {
                se--;
            }
            p.seen = 0;
            rc = open_section(&p, line + sb, se - sb);
            if (rc != ELK_OK) {
                return rc;
            }
            continue;
        }
        {
            const char *eq = memchr(line + b, '=', e - b);
            size_t kb = b, ke, vb, ve = e;
            char q[64];
            if (eq == NULL) {
                quote_value(q, sizeof q, line + b, e - b);
                return fail(&p, p.line, "'%s' is not 'key = value' or a [section]", q);
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
                return fail(&p, p.line, "missing key name before '='");
            }
            /* Optional double quotes keep leading/trailing spaces in a value. */
            if (ve - vb >= 2 && line[vb] == '"' && line[ve - 1] == '"') {
                vb++;
                ve--;
            }
            rc = set_key(&p, line + kb, ke - kb, line + vb, ve - vb);
            if (rc != ELK_OK) {
                return rc;
            }
        }
    }
    return check_conf(&p);
}

const elkfw_resource_conf_t *elkfw_conf_resource(const elkfw_conf_t *c, const char *name, size_t len)
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

int elkfw_conf_load(elkfw_conf_t *c, const char *path, char *err, size_t errlen)
{
    enum { MAX_CONF = 256 * 1024 };
    char *text;
    long n;
    bool too_big, others_read, conf_others_read;
    size_t i;
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
        snprintf(err, errlen, "%s: file is larger than %d bytes; is this the right file?", path, MAX_CONF);
        free(text);
        return ELK_E_CONFIG;
    }
    rc = elkfw_conf_parse(c, path, text, (size_t)n, err, errlen);
    free(text);
    if (rc != ELK_OK) {
        return rc;
    }
    for (i = 0; i < c->n_nodes; i++) {
        elkfw_node_conf_t *nd = &c->nodes[i];
        char pw[ELKFW_STR_MAX + 1];
        long m;
        if (nd->password_file[0] == '\0') {
            continue;
        }
        m = read_file(nd->password_file, pw, sizeof pw, &too_big, &others_read);
        if (m < 0) {
            snprintf(err, errlen, "%s:%d: key 'password_file' in [node %s]: cannot read '%s': %s", path,
                     nd->password_file_line, nd->name, nd->password_file, strerror(errno));
            return ELK_E_CONFIG;
        }
        while (m > 0 && (pw[m - 1] == '\n' || pw[m - 1] == '\r')) {
            m--;
        }
        if (too_big || m >= (long)sizeof nd->password) {
            snprintf(err, errlen, "%s:%d: key 'password_file' in [node %s]: '%s' holds more than %zu bytes",
                     path, nd->password_file_line, nd->name, nd->password_file, sizeof nd->password - 1);
            return ELK_E_CONFIG;
        }
        if (m == 0 || memchr(pw, '\0', (size_t)m) != NULL || memchr(pw, '\n', (size_t)m) != NULL) {
            snprintf(err, errlen, "%s:%d: key 'password_file' in [node %s]: '%s' must hold one non-empty line",
                     path, nd->password_file_line, nd->name, nd->password_file);
            return ELK_E_CONFIG;
        }
        memcpy(nd->password, pw, (size_t)m);
        nd->password[m] = '\0';
        explicit_bzero(pw, sizeof pw);
        if (others_read) {
            /* A secret every local account can read is no secret. */
            snprintf(err, errlen, "%s:%d: key 'password_file' in [node %s]: '%s' is readable by every user: "
                     "run chmod o-r '%s'", path, nd->password_file_line, nd->name, nd->password_file,
                     nd->password_file);
            return ELK_E_CONFIG;
        }
    }
    for (i = 0; i < c->n_nodes && conf_others_read; i++) {
        if (c->nodes[i].password[0] != '\0' && c->nodes[i].password_file[0] == '\0') {
            snprintf(err, errlen, "%s:%d: [node %s] has an inline 'password' and the file is readable by every "
                     "user: run chmod o-r '%s', or move it to a 'password_file' only elkd can read", path,
                     c->nodes[i].line, c->nodes[i].name, path);
            return ELK_E_CONFIG;
        }
    }
    return ELK_OK;
}
