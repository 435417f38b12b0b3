/* SPDX-License-Identifier: MIT */
/*
 * General RESP2/RESP3 parser: a resumable state machine over the reader's buffer.
 *
 * r->pos is the first byte of the element being parsed, r->scan is where the CR LF
 * search goes on, and a bulk body is waited for by offset (r->body_end) without
 * looking at its bytes, so every byte is looked at a bounded number of times however
 * the stream is fragmented. Each element is one step: its header line (type byte,
 * then text or a number), then what its type does with it: a line item is a whole
 * value, a bulk item waits for its body, an aggregate opens a frame its children
 * fill. A finished value is counted in the frames it completes.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/resp.h"
#include "resp_internal.h"
#include "resp_lex.h"
#include "resp_word.h"

/* Longest line a number can take: "-9223372036854775808" is 20 characters. */
#define ELK_RESP_NUM_MAX 20u
/* Smallest encoding of any value ("_\r\n", "+\r\n"): bounds how many children fit. */
#define ELK_RESP_MIN_VALUE 3u

/* What a step did, besides 0 (more bytes needed) and errors (< 0). */
#define ELK_RESP_STEP_VALUE 1 /* a value is complete: count it in its parent */
#define ELK_RESP_STEP_ATTR 2  /* an empty attribute: annotates what follows, counts as nothing */
#define ELK_RESP_STEP_OPEN 3  /* an aggregate or a bulk body is open: go on */

/* Per type byte: 0 = not a RESP type, otherwise the longest line content the type may
 * have before its CR LF, plus one (ELK_RESP_LINE_ANY: unbounded). A short bound lets
 * "$99999..." with no CR LF fail at once instead of filling the buffer. */
#define ELK_RESP_LINE_ANY 0xffu
#define ELK_RESP_LINE_NUM (ELK_RESP_NUM_MAX + 1u)
static const uint8_t elk_resp_line_limit[256] = {
    ['+'] = ELK_RESP_LINE_ANY,
    ['-'] = ELK_RESP_LINE_ANY,
    [','] = ELK_RESP_LINE_ANY,
    ['('] = ELK_RESP_LINE_ANY,
    ['_'] = 1,
    ['#'] = 2,
    [':'] = ELK_RESP_LINE_NUM,
    ['$'] = ELK_RESP_LINE_NUM,
    ['*'] = ELK_RESP_LINE_NUM,
    ['!'] = ELK_RESP_LINE_NUM,
    ['='] = ELK_RESP_LINE_NUM,
    ['%'] = ELK_RESP_LINE_NUM,
    ['~'] = ELK_RESP_LINE_NUM,
    ['|'] = ELK_RESP_LINE_NUM,
    ['>'] = ELK_RESP_LINE_NUM,
};

/* Canonical decimal int64 in [p, e): optional '-', no '+', no leading zeros, no "-0",
 * exact int64 limits. */
static int elk_resp_parse_i64(const uint8_t *p, const uint8_t *e, int64_t *out)
{
    bool neg = false;
    uint64_t acc = 0;
    uint64_t limit = (uint64_t)INT64_MAX;
    if (p < e && *p == '-') {
        neg = true;
        limit += 1u;
        p++;
    }
    /* 19 digits cannot overflow a uint64 (10^19 - 1 < 2^64), so the range is checked
     * once at the end rather than with a division per digit. */
    if (p == e || e - p > 19 || (*p == '0' && (e - p > 1 || neg))) {
        return ELK_E_RESP_LENGTH;
    }
    for (; p < e; p++) {
        unsigned d = (unsigned)*p - (unsigned)'0';
        if (d > 9u) {
            return ELK_E_RESP_LENGTH;
        }
        acc = acc * 10u + d;
    }
    if (acc > limit) {
        return ELK_E_RESP_LENGTH;
    }
    if (!neg) {
        *out = (int64_t)acc;
    } else if (acc == (uint64_t)INT64_MAX + 1u) {
        *out = INT64_MIN;
    } else {
        *out = -(int64_t)acc;
    }
    return ELK_OK;
}

/* The line of the element at pos: returns 1 with *line_end set (offset of its CR), 0
 * when the CR LF has not arrived yet, or an error. Resumes at r->scan so no byte is
 * looked at twice. */
static int elk_resp_find_line(elk_resp_reader_t *r, size_t pos, size_t *line_end)
{
    const uint8_t *buf = r->buf;
    size_t len = r->len;
    size_t i = r->scan > pos ? r->scan : pos + 1u;
    size_t limit = elk_resp_line_limit[buf[pos]];
    size_t stop = len;
    bool bounded = false;
    if (limit != ELK_RESP_LINE_ANY && pos + 1u + limit <= len) {
        /* The CR must be at pos + limit at the latest. */
        stop = pos + 1u + limit;
        bounded = true;
    }
    i = elk_resp_find_crlf(buf, i, stop);
    if (i == stop) {
        r->scan = i;
        if (bounded) {
            return buf[pos] == '_' || buf[pos] == '#' ? ELK_E_RESP_PROTOCOL : ELK_E_RESP_LENGTH;
        }
        return 0;
    }
    if (buf[i] == '\n') {
        return ELK_E_RESP_PROTOCOL; /* bare LF: only CR LF ends a line */
    }
    if (i + 1u >= len) {
        r->scan = i; /* look at this CR again once its LF can be there */
        return 0;
    }
    if (buf[i + 1u] != '\n') {
        return ELK_E_RESP_PROTOCOL;
    }
    *line_end = i;
    return 1;
}

