/* SPDX-License-Identifier: MIT */
/* elkd configuration parser: INI read against the key tables (conf_keys.c), fixed arrays,
 * one clear message a problem. */
#include "conf_internal.h"

/* ------------------------------------------------------------------ parser */

/* One problem, as one more line of p->err ("file:line: text"): the parser goes on, so one
 * run (elkd --check) names every problem of the file. Returns ELK_E_CONFIG. */
int elkfw_conf__fail(parser_t *p, int line, const char *fmt, ...)
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

/* Every key of t at its default in obj, the struct t's offsets point into. */
static void key_defaults(void *obj, const keytable_t *t)
{
    size_t i;
    for (i = 0; i < t->n; i++) {
        const keydef_t *kd = &t->keys[i];
        uint8_t *dst = (uint8_t *)obj + kd->offset;
        uint32_t u = (uint32_t)kd->def;
        uint16_t port = (uint16_t)kd->def;
        int v = (int)kd->def;
        bool b = kd->def != 0;
        switch (kd->type) {
        case K_STR:
        case K_NAME_ID:
        case K_IDLIST:
            snprintf((char *)dst, kd->size, "%s", kd->def_text != NULL ? kd->def_text : "");
            break;
        case K_BOOL:
            memcpy(dst, &b, sizeof b);
            break;
        case K_TRI:
        case K_ENUM:
            memcpy(dst, &v, sizeof v);
            break;
        case K_PORT:
            memcpy(dst, &port, sizeof port);
            break;
        default: /* K_DUR, K_U32, K_FRAC, K_OCTAL */
            memcpy(dst, &u, sizeof u);
            break;
        }
    }
}

void elkfw_conf_free(elkfw_conf_t *c)
{
    free(c->resources);
    c->resources = NULL;
    c->n_resources = c->cap_resources = 0;
}

void elkfw_conf_defaults(elkfw_conf_t *c)
{
    memset(c, 0, sizeof *c);
    key_defaults(c, &elkfw_conf__fleet_keys);
    key_defaults(&c->agent, &elkfw_conf__agent_keys);
}

static void resource_defaults(elkfw_resource_conf_t *r)
{
    memset(r, 0, sizeof *r);
    key_defaults(r, &elkfw_conf__resource_keys);
}

static void node_defaults(elkfw_node_conf_t *n)
{
    memset(n, 0, sizeof *n);
    key_defaults(n, &elkfw_conf__node_keys);
}

