/* SPDX-License-Identifier: MIT */
/*
 * Tiny text builder for log lines, so lib/ never needs snprintf: append strings,
 * bytes and integers into a caller-owned buffer. Appends that do not fit are cut
 * off (and flagged), never written past the buffer. Internal to lib/ (not installed):
 * its modules include it as "../util/fmt.h".
 */
#ifndef ELK_FMT_H
#define ELK_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct elk_fmt {
    char *buf; /* caller-owned; not NUL-terminated unless elk_fmt_cstr is called */
    size_t cap;
    size_t len;     /* bytes written so far (<= cap) */
    bool truncated; /* something did not fit */
} elk_fmt_t;

/* Start building into buf[0..cap). buf may be NULL with cap 0 (everything truncates). */
void elk_fmt_init(elk_fmt_t *f, char *buf, size_t cap);
/* Append a NUL-terminated string (NULL appends "(null)"). */
void elk_fmt_str(elk_fmt_t *f, const char *s);
/* Append len bytes as text; bytes outside printable ASCII become '?' so a hostile
 * server reply cannot inject control characters into a log. */
void elk_fmt_bytes(elk_fmt_t *f, const uint8_t *p, size_t len);
/* Append a signed / unsigned decimal integer. */
void elk_fmt_int(elk_fmt_t *f, int64_t v);
void elk_fmt_uint(elk_fmt_t *f, uint64_t v);
/* Write v in decimal to out (caller-owned, room for 20 bytes, no NUL); returns the
 * digit count. Used by the log lines, and by the RESP encoder on 32-bit targets. */
size_t elk_fmt_u64(uint64_t v, char *out);
/* NUL-terminate (within cap, cutting the last byte if full) and return buf; "" if cap is 0. */
const char *elk_fmt_cstr(elk_fmt_t *f);

#ifdef __cplusplus
}
#endif

#endif /* ELK_FMT_H */
