/*
 * Incremental RESP2/RESP3 decoder.
 *
 * The reader is a resumable state machine over the caller's buffer: r->pos is the
 * first byte of the element being parsed, r->scan is where the CR LF search goes on,
 * and a bulk body is waited for by offset (r->body_end) without looking at its
 * bytes. So every byte is looked at a bounded number of times however the stream
 * is fragmented. The reply being parsed starts at r->start; release only moves
 * r->start (and r->scan) past the reply, and the bytes still unparsed are moved to the
 * front once, when room is next asked for (space, feed) or the buffer is full. A burst
 * of pipelined replies then costs one memmove of its tail, not one per reply. On
 * 64-bit builds a fast path takes the common replies whole (see below).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elk/resp.h"
#include "resp_lex.h"

/* Longest line a number can take: "-9223372036854775808" is 20 characters. */
#define ELK_RESP_NUM_MAX 20u
/* Smallest encoding of any value ("_\r\n", "+\r\n"): bounds how many children fit. */
#define ELK_RESP_MIN_VALUE 3u

int elk_resp_reader_init(elk_resp_reader_t *r, uint8_t *buf, size_t cap, elk_resp_node_t *nodes,
                         size_t max_nodes, size_t max_depth)
{
    if (r == NULL || buf == NULL || cap == 0u || nodes == NULL || max_nodes == 0u ||
        max_depth == 0u) {
        return ELK_E_INVALID_ARG;
    }
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->cap = cap;
    r->nodes = nodes;
    /* frame.node and node.subtree are 32-bit. */
    r->max_nodes = max_nodes > UINT32_MAX ? UINT32_MAX : max_nodes;
    r->max_depth = max_depth > ELK_RESP_READER_MAX_DEPTH ? ELK_RESP_READER_MAX_DEPTH : max_depth;
    return ELK_OK;
}

void elk_resp_reader_reset(elk_resp_reader_t *r)
{
    if (r == NULL) {
        return;
    }
    r->len = 0;
    r->pos = 0;
    r->scan = 0;
    r->n_nodes = 0;
    r->depth = 0;
    r->error = ELK_OK;
    r->reply_out = false;
    r->in_body = false;
    r->body_end = 0;
    r->start = 0;
}

static bool elk_resp_is_string(uint8_t type)
{
    return type == ELK_RESP_SIMPLE || type == ELK_RESP_ERROR || type == ELK_RESP_BULK ||
           type == ELK_RESP_DOUBLE || type == ELK_RESP_BLOB_ERROR || type == ELK_RESP_VERBATIM ||
           type == ELK_RESP_BIGNUM;
}

/* Move the current reply (its parsed part and the bytes after it) to offset 0, and
 * the views of the nodes parsed so far with it. Not while a reply is out: the
 * caller still reads its views. */
static void elk_resp_compact(elk_resp_reader_t *r)
{
    size_t shift = r->start;
    size_t i;
    if (shift == 0u || r->reply_out) {
        return;
    }
    memmove(r->buf, r->buf + shift, r->len - shift);
    r->len -= shift;
    r->pos -= shift;
    r->scan -= shift;
    if (r->in_body) {
        r->body_end -= shift;
    }
    for (i = 0; i < r->n_nodes; i++) {
        elk_resp_node_t *n = &r->nodes[i];
        if (elk_resp_is_string(n->type) && n->str != NULL) {
            n->str -= shift;
        }
    }
    r->start = 0;
}

uint8_t *elk_resp_reader_space(elk_resp_reader_t *r, size_t *avail)
{
    if (r == NULL || avail == NULL) {
        if (avail != NULL) {
            *avail = 0;
        }
        return NULL;
    }
    elk_resp_compact(r);
    *avail = r->cap - r->len;
    return r->buf + r->len;
}

int elk_resp_reader_commit(elk_resp_reader_t *r, size_t n)
{
    if (r == NULL || n > r->cap - r->len) {
        return ELK_E_INVALID_ARG;
    }
    r->len += n;
    return ELK_OK;
}

int elk_resp_reader_feed(elk_resp_reader_t *r, const uint8_t *data, size_t len)
{
    if (r == NULL || (data == NULL && len != 0u)) {
        return ELK_E_INVALID_ARG;
    }
    /* Reclaim released bytes now, not only when out of room: the buffer then stays at
     * its front, in cache, and the move is only the tail of an unfinished reply. */
    elk_resp_compact(r);
    if (len > r->cap - r->len) {
        return ELK_E_RESP_TOO_LARGE;
    }
    if (len != 0u) {
        memcpy(r->buf + r->len, data, len);
        r->len += len;
    }
    return ELK_OK;
}