/* [fleet] or [agent]: one of each, keys written into obj. */
static int open_single(parser_t *p, enum section_kind kind, const char *label, bool *seen,
                       int *first_line, void *obj, const keytable_t *t)
{
    if (*seen) {
        return elkfw_conf__fail(p, p->line, "section %s appears twice (first on line %d)", label,
                                *first_line);
    }
    *seen = true;
    *first_line = p->line;
    p->kind = kind;
    p->obj = obj;
    p->keys = t->keys;
    p->n_keys = t->n;
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
static void enter_named(parser_t *p, void *obj, const keytable_t *t, const char *kind,
                        const char *name)
{
    p->obj = obj;
    p->keys = t->keys;
    p->n_keys = t->n;
    snprintf(p->section, sizeof p->section, "[%s %s]", kind, name);
}

/* [node NAME]: q is the name quoted for messages. */
static int open_node(parser_t *p, const char *name, size_t name_len, const char *q)
{
    elkfw_node_conf_t *n;
    int first;
    if (!elkfw_name_valid(name, name_len, ELKFW_NAME_MAX - 1)) {
        return elkfw_conf__fail(
            p, p->line,
            "node name '%s' is not valid (1-%d bytes of letters, digits and . _ - : / @)", q,
            ELKFW_NAME_MAX - 1);
    }
    first = named_line(p->c->nodes, p->c->n_nodes, sizeof p->c->nodes[0],
                       offsetof(elkfw_node_conf_t, line) - offsetof(elkfw_node_conf_t, name), name,
                       name_len);
    if (first != 0) {
        return elkfw_conf__fail(p, p->line, "section [node %s] appears twice (first on line %d)", q,
                                first);
    }
    if (p->c->n_nodes >= CONFIG_ELK_MAX_NODES) {
        return elkfw_conf__fail(p, p->line,
                                "too many nodes: this build allows %d (CONFIG_ELK_MAX_NODES)",
                                CONFIG_ELK_MAX_NODES);
    }
    n = &p->c->nodes[p->c->n_nodes++];
    node_defaults(n);
    memcpy(n->name, name, name_len);
    n->line = p->line;
    enter_named(p, n, &elkfw_conf__node_keys, "node", n->name);
    return ELK_OK;
}

/* Room in the resource table for one more: it grows (doubling) up to the build's limit,
 * which a file may not pass. False with the reason said. */
static bool resource_room(parser_t *p)
{
    elkfw_conf_t *c = p->c;
    size_t cap;
    elkfw_resource_conf_t *t;
    if (c->n_resources >= (size_t)ELKFW_MAX_RESOURCES) {
        (void)elkfw_conf__fail(p, p->line, "too many resources: at most %d in this build (%s)",
                               ELKFW_MAX_RESOURCES, ELKFW_MAX_RESOURCES_HINT);
        return false;
    }
    if (c->n_resources < c->cap_resources) {
        return true;
    }
    cap = c->cap_resources != 0 ? c->cap_resources * 2u : 8u;
    cap = cap < (size_t)ELKFW_MAX_RESOURCES ? cap : (size_t)ELKFW_MAX_RESOURCES;
    t = realloc(c->resources, cap * sizeof *t);
    if (t == NULL) {
        (void)elkfw_conf__fail(p, p->line, "no memory for %zu resources", cap);
        return false;
    }
    c->resources = t;
    c->cap_resources = cap;
    return true;
}

/* The resource table entry already named name (a [resource] or a [semaphore]), or NULL. */
static const elkfw_resource_conf_t *named_res(const elkfw_conf_t *c, const char *name, size_t len)
{
    size_t i;
    for (i = 0; i < c->n_resources; i++) {
        if (strlen(c->resources[i].name) == len && memcmp(c->resources[i].name, name, len) == 0) {
            return &c->resources[i];
        }
    }
    return NULL;
}

/* [resource NAME] or [semaphore NAME] (sem): q is the name quoted for messages. A
 * semaphore's permits are named "NAME#k", so its name leaves room for "#k". */
static int open_resource(parser_t *p, const char *name, size_t name_len, const char *q, bool sem)
{
    elkfw_resource_conf_t *r;
    const elkfw_resource_conf_t *first;
    const char *kind = sem ? "semaphore" : "resource";
    size_t max = elkfw_resource_name_max(p->c);
    max = sem ? (max > 3u ? max - 3u : 0u) : max;
    if (!elkfw_name_valid(name, name_len, max)) {
        return elkfw_conf__fail(
            p, p->line,
            "%s name '%s' is not valid (1-%zu bytes of letters, digits and . _ - : / @; "
            "the limit follows from CONFIG_ELK_MAX_KEY_LEN and key_prefix%s)",
            kind, q, max, sem ? ", less 3 for the permit's \"#k\"" : "");
    }
    first = named_res(p->c, name, name_len);
    if (first != NULL && first->semaphore == sem) {
        return elkfw_conf__fail(p, p->line, "section [%s %s] appears twice (first on line %d)",
                                kind, q, first->line);
    }
    if (first != NULL) {
        return elkfw_conf__fail(p, p->line,
                                "[%s %s] has the name of [%s %s] on line %d: a resource and a "
                                "semaphore may not share a name",
                                kind, q, elkfw_conf__kind(first), q, first->line);
    }
    if (!resource_room(p)) {
        return ELK_E_CONFIG;
    }
    r = &p->c->resources[p->c->n_resources++];
    resource_defaults(r);
    memcpy(r->name, name, name_len);
    r->line = p->line;
    r->semaphore = sem;
    enter_named(p, r, sem ? &elkfw_conf__semaphore_keys : &elkfw_conf__resource_keys, kind,
                r->name);
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
    if (len > 10 && memcmp(s, "semaphore", 9) == 0 && (s[9] == ' ' || s[9] == '.')) {
        *name_len = len - 10;
        return SEC_SEMAPHORE;
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
                           &elkfw_conf__fleet_keys);
    }
    if (len == 5 && memcmp(s, "agent", 5) == 0) {
        return open_single(p, SEC_AGENT, "[agent]", &p->agent_seen, &p->agent_line, &p->c->agent,
                           &elkfw_conf__agent_keys);
    }
    p->kind = named_kind(s, len, &name_len);
    if (p->kind == SEC_NONE) {
        elkfw_conf__quote_value(q, sizeof q, s, len);
        return elkfw_conf__fail(p, p->line,
                                "unknown section [%s] (expected [fleet], [node NAME], [resource "
                                "NAME], [semaphore NAME] "
                                "or [agent])",
                                q);
    }
    name = s + (len - name_len);
    while (name_len > 0 && elkfw_conf__is_space(name[0])) {
        name++;
        name_len--;
    }
    elkfw_conf__quote_value(q, sizeof q, name, name_len);
    return p->kind == SEC_NODE ? open_node(p, name, name_len, q)
                               : open_resource(p, name, name_len, q, p->kind == SEC_SEMAPHORE);
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
    if (kd->type == K_IDLIST && !elkfw_conf__idlist_valid(kv->v, kv->vlen)) {
        return elkfw_conf__fail(
            p, p->line,
            "key '%s' in %s: '%s' is not a comma-separated list of user or group names or numeric "
            "ids (letters, digits and . _ -)",
            kv->kq, p->section, kv->vq);
    }
    if (kd->type == K_NAME_ID && !elkfw_name_valid(kv->v, kv->vlen, kd->size - 1)) {
        return elkfw_conf__fail(
            p, p->line, "key '%s' in %s: '%s' is not a valid id (letters, digits and . _ - : / @)",
            kv->kq, p->section, kv->vq);
    }
    if (kd->valid != NULL && !kd->valid(kv->v, kv->vlen)) {
        return elkfw_conf__fail(p, p->line, "key '%s' in %s: '%s' %s", kv->kq, p->section, kv->vq,
                                kd->invalid);
    }
    return ELK_OK;
}

