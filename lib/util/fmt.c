/* Text builder for log lines (see elk/fmt.h). */
#include "elk/fmt.h"

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

void elk_fmt_uint(elk_fmt_t *f, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[sizeof tmp - 1u - n] = (char)('0' + (int)(v % 10u));
        v /= 10u;
        n++;
    } while (v != 0u);
    elk_fmt_put(f, tmp + sizeof tmp - n, n);
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
