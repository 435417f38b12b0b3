/* SPDX-License-Identifier: MIT */
/*
 * printf family over semihosting, for the MCU test images. It replaces newlib-nano's
 * stdio for two reasons: newlib-nano's printf has no 64-bit conversions (PRIu64 and
 * %llu print nothing useful), and the simulator prints and formats 64-bit values
 * everywhere, including a value it sends to Redis (gw_setnx.c); and newlib's stdio
 * allocates its FILE buffers with malloc, while these images run with no heap at all.
 * Linked ahead of libc, these definitions are the ones used (the link would fail
 * with duplicates if any newlib stdio object were pulled in).
 *
 * Conversions: d i u x X o c s p % and f, with flags - 0 + space #, width and precision
 * (also *), lengths hh h l ll z j t. %f rounds the scaled value half-up (glibc rounds
 * exact ties to even), which the tests never compare.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mcu.h"
#include "semihost.h"

typedef struct sink {
    char *buf; /* string sink, or NULL for a console stream */
    size_t size;
    size_t n; /* characters produced (what snprintf returns) */
    int fd;
} sink_t;

typedef struct spec {
    bool left, zero, plus, space, alt;
    int width, prec; /* prec -1: none */
} spec_t;

static struct {
    char buf[512];
    size_t len;
} console[3];

static void console_flush(int fd)
{
    mcu_sh_write(fd, console[fd].buf, console[fd].len);
    console[fd].len = 0;
}

static void put(sink_t *s, char c)
{
    if (s->buf != NULL) {
        if (s->n + 1u < s->size) {
            s->buf[s->n] = c;
        }
    } else {
        console[s->fd].buf[console[s->fd].len++] = c;
        if (c == '\n' || console[s->fd].len == sizeof console[s->fd].buf) {
            console_flush(s->fd);
        }
    }
    s->n++;
}

static void put_n(sink_t *s, char c, int n)
{
    while (n-- > 0) {
        put(s, c);
    }
}

/* prefix (sign, 0x), then body, padded to the width as the flags say. */
static void emit(sink_t *s, const spec_t *sp, const char *prefix, const char *body, int len,
                 int zeros)
{
    int plen = (int)strlen(prefix);
    int pad = sp->width - plen - zeros - len;
    if (!sp->left && !sp->zero) {
        put_n(s, ' ', pad);
    }
    while (*prefix != '\0') {
        put(s, *prefix++);
    }
    if (!sp->left && sp->zero) {
        put_n(s, '0', pad);
    }
    put_n(s, '0', zeros);
    while (len-- > 0) {
        put(s, *body++);
    }
    if (sp->left) {
        put_n(s, ' ', pad);
    }
}

static int digits(char *end, uint64_t v, unsigned base, bool upper)
{
    const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    int n = 0;
    do {
        *--end = set[v % base];
        v /= base;
        n++;
    } while (v != 0u);
    return n;
}

static void fmt_int(sink_t *s, spec_t sp, uint64_t v, bool neg, unsigned base, bool upper)
{
    char tmp[24];
    const char *prefix = neg ? "-" : sp.plus ? "+" : sp.space ? " " : "";
    int len = 0, zeros = 0;
    if (base == 16u && sp.alt && v != 0u) {
        prefix = upper ? "0X" : "0x";
    }
    if (!(v == 0u && sp.prec == 0)) {
        len = digits(tmp + sizeof tmp, v, base, upper);
    }
    if (base == 8u && sp.alt && (len == 0 || tmp[sizeof tmp - (size_t)len] != '0')) {
        zeros = 1;
    }
    if (sp.prec >= 0) {
        sp.zero = false;
        if (sp.prec > len) {
            zeros = sp.prec - len;
        }
    }
    emit(s, &sp, prefix, tmp + sizeof tmp - len, len, zeros);
}