void elk_resp_reader_release(elk_resp_reader_t *r)
{
    /* Called once per reply, so it stores as little as it can: n_nodes and depth are
     * already 0 while a reply is out, and pos stands at its end (scan may lag: the
     * fast path leaves it). */
    if (r == NULL || !r->reply_out) {
        return;
    }
    r->reply_out = false;
    if (r->pos == r->len) {
        /* Nothing after the reply: start over at 0 with nothing to move. */
        r->len = 0;
        r->start = 0;
        r->pos = 0;
        r->scan = 0;
    } else {
        r->start = r->pos;
        r->scan = r->pos;
    }
}

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

#if defined(__GNUC__)
#define ELK_RESP_NOINLINE __attribute__((noinline))
#else
#define ELK_RESP_NOINLINE
#endif

/* Per type byte: 0 = not a RESP type, otherwise the longest line content the type may
 * have before its CR LF, plus one (ELK_RESP_LINE_ANY: unbounded). A short bound lets
 * "$99999..." with no CR LF fail at once instead of filling the buffer. */
#define ELK_RESP_LINE_ANY 0xffu
static const uint8_t elk_resp_line_limit[256] = {
    ['+'] = ELK_RESP_LINE_ANY, ['-'] = ELK_RESP_LINE_ANY,
    [','] = ELK_RESP_LINE_ANY, ['('] = ELK_RESP_LINE_ANY,
    ['_'] = 1, ['#'] = 2,
    [':'] = ELK_RESP_NUM_MAX + 1u, ['$'] = ELK_RESP_NUM_MAX + 1u, ['*'] = ELK_RESP_NUM_MAX + 1u,
    ['!'] = ELK_RESP_NUM_MAX + 1u, ['='] = ELK_RESP_NUM_MAX + 1u, ['%'] = ELK_RESP_NUM_MAX + 1u,
    ['~'] = ELK_RESP_NUM_MAX + 1u, ['|'] = ELK_RESP_NUM_MAX + 1u, ['>'] = ELK_RESP_NUM_MAX + 1u,
};

#if ELK_RESP_WIDE
/* Eight bytes as a little-endian word whatever the CPU's byte order (compilers turn
 * this into one load where the order matches). */
