/* SPDX-License-Identifier: MIT */
/* elkd control protocol: pure parsers for requests and replies, and a line assembler. */
#define _GNU_SOURCE
#include "elkfw/ctl.h"

#include <string.h>
#include <strings.h>

/* Split the next space-separated word; returns false when no word is left. */
static bool next_word(const char **p, const char *end, const char **w, size_t *wl)
{
    const char *s = *p;
    while (s < end && (*s == ' ' || *s == '\t')) {
        s++;
    }
    if (s == end) {
        *p = s;
        return false;
    }
    *w = s;
    while (s < end && *s != ' ' && *s != '\t') {
        s++;
    }
    *wl = (size_t)(s - *w);
    *p = s;
    return true;
}

static bool word_is(const char *w, size_t wl, const char *lit)
{
    return strlen(lit) == wl && strncasecmp(w, lit, wl) == 0;
}

static bool parse_u64(const char *w, size_t wl, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;
    if (wl == 0 || wl > 20) {
        return false;
    }
    for (i = 0; i < wl; i++) {
        uint64_t d;
        if (w[i] < '0' || w[i] > '9') {
            return false;
        }
        d = (uint64_t)(w[i] - '0');
        if (v > (UINT64_MAX - d) / 10u) {
            return false;
        }
        v = v * 10u + d;
    }
    *out = v;
    return true;
}

static int check_name(const char *w, size_t wl, size_t name_max, const char **why)
{
    if (name_max > ELKFW_NAME_MAX - 1) {
        name_max = ELKFW_NAME_MAX - 1;
    }
    if (wl > name_max) {
        *why = "resource name too long for CONFIG_ELK_MAX_KEY_LEN and the key prefix";
        return ELK_E_NAME_TOO_LONG;
    }
    if (!elkfw_lease_name_valid(w, wl, name_max)) {
        *why = "resource name may hold only letters, digits and . _ - : / @ (a semaphore's "
               "permit: NAME#k)";
        return ELK_E_NAME_INVALID;
    }
    return ELK_OK;
}

/* The resource word of a request, checked and copied into req->resource. */
static int take_resource(const char *arg, size_t al, size_t name_max, elkfw_ctl_req_t *req,
                         const char **why)
{
    int rc = check_name(arg, al, name_max, why);
    if (rc == ELK_OK) {
        memcpy(req->resource, arg, al);
        req->resource[al] = '\0';
    }
    return rc;
}

/* The words of a line not yet read. */
typedef struct ctl_cursor {
    const char *p, *end;
} ctl_cursor_t;

static bool cur_word(ctl_cursor_t *c, const char **w, size_t *wl)
{
    return next_word(&c->p, c->end, w, wl);
}

/* ACQUIRE's words after the resource: [<wait>] [keepalive=<interval>]. A word that is
 * neither is left for the caller, which refuses extra words. */
static int req_acquire_options(ctl_cursor_t *c, elkfw_ctl_req_t *req, const char **why)
{
    static const char ka[] = "keepalive=";
    const size_t kl = sizeof ka - 1;
    bool wait_seen = false, ka_seen = false;
    const char *w;
    size_t wl;
    for (;;) {
        const char *before = c->p;
        if (!cur_word(c, &w, &wl)) {
            return ELK_OK;
        }
        if (!ka_seen && wl >= kl && strncasecmp(w, ka, kl) == 0) {
            if (!elkfw_parse_duration(w + kl, wl - kl, &req->keepalive_ms)) {
                *why = "keepalive must be a duration: keepalive=<ms>, or e.g. keepalive=2s";
                return ELK_E_CTL_SYNTAX;
            }
            ka_seen = true;
        } else if (!wait_seen && !ka_seen && memchr(w, '=', wl) == NULL) {
            if (!elkfw_parse_duration(w, wl, &req->wait_ms)) {
                *why = "wait must be a duration: milliseconds, or e.g. 500ms or 10s";
                return ELK_E_CTL_SYNTAX;
            }
            wait_seen = true;
        } else if (memchr(w, '=', wl) != NULL && !ka_seen) {
            *why = "usage: ACQUIRE <resource> [<wait>] [keepalive=<interval>]";
            return ELK_E_CTL_SYNTAX;
        } else {
            c->p = before; /* not ours: the caller refuses it */
            return ELK_OK;
        }
    }
}

/* ACQUIRE <resource> [<wait>] [keepalive=<interval>], RELEASE <resource> and KEEPALIVE
 * <resource>: req->cmd says which. */