/* The header line of the element at pos (pos < r->len): *cr gets the offset of its CR
 * and, for the types that carry a number (lengths, counts, integers), *v its value.
 * Returns 1, 0 when more bytes are needed, or an error. */
static int elk_resp_header(elk_resp_reader_t *r, size_t pos, size_t *cr, int64_t *v)
{
    const uint8_t *buf = r->buf;
    uint8_t limit = elk_resp_line_limit[buf[pos]];
    uint64_t u;
    int rc;
    if (limit == 0u) {
        return ELK_E_RESP_PROTOCOL;
    }
    if (limit == ELK_RESP_LINE_NUM) {
        /* Short canonical numbers whose line is all there, without the line search. */
        size_t e = elk_resp_scan_uint(buf, pos + 1u, r->len, &u);
        if (e != 0u) {
            *cr = e;
            *v = (int64_t)u; /* below 10^16 */
            return 1;
        }
    }
    rc = elk_resp_find_line(r, pos, cr);
    if (rc != 1 || limit != ELK_RESP_LINE_NUM) {
        return rc;
    }
    rc = elk_resp_parse_i64(buf + pos + 1u, buf + *cr, v);
    return rc == ELK_OK ? 1 : rc;
}

/* A value whole on its line: + - : _ # , (. */
static int elk_resp_line_item(elk_resp_node_t *n, uint8_t t, const uint8_t *line, size_t line_len,
                              int64_t v)
{
    switch (t) {
    case '+':
        elk_resp_node_set(n, ELK_RESP_SIMPLE, line, line_len, 0);
        break;
    case '-':
        elk_resp_node_set(n, ELK_RESP_ERROR, line, line_len, 0);
        break;
    case ':':
        elk_resp_node_set(n, ELK_RESP_INTEGER, NULL, 0, v);
        break;
    case '_':
        elk_resp_node_set(n, ELK_RESP_NULL, NULL, 0, 0);
        break;
    case '#':
        if (line_len != 1u || (line[0] != 't' && line[0] != 'f')) {
            return ELK_E_RESP_PROTOCOL;
        }
        elk_resp_node_set(n, ELK_RESP_BOOLEAN, NULL, 0, line[0] == 't' ? 1 : 0);
        break;
    case ',':
        if (!elk_resp_lex_double(line, line_len)) {
            return ELK_E_RESP_PROTOCOL;
        }
        elk_resp_node_set(n, ELK_RESP_DOUBLE, line, line_len, 0);
        break;
    default: /* '(' */
        if (!elk_resp_lex_bignum(line, line_len)) {
            return ELK_E_RESP_PROTOCOL;
        }
        elk_resp_node_set(n, ELK_RESP_BIGNUM, line, line_len, 0);
        break;
    }
    return ELK_RESP_STEP_VALUE;
}

/* A length-prefixed value ($ ! =) whose header ends before body: its body is then
 * waited for by offset (elk_resp_body). */
static int elk_resp_bulk_item(elk_resp_reader_t *r, elk_resp_node_t *n, uint8_t t, int64_t v,
                              size_t body)
{
    if (v == -1 && t == '$') {
        elk_resp_node_set(n, ELK_RESP_NULL_BULK, NULL, 0, 0);
        return ELK_RESP_STEP_VALUE;
    }
    if (v < 0) {
        return ELK_E_RESP_LENGTH;
    }
    /* Known now, not after the buffer fills: the body cannot fit. */
    if ((uint64_t)v > UINT32_MAX || (uint64_t)v + 2u > (uint64_t)(r->cap - (body - r->start))) {
        return ELK_E_RESP_TOO_LARGE;
    }
    elk_resp_node_set(
        n, t == '$' ? ELK_RESP_BULK : (t == '!' ? ELK_RESP_BLOB_ERROR : ELK_RESP_VERBATIM),
        r->buf + body, (size_t)v, 0);
    r->in_body = true;
    r->body_end = body + (size_t)v;
    return ELK_RESP_STEP_OPEN;
}

/* The body of the last bulk value, once it and its CR LF are all there (*pos then
 * moves past them). */
static int elk_resp_body(elk_resp_reader_t *r, size_t *pos)
{
    size_t e = r->body_end;
    elk_resp_node_t *n;
    if (e > r->len || r->len - e < 2u) {
        return 0;
    }
    if (r->buf[e] != '\r' || r->buf[e + 1u] != '\n') {
        return ELK_E_RESP_LENGTH; /* the body is longer than its declared length */
    }
    r->in_body = false;
    n = &r->nodes[r->n_nodes - 1u];
    if (n->type == ELK_RESP_VERBATIM) {
        int rc = elk_resp_lex_verbatim(n);
        if (rc != ELK_OK) {
            return rc;
        }
    }
    *pos = e + 2u;
    r->scan = *pos;
    return ELK_RESP_STEP_VALUE;
}