static inline uint64_t elk_resp_load8(const uint8_t *p)
{
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
           ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

/* Index (0..7) of the first byte whose bit 7 is set in m (only bits 7 of bytes may be
 * set), or 8 if none; no branch and no count-trailing-zeros instruction needed. */
static inline unsigned elk_resp_first_flagged(uint64_t m)
{
    uint64_t low = m & (0u - m);
    return (unsigned)(((((low >> 7) - 1u) & 0x0101010101010101u) * 0x0101010101010101u) >> 56);
}

/* How many of the word's bytes, from the first, are ASCII digits (0..8). Done on all
 * eight at once: a loop that stops at the first non-digit mispredicts its exit for
 * almost every number, and that costs more than the rest of the parse. */
static inline unsigned elk_resp_digit_run(uint64_t w)
{
    uint64_t d = w ^ 0x3030303030303030u; /* a digit becomes 0..9, anything else not */
    return elk_resp_first_flagged(
        (((d & 0x7F7F7F7F7F7F7F7Fu) + 0x7676767676767676u) | d) & 0x8080808080808080u);
}

/* Value of the first k (1..8) bytes of w, all digits, most significant first. */
static inline uint64_t elk_resp_digits_value(uint64_t w, unsigned k)
{
    /* Bytes past k may borrow here; the shift drops them. Leading zero bytes it brings
     * in read as leading zero digits. */
    w = (w - 0x3030303030303030u) << (8u * (8u - k));
    w = ((w & 0x0F0F0F0F0F0F0F0Fu) * 2561u) >> 8;          /* pairs: 10 * a + b */
    w = ((w & 0x00FF00FF00FF00FFu) * 6553601u) >> 16;      /* quads: 100 * ab + cd */
    return ((w & 0x0000FFFF0000FFFFu) * 42949672960001u) >> 32; /* 10000 * abcd + efgh */
}
#endif /* ELK_RESP_WIDE */

/* Index of the first CR or LF in buf[i..stop), or stop. Eight bytes a step while it
 * can (error replies and status lines run to tens of bytes), then one at a time. */
static inline size_t elk_resp_find_crlf(const uint8_t *buf, size_t i, size_t stop)
{
#if ELK_RESP_WIDE
    while (stop - i >= 8u) {
        uint64_t w = elk_resp_load8(buf + i);
        uint64_t cr = w ^ 0x0D0D0D0D0D0D0D0Du;
        uint64_t lf = w ^ 0x0A0A0A0A0A0A0A0Au;
        /* Flags the bytes of cr or lf that are zero; a borrow can flag a byte only
         * after a truly zero one, so the first flag is exact. */
        uint64_t m = (((cr - 0x0101010101010101u) & ~cr) | ((lf - 0x0101010101010101u) & ~lf)) &
                     0x8080808080808080u;
        if (m != 0u) {
            return i + elk_resp_first_flagged(m);
        }
        i += 8u;
    }
#endif
    for (; i < stop; i++) {
        uint8_t c = buf[i];
        if (c <= '\r' && (c == '\r' || c == '\n')) {
            break;
        }
    }
    return i;
}

#if ELK_RESP_WIDE
static const uint64_t elk_resp_pow10[9] = {1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u,
                                           10000000u, 100000000u};

/* Fast path for the usual number line: at most 16 digits, no sign, canonical, then
 * CR LF, all present. It only ever accepts what the general path (find_line +
 * parse_i64) accepts, with the same value; anything else, negative numbers and
 * unfinished lines included, goes the general way. */
static inline bool elk_resp_fast_num(const uint8_t *buf, size_t pos, size_t len, size_t *cr,
                                     uint64_t *out)
{
    size_t d0 = pos + 1u;
    size_t p = d0;
    uint64_t acc = 0;
    /* One or two digits (lengths, counts, 0/1 results) are most numbers of lock
     * traffic: a short dependency chain for them, the word at a time for the rest. */
    if (len - p >= 4u) {
        unsigned a = (unsigned)buf[p] - (unsigned)'0';
        unsigned b = (unsigned)buf[p + 1u] - (unsigned)'0';
        if (a <= 9u && buf[p + 1u] == '\r') {
            if (buf[p + 2u] != '\n') {
                return false;
            }
            *cr = p + 1u;
            *out = a;
            return true;
        }
        if (a - 1u <= 8u && b <= 9u && buf[p + 2u] == '\r') {
            if (buf[p + 3u] != '\n') {
                return false;
            }
            *cr = p + 2u;
            *out = a * 10u + b;
            return true;
        }
    }
    if (len - p >= 8u) {
        uint64_t w = elk_resp_load8(buf + p);
        unsigned k = elk_resp_digit_run(w);
        if (k == 0u) {
            return false;
        }
        if (k < 8u) {
            acc = elk_resp_digits_value(w, k);
            p += k;
        } else {
            uint64_t w2;
            unsigned k2;
            if (len - p < 16u) {
                return false;
            }
            w2 = elk_resp_load8(buf + p + 8u);
            k2 = elk_resp_digit_run(w2);
            if (k2 == 8u) {
                return false;
            }
            acc = elk_resp_digits_value(w, 8u) * elk_resp_pow10[k2];
            if (k2 != 0u) {
                acc += elk_resp_digits_value(w2, k2);
            }
            p += 8u + k2;
        }
    } else {
        /* Fewer than 8 bytes left: fewer than 8 digits, no overflow possible. */
        for (; p < len; p++) {
            unsigned d = (unsigned)buf[p] - (unsigned)'0';
            if (d > 9u) {
                break;
            }
            acc = acc * 10u + d;
        }
    }
    if (p == d0 || p + 1u >= len || buf[p] != '\r' || buf[p + 1u] != '\n' ||
        (buf[d0] == '0' && p - d0 > 1u)) {
        return false;
    }
    *cr = p;
    *out = acc;
    return true;
}
#else
/* Narrow targets: every number line takes the general path (find_line + parse_i64). */
static inline bool elk_resp_fast_num(const uint8_t *buf, size_t pos, size_t len, size_t *cr,
                                     uint64_t *out)
{
    (void)buf;
    (void)pos;
    (void)len;
    (void)cr;
    *out = 0;
    return false;
}
#endif /* ELK_RESP_WIDE */

static inline void elk_resp_node_set(elk_resp_node_t *n, uint8_t type, const uint8_t *str,
                                     size_t len, int64_t integer)
{
    n->str = str;
    n->integer = integer;
    n->len = (uint32_t)len;
    n->subtree = 0;
    n->type = type;
    n->format[0] = n->format[1] = n->format[2] = 0;
}

/* The next element: returns 1 with *line_end set (offset of its CR), 0 when the CR LF
 * has not arrived yet, or an error. Resumes at r->scan so no byte is looked at twice. */
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

static int elk_resp_parse(elk_resp_reader_t *r)
{
    uint8_t *buf = r->buf;
    size_t pos = r->pos;
    for (;;) {
        elk_resp_node_t *n;
        size_t cr = 0;
        size_t next;
        const uint8_t *line;
        size_t line_len;
        uint8_t t;
        bool is_attr = false;
        int rc;
        int64_t v = 0;
        uint64_t u;

        if (r->in_body) {
            size_t e = r->body_end;
            if (e > r->len || r->len - e < 2u) {
                r->pos = pos;
                return 0;
            }
            if (buf[e] != '\r' || buf[e + 1u] != '\n') {
                return ELK_E_RESP_LENGTH; /* the body is longer than its declared length */
            }
            r->in_body = false;
            n = &r->nodes[r->n_nodes - 1u];
            if (n->type == ELK_RESP_VERBATIM) {
                rc = elk_resp_lex_verbatim(n);
                if (rc != ELK_OK) {
                    return rc;
                }
            }
            pos = e + 2u;
            r->scan = pos;
            goto complete;
        }

        if (pos >= r->len) {
            r->pos = pos;
            return 0;
        }
        t = buf[pos];
        if (elk_resp_line_limit[t] == 0u) {
            return ELK_E_RESP_PROTOCOL;
        }
        if (elk_resp_line_limit[t] != ELK_RESP_NUM_MAX + 1u ||
            !elk_resp_fast_num(buf, pos, r->len, &cr, &u)) {
            rc = elk_resp_find_line(r, pos, &cr);
            if (rc != 1) {
                r->pos = pos;
                return rc;
            }
            if (elk_resp_line_limit[t] == ELK_RESP_NUM_MAX + 1u) {
                rc = elk_resp_parse_i64(buf + pos + 1u, buf + cr, &v);
                if (rc != ELK_OK) {
                    return rc;
                }
            }
        } else {
            v = (int64_t)u; /* below 10^16 */
        }
        if (r->n_nodes >= r->max_nodes) {
            return ELK_E_RESP_TOO_MANY_NODES;
        }
        n = &r->nodes[r->n_nodes++];
        line = buf + pos + 1u;
        line_len = cr - pos - 1u;
        next = cr + 2u;

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
        case '(':
            if (!elk_resp_lex_bignum(line, line_len)) {
                return ELK_E_RESP_PROTOCOL;
            }
            elk_resp_node_set(n, ELK_RESP_BIGNUM, line, line_len, 0);
            break;
        case '$':
        case '!':
        case '=': {
            if (v == -1 && t == '$') {
                elk_resp_node_set(n, ELK_RESP_NULL_BULK, NULL, 0, 0);
                break;
            }
            if (v < 0) {
                return ELK_E_RESP_LENGTH;
            }
            /* Known now, not after the buffer fills: the body cannot fit. */
            if ((uint64_t)v > UINT32_MAX ||
                (uint64_t)v + 2u > (uint64_t)(r->cap - (next - r->start))) {
                return ELK_E_RESP_TOO_LARGE;
            }
            elk_resp_node_set(n,
                              t == '$' ? ELK_RESP_BULK
                                       : (t == '!' ? ELK_RESP_BLOB_ERROR : ELK_RESP_VERBATIM),
                              buf + next, (size_t)v, 0);
            r->in_body = true;
            r->body_end = next + (size_t)v;
            pos = next;
            continue;
        }
        default: { /* '*' '~' '>' '%' '|': aggregates */
            uint64_t children;
            uint8_t type;
            if (v == -1 && t == '*') {
                elk_resp_node_set(n, ELK_RESP_NULL_ARRAY, NULL, 0, 0);
                break;
            }
            if (v < 0) {
                return ELK_E_RESP_LENGTH;
            }
            switch (t) {
            case '*': type = ELK_RESP_ARRAY; break;
            case '~': type = ELK_RESP_SET; break;
            case '>': type = ELK_RESP_PUSH; break;
            case '%': type = ELK_RESP_MAP; break;
            default: type = ELK_RESP_ATTRIBUTE; break;
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
            elk_resp_node_set(n, type, NULL, 0, (int64_t)children);
            is_attr = t == '|';
            if (children != 0u) {
                elk_resp_frame_t *f = &r->stack[r->depth++];
                f->node = (uint32_t)(r->n_nodes - 1u);
                f->remaining = (uint32_t)children;
                f->attribute = is_attr ? 1u : 0u;
                pos = next;
                r->scan = pos;
                continue;
            }
            break;
        }
        }
        pos = next;
        r->scan = pos;

    complete:
        /* A value is done: count it in its parent, closing every aggregate it fills.
         * An attribute is not an element of anything: it only annotates what follows. */
        for (;;) {
            elk_resp_frame_t *f;
            if (is_attr) {
                break;
            }
            if (r->depth == 0u) {
                r->pos = pos;
                return 1;
            }
            f = &r->stack[r->depth - 1u];
            if (--f->remaining != 0u) {
                break;
            }
            r->nodes[f->node].subtree = (uint32_t)(r->n_nodes - f->node - 1u);
            is_attr = f->attribute != 0u;
            r->depth--;
        }
    }
}

#if ELK_RESP_WIDE
/*
 * Fast path for whole replies already in the buffer (64-bit builds only). It accepts
 * only what elk_resp_parse accepts, with the same nodes, and hands anything else to it.
 *
 * In lock traffic the type of each reply is as good as random, so whatever branch
 * picks a reply's handler is mispredicted for most replies; what can be cut is how
 * often and how late, and the work around it:
 * - a chain of tests on the first eight bytes, rarest reply first, each mostly not
 *   taken: a reply costs at most one mispredict, and each test resolves right after
 *   the load (a jump table would resolve only after a second, dependent load);
 * - "+OK" and "$-1" (nearly half of the replies) share the end of the chain and are
 *   told apart without a branch, so neither costs a mispredict;
 * - the fixed replies end at a constant offset, so the next reply's position does not
 *   wait on a search;
 * - the handlers that need many registers (numbers, bulk strings, arrays, text lines)
 *   are functions reached by tail calls, so elk_resp_reader_next saves no registers;
 *   about a dozen stores a reply (nodes, reader state, reply, call frames) are what a
 *   simple reply costs.
 */
#if defined(__GNUC__)
#define ELK_RESP_INLINE __inline__ __attribute__((always_inline))
#define ELK_RESP_RARE(x) __builtin_expect(!!(x), 0) /* lay the taken side out of line */
#else
#define ELK_RESP_INLINE inline
#define ELK_RESP_RARE(x) (x)
#endif

/* Bytes from a value's first byte that the fast path reads without checking len (its
 * first word); handlers that read further check for themselves. */
#define ELK_RESP_FAST_WINDOW 8u

/* Little-endian words of the first bytes of the fixed replies. */
#define ELK_RESP_M5 0xFFFFFFFFFFu    /* first five bytes */
#define ELK_RESP_W_OK 0x0A0D4B4F2Bu  /* "+OK\r\n" */
#define ELK_RESP_W_NIL 0x0A0D312D24u /* "$-1\r\n" */
#define ELK_RESP_M_DIGIT 0xFFFF00FFu /* ":?\r\n" with ? masked, ... */
#define ELK_RESP_W_DIGIT 0x0A0D003Au /* ... for ":<one digit>\r\n" */
#define ELK_RESP_W_CRLF 0x0A0Du      /* "\r\n" */

static ELK_RESP_INLINE unsigned elk_resp_load2(const uint8_t *p)
{
    return (unsigned)p[0] | ((unsigned)p[1] << 8);
}

/* Index (0..7) of the first flagged byte of m, which is not 0. */
static ELK_RESP_INLINE unsigned elk_resp_flag_index(uint64_t m)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(m) >> 3;
#else
    return elk_resp_first_flagged(m);
#endif
}

