/* SPDX-License-Identifier: MIT */
/*
 * Word-at-a-time scanning shared by the general parser (resp_parse.c) and the fast
 * path (resp_decode_fast.c), internal to lib/resp. On 64-bit builds (ELK_RESP_WIDE)
 * eight bytes are read as one little-endian word, whatever the CPU's byte order, so
 * the same masks work on s390x; elsewhere only the byte loops are built, and the
 * scanners decline, leaving numbers to the general parser.
 */
#ifndef ELK_RESP_WORD_H
#define ELK_RESP_WORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "resp_lex.h"

#if defined(__GNUC__)
#define ELK_RESP_INLINE __inline__ __attribute__((always_inline))
#define ELK_RESP_NOINLINE __attribute__((noinline))
#define ELK_RESP_RARE(x) __builtin_expect(!!(x), 0) /* lay the taken side out of line */
#else
#define ELK_RESP_INLINE inline
#define ELK_RESP_NOINLINE
#define ELK_RESP_RARE(x) (x)
#endif

#if ELK_RESP_WIDE
/* Eight bytes as a little-endian word (compilers turn this into one load where the
 * order matches, and a load plus byte swap where it does not). */
static ELK_RESP_INLINE uint64_t elk_resp_load8(const uint8_t *p)
{
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
        ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
        ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
}

/* Two bytes as a little-endian number: compared with ELK_RESP_W_CRLF. */
static ELK_RESP_INLINE unsigned elk_resp_load2(const uint8_t *p)
{
    return (unsigned)p[0] | ((unsigned)p[1] << 8);
}
#define ELK_RESP_W_CRLF 0x0A0Du /* "\r\n" */

/* Index (0..7) of the first byte of m whose bit 7 is set (only bits 7 may be set; m
 * is not 0). Without a count-trailing-zeros builtin: isolate the lowest flag and
 * count the bytes below it with one multiply. */
static ELK_RESP_INLINE unsigned elk_resp_first_flag(uint64_t m)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(m) >> 3;
#else
    uint64_t low = m & (0u - m);
    return (unsigned)(((((low >> 7) - 1u) & 0x0101010101010101u) * 0x0101010101010101u) >> 56);
#endif
}

/* Flags (bit 7) the bytes of w that are CR or LF. A borrow can flag a byte only after
 * a truly matching one, so the first flag is exact. */
static ELK_RESP_INLINE uint64_t elk_resp_crlf_flags(uint64_t w)
{
    uint64_t cr = w ^ 0x0D0D0D0D0D0D0D0Du;
    uint64_t lf = w ^ 0x0A0A0A0A0A0A0A0Au;
    return (((cr - 0x0101010101010101u) & ~cr) | ((lf - 0x0101010101010101u) & ~lf)) &
        0x8080808080808080u;
}

/* Flags (bit 7) the bytes of w that are not ASCII digits. Done on all eight at once:
 * a loop that stops at the first non-digit mispredicts its exit for almost every
 * number, and that costs more than the rest of the parse. */
static ELK_RESP_INLINE uint64_t elk_resp_nondigits(uint64_t w)
{
    uint64_t d = w ^ 0x3030303030303030u; /* a digit becomes 0..9, anything else not */
    return (((d & 0x7F7F7F7F7F7F7F7Fu) + 0x7676767676767676u) | d) & 0x8080808080808080u;
}

/* Value of the first k (0..8) bytes of w, all digits, most significant first; 0 when
 * k is 0. Bytes past k may borrow; the shifts drop them. */
static ELK_RESP_INLINE uint64_t elk_resp_digits_value(uint64_t w, unsigned k)
{
    /* Two shifts of at most 32 bits: one of 64 (k = 0) would be undefined. */
    unsigned s = 32u - 4u * k;
    w = ((w - 0x3030303030303030u) << s) << s;
    w = ((w & 0x0F0F0F0F0F0F0F0Fu) * 2561u) >> 8;               /* pairs: 10 * a + b */
    w = ((w & 0x00FF00FF00FF00FFu) * 6553601u) >> 16;           /* quads: 100 * ab + cd */
    return ((w & 0x0000FFFF0000FFFFu) * 42949672960001u) >> 32; /* 10000 * abcd + efgh */
}

/* Digits from p (1 to 16, no sign, canonical) then CR LF, read a word at a time; needs
 * len - p >= 9 (else declines). Returns the offset of the CR with the value in *out,
 * or 0: anything else is the general parser's to judge. */
static ELK_RESP_INLINE size_t elk_resp_word_uint(const uint8_t *buf, size_t p, size_t len,
                                                 uint64_t *out)
{
    static const uint64_t pow10[9] = {1u,      10u,      100u,      1000u,     10000u,
                                      100000u, 1000000u, 10000000u, 100000000u};
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
        unsigned k = elk_resp_first_flag(m);
        acc = elk_resp_digits_value(w, k);
        e = p + k;
    } else {
        uint64_t w2;
        unsigned k2;
        if (len - p < 18u) {
            return 0;
        }
        w2 = elk_resp_load8(buf + p + 8u);
        m = elk_resp_nondigits(w2);
        if (m == 0u) {
            return 0;
        }
        k2 = elk_resp_first_flag(m);
        acc = elk_resp_digits_value(w, 8u) * pow10[k2] + elk_resp_digits_value(w2, k2);
        e = p + 8u + k2;
    }
    if (e == p || elk_resp_load2(buf + e) != ELK_RESP_W_CRLF || (buf[p] == '0' && e - p > 1u)) {
        return 0;
    }
    *out = acc;
    return e;
}
#endif /* ELK_RESP_WIDE */

/* A length, count or integer at p, as elk_resp_word_uint, but one or two digits (small
 * arrays, bulk tokens, 0/1 results: most numbers of lock traffic) get a short
 * dependency chain first. Any len. Narrow builds always decline (returns 0). */
static ELK_RESP_INLINE size_t elk_resp_scan_uint(const uint8_t *buf, size_t p, size_t len,
                                                 uint64_t *out)
{
#if ELK_RESP_WIDE
    unsigned a;
    unsigned b;
    if (len - p < 4u) {
        return 0;
    }
    a = (unsigned)buf[p] - (unsigned)'0';
    b = (unsigned)buf[p + 1u] - (unsigned)'0';
    if (a <= 9u && elk_resp_load2(buf + p + 1u) == ELK_RESP_W_CRLF) {
        *out = a;
        return p + 1u;
    }
    if (a - 1u <= 8u && b <= 9u && elk_resp_load2(buf + p + 2u) == ELK_RESP_W_CRLF) {
        *out = a * 10u + b;
        return p + 2u;
    }
    return elk_resp_word_uint(buf, p, len, out);
#else
    (void)buf;
    (void)p;
    (void)len;
    *out = 0;
    return 0;
#endif
}

/* Index of the first CR or LF in buf[i..stop), or stop. Eight bytes a step while it
 * can (error replies and status lines run to tens of bytes), then one at a time. */
static ELK_RESP_INLINE size_t elk_resp_find_crlf(const uint8_t *buf, size_t i, size_t stop)
{
#if ELK_RESP_WIDE
    while (stop - i >= 8u) {
        uint64_t m = elk_resp_crlf_flags(elk_resp_load8(buf + i));
        if (m != 0u) {
            return i + elk_resp_first_flag(m);
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

#endif /* ELK_RESP_WORD_H */
