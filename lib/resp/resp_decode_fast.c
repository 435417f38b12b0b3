/* SPDX-License-Identifier: MIT */
/*
 * Fast path for whole replies already in the buffer (CONFIG_ELK_RESP_FAST_PATH, on
 * 64-bit builds). It accepts only what the general parser (resp_parse.c) accepts,
 * with the same nodes, and declines anything else by handing the reader to the
 * general path (elk_resp__next_slow), which then decides. The hand-over is a tail
 * call, so declining costs a jump and taking a reply costs no call frame.
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
 *   are functions reached by tail calls, so the entry saves no registers; about a
 *   dozen stores a reply (nodes, reader state, reply, call frames) are what a simple
 *   reply costs.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elk/resp.h"
#include "resp_internal.h"
#include "resp_word.h"

#if ELK_RESP_FAST

/* Bytes from a value's first byte that the fast path reads without checking len (its
 * first word); handlers that read further check for themselves. */
#define ELK_RESP_FAST_WINDOW 8u

/* Little-endian words of the first bytes of the fixed replies. */
#define ELK_RESP_M5 0xFFFFFFFFFFu    /* first five bytes */
#define ELK_RESP_W_OK 0x0A0D4B4F2Bu  /* "+OK\r\n" */
#define ELK_RESP_W_NIL 0x0A0D312D24u /* "$-1\r\n" */
#define ELK_RESP_M_DIGIT 0xFFFF00FFu /* ":?\r\n" with ? masked, ... */
#define ELK_RESP_W_DIGIT 0x0A0D003Au /* ... for ":<one digit>\r\n" */

/* The scalar handlers take one value at pos wholly in buf[..len) into *n (w: its first
 * eight bytes; len - pos >= ELK_RESP_FAST_WINDOW) and return the offset just past it,
 * or 0 to decline. */

static ELK_RESP_INLINE size_t elk_resp_fast_text(const uint8_t *buf, size_t pos, size_t len,
                                                 uint64_t w, elk_resp_node_t *n, uint8_t type)
{
    uint64_t m = elk_resp_crlf_flags(w);
    size_t i = m != 0u ? pos + elk_resp_first_flag(m) : elk_resp_find_crlf(buf, pos + 8u, len);
    if (len - i < 2u || elk_resp_load2(buf + i) != ELK_RESP_W_CRLF) {
        return 0;
    }
    elk_resp_node_set(n, type, buf + pos + 1u, i - pos - 1u, 0);
    return i + 2u;
}