/* Flags (bit 7) the bytes of w that are not ASCII digits. */
static ELK_RESP_INLINE uint64_t elk_resp_nondigits(uint64_t w)
{
    uint64_t d = w ^ 0x3030303030303030u;
    return (((d & 0x7F7F7F7F7F7F7F7Fu) + 0x7676767676767676u) | d) & 0x8080808080808080u;
}

/* Value of the first k (0..8) bytes of w, all digits; 0 when k is 0. */
static ELK_RESP_INLINE uint64_t elk_resp_digits_value0(uint64_t w, unsigned k)
{
    /* Two shifts of at most 32 bits: one of 64 (k = 0) would be undefined. */
    unsigned s = 32u - 4u * k;
    w = ((w - 0x3030303030303030u) << s) << s;
    w = ((w & 0x0F0F0F0F0F0F0F0Fu) * 2561u) >> 8;
    w = ((w & 0x00FF00FF00FF00FFu) * 6553601u) >> 16;
    return ((w & 0x0000FFFF0000FFFFu) * 42949672960001u) >> 32;
}

/* Digits from p (1 to 16, no sign, canonical) then CR LF, all before len. Returns the
 * offset of the CR with the value in *out, or 0. */
static ELK_RESP_INLINE size_t elk_resp_fast_uint(const uint8_t *buf, size_t p, size_t len,
                                                 uint64_t *out)
{
    uint64_t w;
    uint64_t m;
    uint64_t acc;
    size_t e;
    if (len - p < 9u) { /* a word and the LF after it */
        return 0;
    }
    w = elk_resp_load8(buf + p);
    m = elk_resp_nondigits(w);
    if (m != 0u) {
        unsigned k = elk_resp_flag_index(m);
        acc = elk_resp_digits_value0(w, k);
        e = p + k;
    } else {
        uint64_t w2;
        uint64_t m2;
        unsigned k2;
        if (len - p < 18u) {
            return 0;
        }
        w2 = elk_resp_load8(buf + p + 8u);
        m2 = elk_resp_nondigits(w2);
        if (m2 == 0u) {
            return 0;
        }
        k2 = elk_resp_flag_index(m2);
        acc = elk_resp_digits_value(w, 8u) * elk_resp_pow10[k2] + elk_resp_digits_value0(w2, k2);
        e = p + 8u + k2;
    }
    if (e == p || elk_resp_load2(buf + e) != ELK_RESP_W_CRLF || (buf[p] == '0' && e - p > 1u)) {
        return 0;
    }
    *out = acc;
    return e;
}