/* K_STR, K_NAME_ID, K_IDLIST: a NUL-terminated copy into a buffer of kd->size bytes. */
static int set_str(parser_t *p, const key_value_t *kv)
{
    int rc;
    if (kv->vlen >= kv->kd->size) {
        return elkfw_conf__fail(p, p->line,
                                "key '%s' in %s: value is %zu bytes long; at most %zu allowed",
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
    if (!elkfw_conf__parse_octal(kv->v, kv->vlen, kv->kd->max, &u)) {
        return elkfw_conf__fail(
            p, p->line, "key '%s' in %s: '%s' is not an octal mode from 0 to 0777 (e.g. 0660)",
            kv->kq, p->section, kv->vq);
    }
    memcpy(kv->dst, &u, sizeof u);
    return ELK_OK;
}

static int set_duration(parser_t *p, const key_value_t *kv)
{
    uint32_t ms;
    if (!elkfw_parse_duration(kv->v, kv->vlen, &ms)) {
        return elkfw_conf__fail(p, p->line,
                                "key '%s' in %s: '%s' is not a duration (use e.g. 500ms or 10s)",
                                kv->kq, p->section, kv->vq);
    }
    if (ms < kv->kd->min || ms > kv->kd->max) {
        return elkfw_conf__fail(p, p->line, "key '%s' in %s: %s is out of range (%lums to %lums)",
                                kv->kq, p->section, kv->vq, (unsigned long)kv->kd->min,
                                (unsigned long)kv->kd->max);
    }
    memcpy(kv->dst, &ms, sizeof ms);
    return ELK_OK;
}

/* K_U32 (stored as uint32_t) and K_PORT (uint16_t). */
static int set_number(parser_t *p, const key_value_t *kv)
{
    uint32_t u;
    if (!elkfw_conf__parse_u32(kv->v, kv->vlen, &u) || u < kv->kd->min || u > kv->kd->max) {
        return elkfw_conf__fail(
            p, p->line, "key '%s' in %s: '%s' is not a whole number from %lu to %lu", kv->kq,
            p->section, kv->vq, (unsigned long)kv->kd->min, (unsigned long)kv->kd->max);
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
    int b = elkfw_conf__parse_bool(kv->v, kv->vlen);
    if (b < 0) {
        return elkfw_conf__fail(
            p, p->line,
            "key '%s' in %s: '%s' is not on or off (use on/off, yes/no, true/false, 1/0)", kv->kq,
            p->section, kv->vq);
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

/* K_ENUM: the choice's index plus the key's enum_base (log levels: the ELK_LOG_ value). */
static int set_enum(parser_t *p, const key_value_t *kv)
{
    const char *const *choices = kv->kd->choices;
    char list[96];
    int idx;
    for (idx = 0; choices[idx] != NULL; idx++) {
        if (strlen(choices[idx]) == kv->vlen && memcmp(choices[idx], kv->v, kv->vlen) == 0) {
            int val = kv->kd->enum_base + idx;
            memcpy(kv->dst, &val, sizeof val);
            return ELK_OK;
        }
    }
    choices_list(choices, list, sizeof list);
    return elkfw_conf__fail(p, p->line, "key '%s' in %s: '%s' is not one of: %s", kv->kq,
                            p->section, kv->vq, list);
}

static int set_fraction(parser_t *p, const key_value_t *kv)
{
    uint32_t ppm;
    if (!elkfw_conf__parse_fraction(kv->v, kv->vlen, &ppm)) {
        return elkfw_conf__fail(
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
        return elkfw_conf__fail(p, p->line,
                                "unknown key '%s' in %s (did you mean '%s'? see elkd.conf(5))", kq,
                                p->section, guess);
    }
    return elkfw_conf__fail(p, p->line,
                            "unknown key '%s' in %s (the keys of each section: elkd.conf(5))", kq,
                            p->section);
}

static int set_key(parser_t *p, const char *k, size_t klen, const char *v, size_t vlen)
{
    key_value_t kv;
    char kq[48], vq[64];
    int i;

    elkfw_conf__quote_value(kq, sizeof kq, k, klen);
    if (p->kind == SEC_NONE) {
        return elkfw_conf__fail(
            p, p->line, "key '%s' outside any section (start with [fleet], [node NAME], ...)", kq);
    }
    i = find_key(p, k, klen);
    if (i < 0) {
        return unknown_key(p, k, klen, kq);
    }
    if (p->seen & (1u << i)) {
        return elkfw_conf__fail(p, p->line, "key '%s' in %s is set twice (first on line %d)", kq,
                                p->section, p->seen_line[i]);
    }
    p->seen |= 1u << i;
    p->seen_line[i] = p->line;
    if (p->keys[i].line_at != 0) { /* a key whole-file checks and later lookups name */
        memcpy((uint8_t *)p->obj + p->keys[i].line_at - 1u, &p->line, sizeof p->line);
    }
    elkfw_conf__quote_value(vq, sizeof vq, v, vlen);
    kv.kd = &p->keys[i];
    kv.kq = kq;
    kv.vq = vq;
    kv.v = v;
    kv.vlen = vlen;
    kv.dst = (uint8_t *)p->obj + kv.kd->offset;
    if ((size_t)kv.kd->type < NKEYS(key_setters) && key_setters[kv.kd->type] != NULL) {
        return key_setters[kv.kd->type](p, &kv);
    }
    return elkfw_conf__fail(p, p->line, "internal error on key '%s'", kq);
}

/* Narrow [*b, *e) past the spaces at both ends. */
static void trim(const char *line, size_t *b, size_t *e)
{
    while (*b < *e && elkfw_conf__is_space(line[*b])) {
        (*b)++;
    }
    while (*e > *b && elkfw_conf__is_space(line[*e - 1])) {
        (*e)--;
    }
}

/* "[ name ]" in line[b..e), which starts with '['. */
static int section_line(parser_t *p, const char *line, size_t b, size_t e)
{
    size_t sb = b + 1, se;
    if (line[e - 1] != ']') {
        p->skip_section = true;
        return elkfw_conf__fail(
            p, p->line, "section header is not closed: expected ']' at the end of the line");
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
        elkfw_conf__quote_value(q, sizeof q, line + b, e - b);
        return elkfw_conf__fail(p, p->line, "'%s' is not 'key = value' or a [section]", q);
    }
    ke = (size_t)(eq - line);
    vb = ke + 1;
    while (ke > kb && elkfw_conf__is_space(line[ke - 1])) {
        ke--;
    }
    while (vb < ve && elkfw_conf__is_space(line[vb])) {
        vb++;
    }
    if (ke == kb) {
        return elkfw_conf__fail(p, p->line, "missing key name before '='");
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
        return elkfw_conf__fail(p, p->line, "line contains a NUL byte (is this a text file?)");
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
    elkfw_conf_free(c);
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
    rc = elkfw_conf__check_conf(&p);
    return rc == ELK_OK ? elkfw_conf__expand_semaphores(&p) : rc;
}