static ELK_RESP_INLINE size_t elk_resp_fast_int(const uint8_t *buf, size_t pos, size_t len,
                                                elk_resp_node_t *n)
{
    uint64_t u = 0;
    size_t cr = elk_resp_word_uint(buf, pos + 1u, len, &u);
    /* Written either way: the nodes are scratch until a reply is handed out. */
    elk_resp_node_set(n, ELK_RESP_INTEGER, NULL, 0, (int64_t)u);
    return cr == 0u ? 0u : cr + 2u;
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
    size_t cr = elk_resp_scan_uint(buf, pos + 1u, len, &u);
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

/* One element of a flat array: the same chain of tests as elk_resp_reader_next, for
 * the scalars only. */
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

/* Hands out the reply the fast path decoded: count nodes, ending at end (or declines
 * when end is 0: the general path then takes the reply). scan is left behind pos (release brings it up): one store less, and
 * no paired store that the compiler turns into a vector store the next call then has
 * to read back in halves. */
static ELK_RESP_INLINE int elk_resp_fast_out(elk_resp_reader_t *r, elk_resp_reply_t *out,
                                             size_t end, size_t count)
{
    if (end == 0u) {
        return elk_resp__next_slow(r, out);
    }
    r->pos = end;
    r->reply_out = true;
    out->nodes = r->nodes;
    out->count = count;
    return 1;
}

/* The reply handlers below finish what elk_resp_reader_next started on the reply at
 * r->pos (at least ELK_RESP_FAST_WINDOW bytes there; w: the first eight) and return
 * as it does. */

static ELK_RESP_NOINLINE int elk_resp_fast_array(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    const uint8_t *buf = r->buf;
    size_t len = r->len;
    elk_resp_node_t *n = r->nodes;
    uint64_t u;
    size_t end = elk_resp_scan_uint(buf, r->pos + 1u, len, &u);
    size_t i;
    if (end == 0u || u == 0u || u > (uint64_t)(r->max_nodes - 1u)) {
        return elk_resp__next_slow(r, out);
    }
    end += 2u;
    for (i = 1; i <= (size_t)u; i++) {
        end = elk_resp_fast_scalar(buf, end, len, &n[i]);
        if (end == 0u) {
            return elk_resp__next_slow(r, out);
        }
    }
    elk_resp_node_set(n, ELK_RESP_ARRAY, NULL, 0, (int64_t)u);
    n->subtree = (uint32_t)u;
    return elk_resp_fast_out(r, out, end, (size_t)u + 1u);
}

static ELK_RESP_NOINLINE int elk_resp_fast_line(elk_resp_reader_t *r, elk_resp_reply_t *out,
                                                uint64_t w, uint8_t type)
{
    return elk_resp_fast_out(r, out, elk_resp_fast_text(r->buf, r->pos, r->len, w, r->nodes, type),
                             1);
}

static ELK_RESP_NOINLINE int elk_resp_fast_integer(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    return elk_resp_fast_out(r, out, elk_resp_fast_int(r->buf, r->pos, r->len, r->nodes), 1);
}

static ELK_RESP_NOINLINE int elk_resp_fast_string(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    return elk_resp_fast_out(r, out, elk_resp_fast_bulk(r->buf, r->pos, r->len, r->nodes), 1);
}

/* ":<digits>\r\n" shorter than the window at pos, alone at the end of the buffer: the
 * offset past it, or 0. At most six digits: no overflow. */
static size_t elk_resp_short_int(const uint8_t *buf, size_t pos, size_t len, elk_resp_node_t *n)
{
    size_t p = pos + 1u;
    uint64_t v = 0;
    for (; p < len && (unsigned)buf[p] - (unsigned)'0' <= 9u; p++) {
        v = v * 10u + ((unsigned)buf[p] - (unsigned)'0');
    }
    if (p == pos + 1u || len - p < 2u || buf[p] != '\r' || buf[p + 1u] != '\n' ||
        (buf[pos + 1u] == '0' && p - pos > 2u)) {
        return 0;
    }
    elk_resp_node_set(n, ELK_RESP_INTEGER, NULL, 0, (int64_t)v);
    return p + 2u;
}

/* "+text\r\n" or "-text\r\n" shorter than the window: the offset past it, or 0. */
static size_t elk_resp_short_text(const uint8_t *buf, size_t pos, size_t len, elk_resp_node_t *n)
{
    size_t p = pos + 1u;
    while (p < len && buf[p] != '\r' && buf[p] != '\n') {
        p++;
    }
    if (len - p < 2u || buf[p] != '\r' || buf[p + 1u] != '\n') {
        return 0;
    }
    elk_resp_node_set(n, buf[pos] == '+' ? ELK_RESP_SIMPLE : ELK_RESP_ERROR, buf + pos + 1u,
                      p - pos - 1u, 0);
    return p + 2u;
}

/* A reply shorter than the window, alone at the end of the buffer: what a lock client
 * mostly reads, one reply per round trip (":1\r\n", ":428\r\n", "+OK\r\n", "$-1\r\n").
 * Byte by byte over at most seven bytes; anything else declines. */
static ELK_RESP_NOINLINE int elk_resp_fast_short(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    const uint8_t *buf = r->buf;
    size_t pos = r->pos;
    size_t len = r->len;
    size_t end = 0;
    if (pos >= len) {
        /* Nothing buffered: the usual last call of a read loop. A full buffer still goes
         * the general way, which makes room. */
        return len < r->cap ? 0 : elk_resp__next_slow(r, out);
    }
    if (buf[pos] == ':') {
        end = elk_resp_short_int(buf, pos, len, r->nodes);
    } else if (buf[pos] == '+' || buf[pos] == '-') {
        end = elk_resp_short_text(buf, pos, len, r->nodes);
    } else if (buf[pos] == '$' && len - pos >= 5u && memcmp(buf + pos, "$-1\r\n", 5u) == 0) {
        elk_resp_node_set(r->nodes, ELK_RESP_NULL_BULK, NULL, 0, 0);
        end = pos + 5u;
    }
    return elk_resp_fast_out(r, out, end, 1);
}

/* "+OK\r\n" or "$-1\r\n" (nil and ok: 1 for the one it is), with no branch between
 * them: written as == the compiler would turn the tests into branches. */
static ELK_RESP_INLINE int elk_resp_fast_fixed(elk_resp_reader_t *r, elk_resp_reply_t *out,
                                               unsigned nil)
{
    elk_resp_node_t *n = r->nodes;
    n->str = nil != 0u ? NULL : r->buf + r->pos + 1u;
    n->integer = 0;
    n->len = 2u - 2u * nil;
    n->subtree = 0;
    n->type = (uint8_t)(ELK_RESP_SIMPLE + (ELK_RESP_NULL_BULK - ELK_RESP_SIMPLE) * nil);
    n->format[0] = n->format[1] = n->format[2] = 0;
    return elk_resp_fast_out(r, out, r->pos + 5u, 1);
}

/* The reader's entry where the fast path is built (see resp_internal.h). */
int elk_resp_reader_next(elk_resp_reader_t *r, elk_resp_reply_t *out)
{
    size_t pos;
    uint64_t w;
    unsigned nil;
    unsigned ok;
    if (r == NULL || out == NULL) {
        return ELK_E_INVALID_ARG;
    }
    pos = r->pos;
    /* Only a new reply: no error, none out, nothing of it parsed yet. */
    if (r->error != ELK_OK || r->reply_out || r->n_nodes != 0u || r->scan > pos || r->in_body) {
        return elk_resp__next_slow(r, out);
    }
    if (r->len - pos < ELK_RESP_FAST_WINDOW) {
        return elk_resp_fast_short(r, out);
    }
    w = elk_resp_load8(r->buf + pos);
    if (ELK_RESP_RARE((w & 0xFFu) == '*')) {
        return elk_resp_fast_array(r, out);
    }
    if (ELK_RESP_RARE((w & 0xFFu) == '-')) {
        return elk_resp_fast_line(r, out, w, ELK_RESP_ERROR);
    }
    if (ELK_RESP_RARE((w & ELK_RESP_M_DIGIT) == ELK_RESP_W_DIGIT)) {
        return elk_resp_fast_out(r, out, elk_resp_fast_digit(w, r->nodes) ? pos + 4u : 0u, 1);
    }
    if (ELK_RESP_RARE((w & 0xFFu) == ':')) {
        return elk_resp_fast_integer(r, out);
    }
    nil = (unsigned)((((w & ELK_RESP_M5) ^ ELK_RESP_W_NIL) - 1u) >> 63);
    ok = (unsigned)((((w & ELK_RESP_M5) ^ ELK_RESP_W_OK) - 1u) >> 63);
    if (ELK_RESP_RARE(((unsigned)(w & 0xFFu) | (nil << 8)) == '$')) { /* '$', not nil */
        return elk_resp_fast_string(r, out);
    }
    if ((ok | nil) != 0u) {
        return elk_resp_fast_fixed(r, out, nil);
    }
    if ((w & 0xFFu) == '+') {
        return elk_resp_fast_line(r, out, w, ELK_RESP_SIMPLE);
    }
    return elk_resp__next_slow(r, out);
}

#else
/* Fast path not built (a 32-bit target, or CONFIG_ELK_RESP_FAST_PATH off): ISO C wants
 * a translation unit to declare something. */
typedef int elk_resp_fast_path_not_built_t;
#endif /* ELK_RESP_FAST */