/* A length or count at p (len - p >= 4): one or two digits are the usual (small
 * arrays, bulk tokens), so they get a short dependency chain; longer ones go the word
 * way. */
static ELK_RESP_INLINE size_t elk_resp_fast_count(const uint8_t *buf, size_t p, size_t len,
                                                  uint64_t *out)
{
    unsigned a = (unsigned)buf[p] - (unsigned)'0';
    unsigned b = (unsigned)buf[p + 1u] - (unsigned)'0';
    if (a <= 9u && elk_resp_load2(buf + p + 1u) == ELK_RESP_W_CRLF) {
        *out = a;
        return p + 1u;
    }
    if (a - 1u <= 8u && b <= 9u && elk_resp_load2(buf + p + 2u) == ELK_RESP_W_CRLF) {
        *out = a * 10u + b;
        return p + 2u;
    }
    return elk_resp_fast_uint(buf, p, len, out);
}

/* The scalar handlers take one value at pos wholly in buf[..len) into *n (w: its first
 * eight bytes; len - pos >= ELK_RESP_FAST_WINDOW) and return the offset just past it,
 * or 0 when the general loop must decide. */

static ELK_RESP_INLINE size_t elk_resp_fast_text(const uint8_t *buf, size_t pos, size_t len,
                                                 uint64_t w, elk_resp_node_t *n, uint8_t type)
{
    uint64_t cr = w ^ 0x0D0D0D0D0D0D0D0Du;
    uint64_t lf = w ^ 0x0A0A0A0A0A0A0A0Au;
    uint64_t m = (((cr - 0x0101010101010101u) & ~cr) | ((lf - 0x0101010101010101u) & ~lf)) &
                 0x8080808080808080u;
    size_t i = m != 0u ? pos + elk_resp_flag_index(m) : elk_resp_find_crlf(buf, pos + 8u, len);
    if (len - i < 2u || elk_resp_load2(buf + i) != ELK_RESP_W_CRLF) {
        return 0;
    }
    elk_resp_node_set(n, type, buf + pos + 1u, i - pos - 1u, 0);
    return i + 2u;
}