static int req_resource_args(ctl_cursor_t *c, size_t name_max, elkfw_ctl_req_t *req,
                             const char **why)
{
    const char *arg;
    size_t al;
    int rc;
    if (!cur_word(c, &arg, &al)) {
        *why = req->cmd == ELKFW_CTL_ACQUIRE
            ? "usage: ACQUIRE <resource> [<wait>] [keepalive=<interval>]"
            : (req->cmd == ELKFW_CTL_RELEASE ? "usage: RELEASE <resource>"
                                             : "usage: KEEPALIVE <resource>");
        return ELK_E_CTL_SYNTAX;
    }
    rc = take_resource(arg, al, name_max, req, why);
    if (rc != ELK_OK || req->cmd != ELKFW_CTL_ACQUIRE) {
        return rc;
    }
    return req_acquire_options(c, req, why);
}

/* SUPERVISE <resource> <pgid> */
static int req_supervise_args(ctl_cursor_t *c, size_t name_max, elkfw_ctl_req_t *req,
                              const char **why)
{
    const char *arg, *w;
    size_t al, wl;
    uint64_t pgid;
    int rc;
    if (!cur_word(c, &arg, &al) || !cur_word(c, &w, &wl)) {
        *why = "usage: SUPERVISE <resource> <pgid>";
        return ELK_E_CTL_SYNTAX;
    }
    rc = take_resource(arg, al, name_max, req, why);
    if (rc != ELK_OK) {
        return rc;
    }
    /* 0, 1 and -1 would make kill() reach far more than one command's group */
    if (!parse_u64(w, wl, &pgid) || pgid < 2u || pgid > 0x7fffffffu) {
        *why = "pgid must be a process group id from 2 to 2147483647";
        return ELK_E_CTL_SYNTAX;
    }
    req->pgid = (uint32_t)pgid;
    return ELK_OK;
}

/* STATUS [JSON|METRICS] */
static int req_status_args(ctl_cursor_t *c, size_t name_max, elkfw_ctl_req_t *req, const char **why)
{
    const char *w;
    size_t wl;
    (void)name_max;
    if (!cur_word(c, &w, &wl)) {
        return ELK_OK;
    }
    if (!word_is(w, wl, "JSON") && !word_is(w, wl, "METRICS")) {
        *why = "usage: STATUS [JSON|METRICS]";
        return ELK_E_CTL_SYNTAX;
    }
    req->cmd = word_is(w, wl, "JSON") ? ELKFW_CTL_STATUS_JSON : ELKFW_CTL_STATUS_METRICS;
    return ELK_OK;
}

/* PING, HELP, QUIT: no arguments (extra words are refused by the caller). */
static int req_no_args(ctl_cursor_t *c, size_t name_max, elkfw_ctl_req_t *req, const char **why)
{
    (void)c;
    (void)name_max;
    (void)req;
    (void)why;
    return ELK_OK;
}

typedef int (*ctl_req_args_fn)(ctl_cursor_t *c, size_t name_max, elkfw_ctl_req_t *req,
                               const char **why);

/* The request verbs (matched without regard to case) and the parser of their arguments. */
static const struct ctl_verb {
    const char *name;
    elkfw_ctl_cmd_t cmd;
    ctl_req_args_fn args;
} ctl_verbs[] = {
    {"ACQUIRE", ELKFW_CTL_ACQUIRE, req_resource_args},
    {"RELEASE", ELKFW_CTL_RELEASE, req_resource_args},
    {"KEEPALIVE", ELKFW_CTL_KEEPALIVE, req_resource_args},
    {"SUPERVISE", ELKFW_CTL_SUPERVISE, req_supervise_args},
    {"STATUS", ELKFW_CTL_STATUS, req_status_args},
    {"PING", ELKFW_CTL_PING, req_no_args},
    {"HELP", ELKFW_CTL_HELP, req_no_args},
    {"QUIT", ELKFW_CTL_QUIT, req_no_args},
};

static const struct ctl_verb *find_verb(const char *w, size_t wl)
{
    size_t i;
    for (i = 0; i < sizeof ctl_verbs / sizeof ctl_verbs[0]; i++) {
        if (word_is(w, wl, ctl_verbs[i].name)) {
            return &ctl_verbs[i];
        }
    }
    return NULL;
}