static void fmt_double(sink_t *s, spec_t sp, double d)
{
    char tmp[48];
    char *end = tmp + sizeof tmp;
    const char *prefix = d < 0 ? "-" : sp.plus ? "+" : sp.space ? " " : "";
    uint64_t ip, frac, scale = 1;
    int prec = sp.prec < 0 ? 6 : (sp.prec > 9 ? 9 : sp.prec);
    int i, len;
    if (d != d || d > 1e18 || d < -1e18) { /* NaN, or beyond this formatter's range */
        sp.zero = false;
        emit(s, &sp, prefix, d != d ? "nan" : "inf", 3, 0);
        return;
    }
    if (d < 0) {
        d = -d;
    }
    for (i = 0; i < prec; i++) {
        scale *= 10u;
    }
    ip = (uint64_t)d;
    frac = (uint64_t)((d - (double)ip) * (double)scale + 0.5);
    if (frac >= scale) {
        ip++;
        frac -= scale;
    }
    for (i = 0; i < prec; i++) {
        *--end = (char)('0' + frac % 10u);
        frac /= 10u;
    }
    if (prec > 0 || sp.alt) {
        *--end = '.';
    }
    len = (int)(tmp + sizeof tmp - end);
    len += digits(end, ip, 10u, false);
    emit(s, &sp, prefix, tmp + sizeof tmp - len, len, 0);
}

static const char *parse_spec(const char *f, spec_t *sp, va_list *ap)
{
    memset(sp, 0, sizeof *sp);
    sp->prec = -1;
    for (;; f++) {
        if (*f == '-') {
            sp->left = true;
        } else if (*f == '0') {
            sp->zero = true;
        } else if (*f == '+') {
            sp->plus = true;
        } else if (*f == ' ') {
            sp->space = true;
        } else if (*f == '#') {
            sp->alt = true;
        } else {
            break;
        }
    }
    if (*f == '*') {
        sp->width = va_arg(*ap, int);
        if (sp->width < 0) {
            sp->left = true;
            sp->width = -sp->width;
        }
        f++;
    }
    while (*f >= '0' && *f <= '9') {
        sp->width = sp->width * 10 + (*f++ - '0');
    }
    if (*f == '.') {
        f++;
        sp->prec = 0;
        if (*f == '*') {
            sp->prec = va_arg(*ap, int);
            f++;
        }
        while (*f >= '0' && *f <= '9') {
            sp->prec = sp->prec * 10 + (*f++ - '0');
        }
    }
    if (sp->left) {
        sp->zero = false;
    }
    return f;
}

/* Length modifier: 0 int, 1 long, 2 long long, 3 size_t/ptrdiff_t, 4 intmax_t; hh/h read int. */
static const char *parse_len(const char *f, int *len)
{
    *len = 0;
    if (*f == 'h') {
        f += f[1] == 'h' ? 2 : 1;
    } else if (*f == 'l') {
        *len = f[1] == 'l' ? 2 : 1;
        f += *len;
    } else if (*f == 'z' || *f == 't') {
        *len = 3;
        f++;
    } else if (*f == 'j') {
        *len = 4;
        f++;
    }
    return f;
}

static uint64_t arg_unsigned(va_list *ap, int len)
{
    switch (len) {
    case 1:
        return va_arg(*ap, unsigned long);
    case 2:
        return va_arg(*ap, unsigned long long);
    case 3:
        return va_arg(*ap, size_t);
    case 4:
        return va_arg(*ap, uintmax_t);
    default:
        return va_arg(*ap, unsigned int);
    }
}

static int64_t arg_signed(va_list *ap, int len)
{
    switch (len) {
    case 1:
        return va_arg(*ap, long);
    case 2:
        return va_arg(*ap, long long);
    case 3:
        return va_arg(*ap, ptrdiff_t);
    case 4:
        return va_arg(*ap, intmax_t);
    default:
        return va_arg(*ap, int);
    }
}