static ELK_RESP_INLINE size_t elk_resp_fast_int(const uint8_t *buf, size_t pos, size_t len,
                                                elk_resp_node_t *n)
{
    uint64_t u;
    size_t cr = elk_resp_fast_uint(buf, pos + 1u, len, &u);
    if (cr == 0u) {
        return 0;
    }
    elk_resp_node_set(n, ELK_RESP_INTEGER, NULL, 0, (int64_t)u);
    return cr + 2u;
}

/* ":<one digit>\r\n", its CR LF already matched in w. */
static ELK_RESP_INLINE bool elk_resp_fast_digit(uint64_t w, elk_resp_node_t *n)
{
    unsigned d = (unsigned)((w >> 8) & 0xFFu) - (unsigned)'0';
    if (d > 9u) {
        return false;
    }
    elk_resp_node_set(n, ELK_RESP_INTEGER, NULL, 0, (int64_t)d);
    return true;
}

static ELK_RESP_INLINE size_t elk_resp_fast_bulk(const uint8_t *buf, size_t pos, size_t len,
                                                 elk_resp_node_t *n)
{
    uint64_t u;
    size_t cr = elk_resp_fast_count(buf, pos + 1u, len, &u);
    if (cr == 0u) {
        return 0;
    }
    /* Only a body already there in full, with its CR LF: it then fits by definition. */
    cr += 2u;
    if (u > UINT32_MAX || u + 2u > (uint64_t)(len - cr) ||
        elk_resp_load2(buf + cr + (size_t)u) != ELK_RESP_W_CRLF) {
        return 0;
    }
    elk_resp_node_set(n, ELK_RESP_BULK, buf + cr, (size_t)u, 0);
    return cr + (size_t)u + 2u;
}

/* One element of a flat array: the same chain of tests as elk_resp_reader_next, for the
 * scalars only. */
static ELK_RESP_INLINE size_t elk_resp_fast_scalar(const uint8_t *buf, size_t pos, size_t len,
                                                   elk_resp_node_t *n)
{
    uint64_t w;
    if (len - pos < ELK_RESP_FAST_WINDOW) {
        return 0;
    }
    w = elk_resp_load8(buf + pos);
    if (ELK_RESP_RARE((w & 0xFFu) == '-')) {
        return elk_resp_fast_text(buf, pos, len, w, n, ELK_RESP_ERROR);
    }
    if ((w & ELK_RESP_M_DIGIT) == ELK_RESP_W_DIGIT) {
        return elk_resp_fast_digit(w, n) ? pos + 4u : 0u;
    }
    if ((w & 0xFFu) == ':') {
        return elk_resp_fast_int(buf, pos, len, n);
    }
    if ((w & ELK_RESP_M5) == ELK_RESP_W_NIL) {
        elk_resp_node_set(n, ELK_RESP_NULL_BULK, NULL, 0, 0);
        return pos + 5u;
    }
    if ((w & 0xFFu) == '$') {
        return elk_resp_fast_bulk(buf, pos, len, n);
    }
    if ((w & 0xFFu) == '+') {
        return elk_resp_fast_text(buf, pos, len, w, n, ELK_RESP_SIMPLE);
    }
    return 0;
}

