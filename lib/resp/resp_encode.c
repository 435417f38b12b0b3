/* SPDX-License-Identifier: MIT */
/* RESP command encoder: arrays of bulk strings into a caller buffer, no heap, no stdio. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../util/fmt.h"
#include "elk/resp.h"
#include "resp_lex.h"

/* The decimal digits of u into out (at least 20 bytes); returns their number. On 64-bit
 * hosts an own loop the compiler inlines: every command goes through here (measured
 * 1-3% of encoder throughput against the shared elk_fmt_u64). */
static size_t elk_resp_put_digits(uint64_t u, uint8_t *out)
{
#if ELK_RESP_WIDE
    uint8_t tmp[20];
    size_t n = 0;
    size_t i = 0;
    do {
        tmp[n++] = (uint8_t)('0' + (unsigned)(u % 10u));
        u /= 10u;
    } while (u != 0u);
    while (n > 0u) {
        out[i++] = tmp[--n];
    }
    return i;
#else
    return elk_fmt_u64(u, (char *)out);
#endif
}

size_t elk_resp_format_int(int64_t v, uint8_t out[20])
{
    size_t i = 0;
    /* Work on the magnitude as unsigned so INT64_MIN needs no special case. */
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0) {
        out[i++] = '-'; /* then at most 19 digits */
    }
    return i + elk_resp_put_digits(mag, out + i);
}

void elk_resp_writer_init(elk_resp_writer_t *w, uint8_t *buf, size_t cap)
{
    if (w == NULL) {
        return;
    }
    w->buf = buf;
    w->cap = buf != NULL ? cap : 0u;
    w->len = 0;
    w->invalid = false;
}

/* Copies what still fits and counts the rest, saturating rather than wrapping so a
 * measurement can never come out smaller than the truth. */
static void elk_resp_put(elk_resp_writer_t *w, const uint8_t *p, size_t n)
{
    if (w->len < w->cap) {
        size_t room = w->cap - w->len;
        memcpy(w->buf + w->len, p, n < room ? n : room);
    }
    w->len = n > SIZE_MAX - w->len ? SIZE_MAX : w->len + n;
}

/* "<prefix><decimal n>\r\n" in one put. */
static void elk_resp_put_header(elk_resp_writer_t *w, uint8_t prefix, uint64_t n)
{
    uint8_t line[24];
    size_t i = 1;
    line[0] = prefix;
    i += elk_resp_put_digits(n, line + 1);
    line[i++] = '\r';
    line[i++] = '\n';
    elk_resp_put(w, line, i);
}

void elk_resp_write_array_header(elk_resp_writer_t *w, size_t n)
{
    if (w == NULL) {
        return;
    }
    elk_resp_put_header(w, '*', (uint64_t)n);
}

void elk_resp_write_bulk(elk_resp_writer_t *w, const uint8_t *p, size_t len)
{
    static const uint8_t crlf[2] = {'\r', '\n'};
    if (w == NULL) {
        return;
    }
    if (p == NULL && len != 0u) {
        /* Nothing sane to write; remember it so finish() refuses the command. */
        w->invalid = true;
        return;
    }
    elk_resp_put_header(w, '$', (uint64_t)len);
    if (len != 0u) {
        elk_resp_put(w, p, len);
    }
    elk_resp_put(w, crlf, 2u);
}

#if ELK_RESP_WIDE
/* "$<n>\r\n<digits>\r\n" for v, built in line (the header in front of the digits, so
 * one copy moves it all). Returns its length; it starts at line + *start. */
static size_t elk_resp_bulk_int_line(uint8_t line[28], int64_t v, size_t *start)
{
    size_t n = elk_resp_format_int(v, line + 5);
    /* Header "$<n>\r\n" is at most 5 bytes (n <= 20). */
    if (n >= 10u) {
        uint8_t hdr[5] = {'$', (uint8_t)('0' + n / 10u), (uint8_t)('0' + n % 10u), '\r', '\n'};
        memcpy(line + 0, hdr, 5u);
        *start = 0;
    } else {
        uint8_t hdr[4] = {'$', (uint8_t)('0' + n), '\r', '\n'};
        memcpy(line + 1, hdr, 4u);
        *start = 1;
    }
    line[5u + n] = '\r';
    line[6u + n] = '\n';
    return 7u + n - *start;
}
#endif