static uint8_t elk_resp_aggregate_type(uint8_t t)
{
    switch (t) {
    case '*':
        return ELK_RESP_ARRAY;
    case '~':
        return ELK_RESP_SET;
    case '>':
        return ELK_RESP_PUSH;
    case '%':
        return ELK_RESP_MAP;
    default:
        return ELK_RESP_ATTRIBUTE;
    }
}

/* An aggregate (* ~ > % |) of v elements whose first child starts at next: opens a
 * frame for its children unless it has none. */
static int elk_resp_aggregate_item(elk_resp_reader_t *r, elk_resp_node_t *n, uint8_t t, int64_t v,
                                   size_t next)
{
    uint64_t children;
    elk_resp_frame_t *f;
    if (v == -1 && t == '*') {
        elk_resp_node_set(n, ELK_RESP_NULL_ARRAY, NULL, 0, 0);
        return ELK_RESP_STEP_VALUE;
    }
    if (v < 0) {
        return ELK_E_RESP_LENGTH;
    }
    if (r->depth >= r->max_depth) {
        return ELK_E_RESP_TOO_DEEP;
    }
    children = (uint64_t)v;
    if (t == '%' || t == '|') {
        if (children > UINT64_MAX / 2u) {
            return ELK_E_RESP_TOO_MANY_NODES;
        }
        children *= 2u;
    }
    if (children > (uint64_t)(r->max_nodes - r->n_nodes)) {
        return ELK_E_RESP_TOO_MANY_NODES;
    }
    if (children > (uint64_t)((r->cap - (next - r->start)) / ELK_RESP_MIN_VALUE)) {
        return ELK_E_RESP_TOO_LARGE;
    }
    elk_resp_node_set(n, elk_resp_aggregate_type(t), NULL, 0, (int64_t)children);
    if (children == 0u) {
        return t == '|' ? ELK_RESP_STEP_ATTR : ELK_RESP_STEP_VALUE;
    }
    f = &r->stack[r->depth++];
    f->node = (uint32_t)(r->n_nodes - 1u);
    f->remaining = (uint32_t)children;
    f->attribute = t == '|' ? 1u : 0u;
    return ELK_RESP_STEP_OPEN;
}

/* The element whose type byte is at *pos: reads its header, takes a node and lets its
 * kind of item go on. *pos moves past the header once it is all there. */
static int elk_resp_item(elk_resp_reader_t *r, size_t *pos)
{
    size_t cr = 0;
    size_t next;
    int64_t v = 0;
    uint8_t t;
    elk_resp_node_t *n;
    int rc;
    if (*pos >= r->len) {
        return 0;
    }
    rc = elk_resp_header(r, *pos, &cr, &v);
    if (rc != 1) {
        return rc;
    }
    if (r->n_nodes >= r->max_nodes) {
        return ELK_E_RESP_TOO_MANY_NODES;
    }
    n = &r->nodes[r->n_nodes++];
    t = r->buf[*pos];
    next = cr + 2u;
    if (t == '$' || t == '!' || t == '=') {
        rc = elk_resp_bulk_item(r, n, t, v, next);
        *pos = next;
        if (rc == ELK_RESP_STEP_OPEN) {
            return rc; /* r->scan stays: the body is waited for by offset */
        }
    } else if (elk_resp_line_limit[t] == ELK_RESP_LINE_NUM && t != ':') {
        rc = elk_resp_aggregate_item(r, n, t, v, next);
        *pos = next;
    } else {
        rc = elk_resp_line_item(n, t, r->buf + *pos + 1u, cr - *pos - 1u, v);
        *pos = next;
    }
    r->scan = next;
    return rc;
}

/* A value is done: count it in its parent, closing every aggregate it fills. An
 * attribute is not an element of anything: it only annotates what follows. Returns
 * true when that completes the reply. */
static bool elk_resp_complete(elk_resp_reader_t *r, bool is_attr)
{
    while (!is_attr) {
        elk_resp_frame_t *f;
        if (r->depth == 0u) {
            return true;
        }
        f = &r->stack[r->depth - 1u];
        if (--f->remaining != 0u) {
            return false;
        }
        r->nodes[f->node].subtree = (uint32_t)(r->n_nodes - f->node - 1u);
        is_attr = f->attribute != 0u;
        r->depth--;
    }
    return false;
}

int elk_resp__parse(elk_resp_reader_t *r)
{
    size_t pos = r->pos;
    for (;;) {
        int rc = r->in_body ? elk_resp_body(r, &pos) : elk_resp_item(r, &pos);
        if (rc <= 0) {
            if (rc == 0) {
                r->pos = pos;
            }
            return rc;
        }
        if (rc != ELK_RESP_STEP_OPEN && elk_resp_complete(r, rc == ELK_RESP_STEP_ATTR)) {
            r->pos = pos;
            return 1;
        }
    }
}