/* Hands out the reply the fast path decoded: count nodes, ending at end. scan is left
 * behind pos (release brings it up): one store less, and no paired store that the
 * compiler turns into a vector store the next call then has to read back in halves. */
static ELK_RESP_INLINE int elk_resp_fast_out(elk_resp_reader_t *r, elk_resp_reply_t *out,
                                             size_t end, size_t count)
{
    r->pos = end;
    r->reply_out = true;
    out->nodes = r->nodes;
    out->count = count;
    return 1;
}

static int elk_resp_next_slow(elk_resp_reader_t *r, elk_resp_reply_t *out);

/* The reply handlers below finish what elk_resp_reader_next started on the reply at
 * r->pos (at least ELK_RESP_FAST_WINDOW bytes there; w: the first eight) and return as
 * it does: the reply, or whatever the general path makes of it. */

static ELK_RESP_NOINLINE int elk_resp_fast_array(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    const uint8_t *buf = r->buf;
    size_t len = r->len;
    elk_resp_node_t *n = r->nodes;
    uint64_t u;
    size_t end = elk_resp_fast_count(buf, r->pos + 1u, len, &u);
    size_t i;
    if (end == 0u || u == 0u || u > (uint64_t)(r->max_nodes - 1u)) {
        return elk_resp_next_slow(r, out);
    }
    end += 2u;
    for (i = 1; i <= (size_t)u; i++) {
        end = elk_resp_fast_scalar(buf, end, len, &n[i]);
        if (end == 0u) {
            return elk_resp_next_slow(r, out);
        }
    }
    elk_resp_node_set(n, ELK_RESP_ARRAY, NULL, 0, (int64_t)u);
    n->subtree = (uint32_t)u;
    return elk_resp_fast_out(r, out, end, (size_t)u + 1u);
}

static ELK_RESP_NOINLINE int elk_resp_fast_line(elk_resp_reader_t *r, elk_resp_reply_t *out,
                                                uint64_t w, uint8_t type)
{
    size_t end = elk_resp_fast_text(r->buf, r->pos, r->len, w, r->nodes, type);
    if (end == 0u) {
        return elk_resp_next_slow(r, out);
    }
    return elk_resp_fast_out(r, out, end, 1);
}

static ELK_RESP_NOINLINE int elk_resp_fast_integer(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    size_t end = elk_resp_fast_int(r->buf, r->pos, r->len, r->nodes);
    if (end == 0u) {
        return elk_resp_next_slow(r, out);
    }
    return elk_resp_fast_out(r, out, end, 1);
}

static ELK_RESP_NOINLINE int elk_resp_fast_string(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    size_t end = elk_resp_fast_bulk(r->buf, r->pos, r->len, r->nodes);
    if (end == 0u) {
        return elk_resp_next_slow(r, out);
    }
    return elk_resp_fast_out(r, out, end, 1);
}

/* A reply shorter than the window, alone at the end of the buffer: what a lock client
 * mostly reads, one reply per round trip (":1\r\n", ":428\r\n", "+OK\r\n", "$-1\r\n").
 * Byte by byte over at most seven bytes; anything else goes the general way. */
static ELK_RESP_NOINLINE int elk_resp_fast_short(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    const uint8_t *buf = r->buf;
    size_t pos = r->pos;
    size_t len = r->len;
    size_t p = pos + 1u;
    uint8_t t;
    if (pos >= len) {
        /* Nothing buffered: the usual last call of a read loop. A full buffer still goes
         * the general way, which makes room. */
        return len < r->cap ? 0 : elk_resp_next_slow(r, out);
    }
    t = buf[pos];
    if (t == ':') {
        uint64_t v = 0; /* at most six digits here: no overflow */
        for (; p < len && (unsigned)buf[p] - (unsigned)'0' <= 9u; p++) {
            v = v * 10u + ((unsigned)buf[p] - (unsigned)'0');
        }
        if (p == pos + 1u || len - p < 2u || buf[p] != '\r' || buf[p + 1u] != '\n' ||
            (buf[pos + 1u] == '0' && p - pos > 2u)) {
            return elk_resp_next_slow(r, out);
        }
        elk_resp_node_set(r->nodes, ELK_RESP_INTEGER, NULL, 0, (int64_t)v);
        return elk_resp_fast_out(r, out, p + 2u, 1);
    }
    if (t == '+' || t == '-') {
        while (p < len && buf[p] != '\r' && buf[p] != '\n') {
            p++;
        }
        if (len - p < 2u || buf[p] != '\r' || buf[p + 1u] != '\n') {
            return elk_resp_next_slow(r, out);
        }
        elk_resp_node_set(r->nodes, t == '+' ? ELK_RESP_SIMPLE : ELK_RESP_ERROR, buf + pos + 1u,
                          p - pos - 1u, 0);
        return elk_resp_fast_out(r, out, p + 2u, 1);
    }
    if (t == '$' && len - pos >= 5u && memcmp(buf + pos, "$-1\r\n", 5u) == 0) {
        elk_resp_node_set(r->nodes, ELK_RESP_NULL_BULK, NULL, 0, 0);
        return elk_resp_fast_out(r, out, pos + 5u, 1);
    }
    return elk_resp_next_slow(r, out);
}
#endif /* ELK_RESP_WIDE */