static void conv(sink_t *s, const spec_t *sp, char c, int len, va_list *ap)
{
    switch (c) {
    case 'd':
    case 'i': {
        int64_t v = arg_signed(ap, len);
        fmt_int(s, *sp, v < 0 ? 0u - (uint64_t)v : (uint64_t)v, v < 0, 10u, false);
        break;
    }
    case 'u':
        fmt_int(s, *sp, arg_unsigned(ap, len), false, 10u, false);
        break;
    case 'x':
        fmt_int(s, *sp, arg_unsigned(ap, len), false, 16u, false);
        break;
    case 'X':
        fmt_int(s, *sp, arg_unsigned(ap, len), false, 16u, true);
        break;
    case 'o':
        fmt_int(s, *sp, arg_unsigned(ap, len), false, 8u, false);
        break;
    case 'p': {
        spec_t p = *sp;
        p.alt = true;
        fmt_int(s, p, (uintptr_t)va_arg(*ap, void *), false, 16u, false);
        break;
    }
    case 'f':
    case 'F':
        fmt_double(s, *sp, va_arg(*ap, double));
        break;
    case 'c': {
        char ch = (char)va_arg(*ap, int);
        emit(s, sp, "", &ch, 1, 0);
        break;
    }
    case 's': {
        const char *str = va_arg(*ap, const char *);
        size_t n;
        if (str == NULL) {
            str = "(null)";
        }
        n = strlen(str);
        if (sp->prec >= 0 && (size_t)sp->prec < n) {
            n = (size_t)sp->prec;
        }
        emit(s, sp, "", str, (int)n, 0);
        break;
    }
    default: /* %% and anything unknown: printed as it is */
        put(s, c);
        break;
    }
}

static int format(sink_t *s, const char *f, va_list ap0)
{
    va_list ap;
    va_copy(ap, ap0);
    while (*f != '\0') {
        spec_t sp;
        int len;
        if (*f != '%') {
            put(s, *f++);
            continue;
        }
        f = parse_spec(f + 1, &sp, &ap);
        f = parse_len(f, &len);
        if (*f == '\0') {
            break;
        }
        conv(s, &sp, *f++, len, &ap);
    }
    va_end(ap);
    if (s->buf != NULL && s->size > 0u) {
        s->buf[s->n < s->size ? s->n : s->size - 1u] = '\0';
    }
    return (int)s->n;
}

static int stream_fd(FILE *f)
{
    return f == stderr ? 2 : 1;
}

int vsnprintf(char *buf, size_t size, const char *f, va_list ap)
{
    sink_t s = {buf, size, 0, 0};
    char dummy;
    if (size == 0u) {
        s.buf = &dummy; /* count only */
    }
    return format(&s, f, ap);
}

int snprintf(char *buf, size_t size, const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vsnprintf(buf, size, f, ap);
    va_end(ap);
    return n;
}

int vsprintf(char *buf, const char *f, va_list ap)
{
    sink_t s = {buf, (size_t)INT32_MAX, 0, 0}; /* the caller vouches for the room */
    return format(&s, f, ap);
}

int sprintf(char *buf, const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vsprintf(buf, f, ap);
    va_end(ap);
    return n;
}

int vfprintf(FILE *stream, const char *f, va_list ap)
{
    sink_t s = {NULL, 0, 0, stream_fd(stream)};
    return format(&s, f, ap);
}

int fprintf(FILE *stream, const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vfprintf(stream, f, ap);
    va_end(ap);
    return n;
}

int printf(const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vfprintf(stdout, f, ap);
    va_end(ap);
    return n;
}

int fputc(int c, FILE *stream)
{
    sink_t s = {NULL, 0, 0, stream_fd(stream)};
    put(&s, (char)c);
    return (unsigned char)c;
}

int putchar(int c)
{
    return fputc(c, stdout);
}

int fputs(const char *str, FILE *stream)
{
    sink_t s = {NULL, 0, 0, stream_fd(stream)};
    while (*str != '\0') {
        put(&s, *str++);
    }
    return 0;
}

int puts(const char *str)
{
    (void)fputs(str, stdout);
    return fputc('\n', stdout);
}

int fflush(FILE *stream)
{
    if (stream == NULL || stream_fd(stream) == 1) {
        console_flush(1);
    }
    if (stream == NULL || stream_fd(stream) == 2) {
        console_flush(2);
    }
    return 0;
}

void mcu_stdio_exit(int code)
{
    console_flush(1);
    console_flush(2);
    mcu_sh_exit(code);
}
