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
    if (!elkfw_name_valid(w, wl, name_max)) {
        *why = "resource name may hold only letters, digits and . _ - : / @";
        return ELK_E_NAME_INVALID;
    }
    return ELK_OK;
}

/* The resource word of a request, checked and copied into req->resource. */
static int take_resource(const char *arg, size_t al, size_t name_max, elkfw_ctl_req_t *req, const char **why)
{
    int rc = check_name(arg, al, name_max, why);
    if (rc == ELK_OK) {
        memcpy(req->resource, arg, al);
        req->resource[al] = '\0';
    }
    return rc;
}

int elkfw_ctl_parse_request(const char *line, size_t len, size_t name_max, elkfw_ctl_req_t *req,
                            const char **why)
{
    const char *unused_why; /* where *why goes when the caller does not want it */
    const char *p, *end, *w, *arg;
    size_t wl, al;
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
    if (len + 1 > ELK_CTL_LINE_MAX) {
        *why = "request line too long";
        return ELK_E_CTL_TOO_LONG;
    }
    if (memchr(line, '\0', len) != NULL || memchr(line, '\n', len) != NULL || memchr(line, '\r', len) != NULL) {
        *why = "control characters in the request";
        return ELK_E_CTL_SYNTAX;
    }
    p = line;
    end = line + len;
    if (!next_word(&p, end, &w, &wl)) {
        *why = "empty request";
        return ELK_E_CTL_SYNTAX;
    }
    if (word_is(w, wl, "ACQUIRE") || word_is(w, wl, "RELEASE")) {
        bool acquire = word_is(w, wl, "ACQUIRE");
        req->cmd = acquire ? ELKFW_CTL_ACQUIRE : ELKFW_CTL_RELEASE;
        if (!next_word(&p, end, &arg, &al)) {
            *why = acquire ? "usage: ACQUIRE <resource> [<wait>]" : "usage: RELEASE <resource>";
            return ELK_E_CTL_SYNTAX;
        }
        rc = take_resource(arg, al, name_max, req, why);
        if (rc != ELK_OK) {
            return rc;
        }
        if (acquire && next_word(&p, end, &w, &wl)) {
            if (!elkfw_parse_duration(w, wl, &req->wait_ms)) {
                *why = "wait must be a duration: milliseconds, or e.g. 500ms or 10s";
                return ELK_E_CTL_SYNTAX;
            }
        }
    } else if (word_is(w, wl, "SUPERVISE")) {
        uint64_t pgid;
        req->cmd = ELKFW_CTL_SUPERVISE;
        if (!next_word(&p, end, &arg, &al) || !next_word(&p, end, &w, &wl)) {
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
    } else if (word_is(w, wl, "STATUS")) {
        req->cmd = ELKFW_CTL_STATUS;
        if (next_word(&p, end, &w, &wl)) {
            if (!word_is(w, wl, "JSON") && !word_is(w, wl, "METRICS")) {
                *why = "usage: STATUS [JSON|METRICS]";
                return ELK_E_CTL_SYNTAX;
            }
            req->cmd = word_is(w, wl, "JSON") ? ELKFW_CTL_STATUS_JSON : ELKFW_CTL_STATUS_METRICS;
        }
    } else if (word_is(w, wl, "PING")) {
        req->cmd = ELKFW_CTL_PING;
    } else if (word_is(w, wl, "HELP")) {
        req->cmd = ELKFW_CTL_HELP;
    } else if (word_is(w, wl, "QUIT")) {
        req->cmd = ELKFW_CTL_QUIT;
    } else {
        req->cmd = 0;
        *why = "commands: ACQUIRE RELEASE SUPERVISE STATUS PING HELP QUIT";
        return ELK_E_CTL_UNKNOWN;
    }
    if (next_word(&p, end, &w, &wl)) {
        memset(req, 0, sizeof *req);
        *why = "unexpected extra words after the command";
        return ELK_E_CTL_SYNTAX;
    }
    return ELK_OK;
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

int elkfw_ctl_parse_reply(const char *line, size_t len, elkfw_ctl_msg_t *m)
{
    const char *p, *end, *w;
    size_t wl;
    uint64_t v;

    if (line == NULL || m == NULL) {
        return ELK_E_CTL_SYNTAX;
    }
    memset(m, 0, sizeof *m);
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    p = line;
    end = line + len;
    if (!next_word(&p, end, &w, &wl)) {
        return ELK_E_CTL_SYNTAX;
    }
    if (word_is(w, wl, "OK")) {
        m->kind = ELKFW_MSG_OK;
    } else if (word_is(w, wl, "ERR")) {
        m->kind = ELKFW_MSG_ERR;
        if (!next_word(&p, end, &w, &wl) || !copy_word(m->code, sizeof m->code, w, wl)) {
            return ELK_E_CTL_SYNTAX;
        }
        rest_of_line(p, end, m);
        return ELK_OK;
    } else if (word_is(w, wl, "EVENT")) {
        m->kind = ELKFW_MSG_EVENT;
    } else {
        return ELK_E_CTL_SYNTAX;
    }
    if (!next_word(&p, end, &w, &wl) || !copy_word(m->word, sizeof m->word, w, wl)) {
        return ELK_E_CTL_SYNTAX;
    }
    if (strcmp(m->word, "ACQUIRED") == 0 || strcmp(m->word, "RENEWED") == 0) {
        if (!next_word(&p, end, &w, &wl) || !elkfw_name_valid(w, wl, ELKFW_NAME_MAX - 1)) {
            return ELK_E_CTL_SYNTAX;
        }
        copy_word(m->resource, sizeof m->resource, w, wl);
        if (!next_word(&p, end, &w, &wl) || !parse_u64(w, wl, &m->token)) {
            return ELK_E_CTL_SYNTAX;
        }
        if (!next_word(&p, end, &w, &wl) || !parse_u64(w, wl, &v) || v > UINT32_MAX) {
            return ELK_E_CTL_SYNTAX;
        }
        m->deadline_ms = (uint32_t)v;
        /* optional: the resource's stop margin */
        if (next_word(&p, end, &w, &wl)) {
            if (!parse_u64(w, wl, &v) || v > UINT32_MAX) {
                return ELK_E_CTL_SYNTAX;
            }
            m->stop_margin_ms = (uint32_t)v;
        }
        /* optional key=value words after the positional fields. Unknown keys are skipped so
         * a newer elkd can add fields without breaking this parser; a bare word is still an
         * error, so a garbled line is not taken for a grant. */
        while (next_word(&p, end, &w, &wl)) {
            static const char dk[] = "deadline_boottime_ms=";
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
    } else if (strcmp(m->word, "RELEASED") == 0 || strcmp(m->word, "LOST") == 0 ||
               strcmp(m->word, "SUPERVISED") == 0 || strcmp(m->word, "RENEW_STOPPED") == 0) {
        if (!next_word(&p, end, &w, &wl) || !elkfw_name_valid(w, wl, ELKFW_NAME_MAX - 1)) {
            return ELK_E_CTL_SYNTAX;
        }
        copy_word(m->resource, sizeof m->resource, w, wl);
        if (next_word(&p, end, &w, &wl) && !copy_word(m->code, sizeof m->code, w, wl)) {
            return ELK_E_CTL_SYNTAX;
        }
        /* LOST: optional ms left before the lease can have expired anywhere */
        if (next_word(&p, end, &w, &wl)) {
            if (!parse_u64(w, wl, &v) || v > UINT32_MAX) {
                return ELK_E_CTL_SYNTAX;
            }
            m->stop_margin_ms = (uint32_t)v;
        }
    } else if (strcmp(m->word, "STATUS") == 0) {
        if (!next_word(&p, end, &w, &wl) || !parse_u64(w, wl, &v) || v > 100000u) {
            return ELK_E_CTL_SYNTAX;
        }
        m->count = (uint32_t)v;
    } else {
        /* PONG, JSON {...}, SHUTDOWN, HELP text, BYE: the rest is free text. */
        rest_of_line(p, end, m);
        return ELK_OK;
    }
    if (next_word(&p, end, &w, &wl)) {
        return ELK_E_CTL_SYNTAX;
    }
    return ELK_OK;
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
        if (!skip && elkfw_ctl_parse_request(lb->buf + pos, (size_t)(nl - (lb->buf + pos)), name_max, &req, &why) ==
                         ELK_OK &&
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