/* Everything but the fast path, out of line so the fast path stays small. */
static ELK_RESP_NOINLINE int elk_resp_next_slow(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    int rc;
    if (r->error != ELK_OK) {
        return r->error;
    }
    if (r->reply_out) {
        return ELK_E_STATE;
    }
    rc = elk_resp_parse(r);
    if (rc == 1) {
        out->nodes = r->nodes;
        out->count = r->n_nodes;
        /* The nodes are the caller's until release: none is being parsed. */
        r->n_nodes = 0;
        r->reply_out = true;
        return 1;
    }
    if (rc == 0 && r->len == r->cap) {
        if (r->start == 0u) {
            /* The whole buffer holds one unfinished reply: it cannot fit. */
            rc = ELK_E_RESP_TOO_LARGE;
        } else {
            elk_resp_compact(r);
        }
    }
    if (rc < 0) {
        r->error = rc;
    }
    return rc;
}

int elk_resp_reader_next(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
#if ELK_RESP_WIDE
    const uint8_t *buf;
    size_t pos;
    uint64_t w;
    unsigned nil;
    unsigned ok;
#endif
    if (r == NULL || out == NULL) {
        return ELK_E_INVALID_ARG;
    }
#if ELK_RESP_WIDE
    /* A new reply (no error, none out, nothing of it parsed yet) with a window of bytes:
     * the fast path may try it, once. */
    pos = r->pos;
    if (r->error != ELK_OK || r->reply_out || r->n_nodes != 0u || r->scan > pos || r->in_body) {
        return elk_resp_next_slow(r, out);
    }
    if (r->len - pos < ELK_RESP_FAST_WINDOW) {
        return elk_resp_fast_short(r, out);
    }
    buf = r->buf;
    w = elk_resp_load8(buf + pos);
    if (ELK_RESP_RARE((w & 0xFFu) == '*')) {
        return elk_resp_fast_array(r, out);
    }
    if (ELK_RESP_RARE((w & 0xFFu) == '-')) {
        return elk_resp_fast_line(r, out, w, ELK_RESP_ERROR);
    }
    if (ELK_RESP_RARE((w & ELK_RESP_M_DIGIT) == ELK_RESP_W_DIGIT)) {
        if (!elk_resp_fast_digit(w, r->nodes)) {
            return elk_resp_next_slow(r, out);
        }
        return elk_resp_fast_out(r, out, pos + 4u, 1);
    }
    if (ELK_RESP_RARE((w & 0xFFu) == ':')) {
        return elk_resp_fast_integer(r, out);
    }
    /* 1 if the first bytes are "$-1\r\n" (resp. "+OK\r\n"), else 0, computed, not
     * branched on: written as == the compiler would turn the tests into branches. */
    nil = (unsigned)((((w & ELK_RESP_M5) ^ ELK_RESP_W_NIL) - 1u) >> 63);
    ok = (unsigned)((((w & ELK_RESP_M5) ^ ELK_RESP_W_OK) - 1u) >> 63);
    if (ELK_RESP_RARE(((unsigned)(w & 0xFFu) | (nil << 8)) == '$')) { /* '$', not nil */
        return elk_resp_fast_string(r, out);
    }
    if ((ok | nil) != 0u) {
        elk_resp_node_t *n = r->nodes;
        n->str = nil != 0u ? NULL : buf + pos + 1u;
        n->integer = 0;
        n->len = 2u - 2u * nil;
        n->subtree = 0;
        n->type = (uint8_t)(ELK_RESP_SIMPLE + (ELK_RESP_NULL_BULK - ELK_RESP_SIMPLE) * nil);
        n->format[0] = n->format[1] = n->format[2] = 0;
        return elk_resp_fast_out(r, out, pos + 5u, 1);
    }
    if ((w & 0xFFu) == '+') {
        return elk_resp_fast_line(r, out, w, ELK_RESP_SIMPLE);
    }
#endif
    return elk_resp_next_slow(r, out);
}