/* Line-level checks before any word is read: length and control characters. */
static int check_request_line(const char *line, size_t len, const char **why)
{
    if (len + 1 > ELK_CTL_LINE_MAX) {
        *why = "request line too long";
        return ELK_E_CTL_TOO_LONG;
    }
    if (memchr(line, '\0', len) != NULL || memchr(line, '\n', len) != NULL ||
        memchr(line, '\r', len) != NULL) {
        *why = "control characters in the request";
        return ELK_E_CTL_SYNTAX;
    }
    return ELK_OK;
}

/* The verb and its arguments; nothing may follow them. */
static int parse_request_words(ctl_cursor_t *c, size_t name_max, elkfw_ctl_req_t *req,
                               const char **why)
{
    const struct ctl_verb *verb;
    const char *w;
    size_t wl;
    int rc;
    if (!cur_word(c, &w, &wl)) {
        *why = "empty request";
        return ELK_E_CTL_SYNTAX;
    }
    verb = find_verb(w, wl);
    if (verb == NULL) {
        *why = "commands: ACQUIRE RELEASE KEEPALIVE SUPERVISE STATUS PING HELP QUIT";
        return ELK_E_CTL_UNKNOWN;
    }
    req->cmd = verb->cmd;
    rc = verb->args(c, name_max, req, why);
    if (rc != ELK_OK) {
        return rc;
    }
    if (cur_word(c, &w, &wl)) {
        memset(req, 0, sizeof *req);
        *why = "unexpected extra words after the command";
        return ELK_E_CTL_SYNTAX;
    }
    return ELK_OK;
}

int elkfw_ctl_parse_request(const char *line, size_t len, size_t name_max, elkfw_ctl_req_t *req,
                            const char **why)
{
    const char *unused_why; /* where *why goes when the caller does not want it */
    ctl_cursor_t c;
    int rc;

    if (why == NULL) {
        why = &unused_why;
    }
    *why = "";
    if (line == NULL || req == NULL) {
        *why = "no request";
        return ELK_E_CTL_SYNTAX;
    }
    memset(req, 0, sizeof *req);
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    rc = check_request_line(line, len, why);
    if (rc != ELK_OK) {
        return rc;
    }
    c.p = line;
    c.end = line + len;
    return parse_request_words(&c, name_max, req, why);
}

static bool copy_word(char *dst, size_t cap, const char *w, size_t wl)
{
    if (wl >= cap) {
        return false;
    }
    memcpy(dst, w, wl);
    dst[wl] = '\0';
    return true;
}

/* Rest of the line after one separator, for free text. */
static void rest_of_line(const char *p, const char *end, elkfw_ctl_msg_t *m)
{
    while (p < end && (*p == ' ' || *p == '\t')) {
        p++;
    }
    m->text = p;
    m->text_len = (size_t)(end - p);
}

/* A resource name word into m->resource. */
static bool reply_resource(ctl_cursor_t *c, elkfw_ctl_msg_t *m)
{
    const char *w;
    size_t wl;
    if (!cur_word(c, &w, &wl) || !elkfw_lease_name_valid(w, wl, ELKFW_NAME_MAX - 1)) {
        return false;
    }
    copy_word(m->resource, sizeof m->resource, w, wl);
    return true;
}

/* A decimal word up to max; required or not, as the caller says. */
static bool reply_number(ctl_cursor_t *c, uint64_t max, uint64_t *out)
{
    const char *w;
    size_t wl;
    return cur_word(c, &w, &wl) && parse_u64(w, wl, out) && *out <= max;
}

/* Optional key=value words after a grant's positional fields. Unknown keys are skipped so
 * a newer elkd can add fields without breaking this parser; a bare word is still an
 * error, so a garbled line is not taken for a grant. */
static int reply_grant_options(ctl_cursor_t *c, elkfw_ctl_msg_t *m)
{
    static const char dk[] = "deadline_boottime_ms=";
    const char *w;
    size_t wl;
    uint64_t v;
    while (cur_word(c, &w, &wl)) {
        const char *eq = memchr(w, '=', wl);
        if (eq == NULL || eq == w) {
            return ELK_E_CTL_SYNTAX;
        }
        if (wl >= sizeof dk - 1 && memcmp(w, dk, sizeof dk - 1) == 0) {
            if (!parse_u64(w + sizeof dk - 1, wl - (sizeof dk - 1), &v) || v == 0) {
                return ELK_E_CTL_SYNTAX;
            }
            m->deadline_boottime_ms = v;
        }
    }
    return ELK_OK;
}

