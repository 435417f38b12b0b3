/* SPDX-License-Identifier: MIT */
/* Text builder for log lines (see fmt.h). */
#include "fmt.h"

#include <string.h>

void elk_fmt_init(elk_fmt_t *f, char *buf, size_t cap)
{
    f->buf = buf;
    f->cap = buf != NULL ? cap : 0u;
    f->len = 0;
    f->truncated = false;
}

static void elk_fmt_put(elk_fmt_t *f, const char *p, size_t n)
{
    size_t room = f->cap - f->len;
    if (n > room) {
        n = room;
        f->truncated = true;
    }
    if (n > 0u) {
        memcpy(f->buf + f->len, p, n);
        f->len += n;
    }
}

void elk_fmt_str(elk_fmt_t *f, const char *s)
{
    if (s == NULL) {
        s = "(null)";
    }
    elk_fmt_put(f, s, strlen(s));
}

void elk_fmt_bytes(elk_fmt_t *f, const uint8_t *p, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++) {
        char c = (p[i] >= 0x20u && p[i] < 0x7fu) ? (char)p[i] : '?';
        if (f->len >= f->cap) {
            f->truncated = true;
            return;
        }
        f->buf[f->len++] = c;
    }
}

/* *v /= 10, returning the remainder. A 32-bit CPU has no 64-bit divide, and v / 10u
 * would link libgcc's __udivmoddi4 (about 700 bytes on Cortex-M); there it is three
 * 32-bit divisions of 32, 16 and 16 bits of v, each remainder carried into the next. */
static unsigned elk_fmt_div10(uint64_t *v)
{
#if UINTPTR_MAX > 0xFFFFFFFFu
    unsigned r = (unsigned)(*v % 10u);
    *v /= 10u;
    return r;
#else
    uint32_t hi = (uint32_t)(*v >> 32);
    uint32_t lo = (uint32_t)*v;
    uint32_t qhi = hi / 10u;
    uint32_t mid = ((hi % 10u) << 16) | (lo >> 16); /* < 10 * 2^16 */
    uint32_t qmid = mid / 10u;
    uint32_t low = ((mid % 10u) << 16) | (lo & 0xFFFFu);
    *v = ((uint64_t)qhi << 32) | (qmid << 16) | (low / 10u);
    return (unsigned)(low % 10u);
#endif
}

size_t elk_fmt_u64(uint64_t v, char *out)
{
    char tmp[20];
    size_t n = 0;
    size_t i;
    do {
        tmp[n++] = (char)('0' + elk_fmt_div10(&v));
    } while (v != 0u);
    for (i = 0; i < n; i++) {
        out[i] = tmp[n - 1u - i];
    }
    return n;
}

void elk_fmt_uint(elk_fmt_t *f, uint64_t v)
{
    char tmp[20];
    elk_fmt_put(f, tmp, elk_fmt_u64(v, tmp));
}

void elk_fmt_int(elk_fmt_t *f, int64_t v)
{
    if (v < 0) {
        elk_fmt_put(f, "-", 1);
        /* -(v+1)+1 avoids overflow on INT64_MIN */
        elk_fmt_uint(f, (uint64_t)(-(v + 1)) + 1u);
    } else {
        elk_fmt_uint(f, (uint64_t)v);
    }
}

const char *elk_fmt_cstr(elk_fmt_t *f)
{
    if (f->cap == 0u) {
        return "";
    }
    if (f->len >= f->cap) {
        f->len = f->cap - 1u;
        f->truncated = true;
    }
    f->buf[f->len] = '\0';
    return f->buf;
}