void elk_resp_write_bulk_int(elk_resp_writer_t *w, int64_t v)
{
#if ELK_RESP_WIDE
    uint8_t line[28];
    size_t i = 0;
    size_t n;
    if (w == NULL) {
        return;
    }
    n = elk_resp_bulk_int_line(line, v, &i);
    elk_resp_put(w, line + i, n);
#else
    /* 32-bit targets: flash before speed, the same bytes through the general path
     * (about 100 bytes less on Cortex-M). */
    uint8_t digits[20];
    elk_resp_write_bulk(w, digits, elk_resp_format_int(v, digits));
#endif
}

int elk_resp_writer_finish(const elk_resp_writer_t *w, size_t *out_len)
{
    if (w == NULL || out_len == NULL) {
        return ELK_E_INVALID_ARG;
    }
    *out_len = w->len;
    if (w->invalid) {
        return ELK_E_INVALID_ARG;
    }
    return w->len <= w->cap ? ELK_OK : ELK_E_BUF_TOO_SMALL;
}

#if ELK_RESP_WIDE
/* Room the fast loop below keeps free past an argument's body: the longest header
 * ("$" + 20 digits + CR LF), the body's CR LF, and an integer's digits. */
#define ELK_RESP_ARG_SLACK 48u

/* Writes the arguments from `from` on straight into buf while each surely fits, and
 * returns how many it wrote (the rest, and any argument the writer must judge, go
 * through the writer with the same bytes). Every lock request goes through here, and
 * this is about a third of the instructions of building one through the writer. */
static size_t elk_resp_encode_fast(uint8_t *buf, size_t cap, size_t *len,
                                   const elk_resp_arg_t *argv, size_t argc)
{
    size_t at = *len;
    size_t i;
    for (i = 0; i < argc; i++) {
        const elk_resp_arg_t *a = &argv[i];
        uint8_t *o;
        if (a->is_int) {
            uint8_t line[28];
            size_t start = 0;
            size_t n;
            if (cap - at < ELK_RESP_ARG_SLACK) {
                break;
            }
            n = elk_resp_bulk_int_line(line, a->ival, &start);
            memcpy(buf + at, line + start, n);
            at += n;
            continue;
        }
        if ((a->ptr == NULL && a->len != 0u) || a->len >= 100u ||
            cap - at < a->len + ELK_RESP_ARG_SLACK) {
            break;
        }
        o = buf + at;
        o[0] = '$';
        if (a->len < 10u) {
            o[1] = (uint8_t)('0' + a->len);
            o += 2;
        } else {
            o[1] = (uint8_t)('0' + a->len / 10u);
            o[2] = (uint8_t)('0' + a->len % 10u);
            o += 3;
        }
        o[0] = '\r';
        o[1] = '\n';
        if (a->len != 0u) {
            memcpy(o + 2, a->ptr, a->len);
        }
        o[2u + a->len] = '\r';
        o[3u + a->len] = '\n';
        at = (size_t)(o - buf) + a->len + 4u;
    }
    *len = at;
    return i;
}
#endif

int elk_resp_encode_command(uint8_t *buf, size_t cap, const elk_resp_arg_t *argv, size_t argc,
                            size_t *out_len)
{
    elk_resp_writer_t w;
    size_t i = 0;
    if (out_len == NULL || (argv == NULL && argc != 0u) || (buf == NULL && cap != 0u)) {
        return ELK_E_INVALID_ARG;
    }
    elk_resp_writer_init(&w, buf, cap);
    elk_resp_write_array_header(&w, argc);
#if ELK_RESP_WIDE
    if (w.len <= w.cap) {
        i = elk_resp_encode_fast(buf, cap, &w.len, argv, argc);
    }
#endif
    for (; i < argc; i++) {
        if (argv[i].is_int) {
            elk_resp_write_bulk_int(&w, argv[i].ival);
        } else {
            elk_resp_write_bulk(&w, argv[i].ptr, argv[i].len);
        }
    }
    return elk_resp_writer_finish(&w, out_len);
}