/* ACQUIRED, RENEWED, RECOVERED: <resource> <token> <deadline_ms> [<stop_margin_ms>]
 * [key=value ...] */
static int reply_grant(ctl_cursor_t *c, elkfw_ctl_msg_t *m)
{
    const char *w;
    size_t wl;
    uint64_t v;
    if (!reply_resource(c, m) || !reply_number(c, UINT64_MAX, &m->token) ||
        !reply_number(c, UINT32_MAX, &v)) {
        return ELK_E_CTL_SYNTAX;
    }
    m->deadline_ms = (uint32_t)v;
    /* optional: the resource's stop margin */
    if (cur_word(c, &w, &wl)) {
        if (!parse_u64(w, wl, &v) || v > UINT32_MAX) {
            return ELK_E_CTL_SYNTAX;
        }
        m->stop_margin_ms = (uint32_t)v;
    }
    return reply_grant_options(c, m);
}

/* RELEASED, LOST, SUPERVISED, KEEPALIVE, RENEW_STOPPED: <resource> [<CODE_NAME> [<ms>]] */
static int reply_resource_event(ctl_cursor_t *c, elkfw_ctl_msg_t *m)
{
    const char *w;
    size_t wl;
    uint64_t v;
    if (!reply_resource(c, m)) {
        return ELK_E_CTL_SYNTAX;
    }
    if (cur_word(c, &w, &wl) && !copy_word(m->code, sizeof m->code, w, wl)) {
        return ELK_E_CTL_SYNTAX;
    }
    /* LOST: optional ms left before the lease can have expired anywhere */
    if (cur_word(c, &w, &wl)) {
        if (!parse_u64(w, wl, &v) || v > UINT32_MAX) {
            return ELK_E_CTL_SYNTAX;
        }
        m->stop_margin_ms = (uint32_t)v;
    }
    return ELK_OK;
}

/* SUSPECT: <resource> <validity_ms> <CODE_NAME> [key=value ...] */
static int reply_suspect(ctl_cursor_t *c, elkfw_ctl_msg_t *m)
{
    const char *w;
    size_t wl;
    uint64_t v;
    if (!reply_resource(c, m) || !reply_number(c, UINT32_MAX, &v) || !cur_word(c, &w, &wl) ||
        !copy_word(m->code, sizeof m->code, w, wl) || memchr(w, '=', wl) != NULL) {
        return ELK_E_CTL_SYNTAX;
    }
    m->deadline_ms = (uint32_t)v;
    return reply_grant_options(c, m);
}

/* STATUS <count> */
static int reply_status(ctl_cursor_t *c, elkfw_ctl_msg_t *m)
{
    uint64_t v;
    if (!reply_number(c, 100000u, &v)) {
        return ELK_E_CTL_SYNTAX;
    }
    m->count = (uint32_t)v;
    return ELK_OK;
}

/* The reply words with fields, and their parsers; any other word is followed by free text. */
static const struct ctl_reply_word {
    const char *word;
    int (*parse)(ctl_cursor_t *c, elkfw_ctl_msg_t *m);
} ctl_reply_words[] = {
    {"ACQUIRED", reply_grant},
    {"RENEWED", reply_grant},
    {"RECOVERED", reply_grant},
    {"SUSPECT", reply_suspect},
    {"KEEPALIVE", reply_resource_event},
    {"RELEASED", reply_resource_event},
    {"LOST", reply_resource_event},
    {"SUPERVISED", reply_resource_event},
    {"RENEW_STOPPED", reply_resource_event},
    {"STATUS", reply_status},
};

/* After OK or EVENT: the word, its fields, and nothing after them. */
static int parse_reply_word(ctl_cursor_t *c, elkfw_ctl_msg_t *m)
{
    const char *w;
    size_t wl, i;
    int rc;
    if (!cur_word(c, &w, &wl) || !copy_word(m->word, sizeof m->word, w, wl)) {
        return ELK_E_CTL_SYNTAX;
    }
    for (i = 0; i < sizeof ctl_reply_words / sizeof ctl_reply_words[0]; i++) {
        if (strcmp(m->word, ctl_reply_words[i].word) == 0) {
            rc = ctl_reply_words[i].parse(c, m);
            if (rc == ELK_OK && cur_word(c, &w, &wl)) {
                rc = ELK_E_CTL_SYNTAX;
            }
            return rc;
        }
    }
    /* PONG, JSON {...}, SHUTDOWN, HELP text, BYE: the rest is free text. */
    rest_of_line(c->p, c->end, m);
    return ELK_OK;
}

int elkfw_ctl_parse_reply(const char *line, size_t len, elkfw_ctl_msg_t *m)
{
    ctl_cursor_t c;
    const char *w;
    size_t wl;

    if (line == NULL || m == NULL) {
        return ELK_E_CTL_SYNTAX;
    }
    memset(m, 0, sizeof *m);
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    c.p = line;
    c.end = line + len;
    if (!cur_word(&c, &w, &wl)) {
        return ELK_E_CTL_SYNTAX;
    }
    if (word_is(w, wl, "ERR")) {
        m->kind = ELKFW_MSG_ERR;
        if (!cur_word(&c, &w, &wl) || !copy_word(m->code, sizeof m->code, w, wl)) {
            return ELK_E_CTL_SYNTAX;
        }
        rest_of_line(c.p, c.end, m);
        return ELK_OK;
    }
    if (word_is(w, wl, "OK")) {
        m->kind = ELKFW_MSG_OK;
    } else if (word_is(w, wl, "EVENT")) {
        m->kind = ELKFW_MSG_EVENT;
    } else {
        return ELK_E_CTL_SYNTAX;
    }
    return parse_reply_word(&c, m);
}

int elkfw_err_from_name(const char *name)
{
    int code;
    /* The error list is sparse and small: scan the range it uses. */
    for (code = 0; code >= -999; code--) {
        const char *n = elk_err_name(code);
        if (strcmp(n, "ELK_E_UNKNOWN") != 0 && strcmp(n, name) == 0) {
            return code;
        }
    }
    return ELK_E_INTERNAL;
}

void elkfw_linebuf_init(elkfw_linebuf_t *lb, char *buf, size_t cap)
{
    lb->buf = buf;
    lb->cap = cap;
    lb->len = 0;
    lb->consumed = 0;
    lb->overflow = false;
}

static void linebuf_drop(elkfw_linebuf_t *lb)
{
    if (lb->consumed > 0) {
        memmove(lb->buf, lb->buf + lb->consumed, lb->len - lb->consumed);
        lb->len -= lb->consumed;
        lb->consumed = 0;
    }
}

char *elkfw_linebuf_space(elkfw_linebuf_t *lb, size_t *avail)
{
    linebuf_drop(lb);
    *avail = lb->cap - lb->len;
    return lb->buf + lb->len;
}

void elkfw_linebuf_commit(elkfw_linebuf_t *lb, size_t n)
{
    if (n > lb->cap - lb->len) {
        n = lb->cap - lb->len;
    }
    lb->len += n;
}

bool elkfw_linebuf_has_request(const elkfw_linebuf_t *lb, elkfw_ctl_cmd_t cmd, const char *resource,
                               size_t name_max)
{
    size_t pos = lb->consumed;
    bool skip = lb->overflow; /* the tail of an overlong line is no request */
    while (pos < lb->len) {
        const char *nl = memchr(lb->buf + pos, '\n', lb->len - pos);
        elkfw_ctl_req_t req;
        const char *why;
        if (nl == NULL) {
            return false;
        }
        if (!skip &&
            elkfw_ctl_parse_request(lb->buf + pos, (size_t)(nl - (lb->buf + pos)), name_max, &req,
                                    &why) == ELK_OK &&
            req.cmd == cmd && strcmp(req.resource, resource) == 0) {
            return true;
        }
        skip = false;
        pos = (size_t)(nl - lb->buf) + 1u;
    }
    return false;
}

int elkfw_linebuf_next(elkfw_linebuf_t *lb, const char **line, size_t *len)
{
    char *nl;
    linebuf_drop(lb);
    for (;;) {
        nl = memchr(lb->buf, '\n', lb->len);
        if (lb->overflow) {
            /* Discard the tail of an overlong line up to its newline. */
            if (nl == NULL) {
                lb->len = 0;
                return 0;
            }
            lb->consumed = (size_t)(nl - lb->buf) + 1u;
            lb->overflow = false;
            linebuf_drop(lb);
            continue;
        }
        if (nl != NULL) {
            *line = lb->buf;
            *len = (size_t)(nl - lb->buf);
            lb->consumed = *len + 1u;
            return 1;
        }
        if (lb->len == lb->cap) {
            lb->overflow = true;
            lb->len = 0;
            return ELK_E_CTL_TOO_LONG;
        }
        return 0;
    }
}
