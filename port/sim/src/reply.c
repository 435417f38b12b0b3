/* SPDX-License-Identifier: MIT */
/* RESP2/RESP3 reply encoding for the simulated Redis: the server half of the
 * protocol, which lib/resp (a client codec) does not need to provide. */
#include <string.h>

#include "elk/sim.h"

static void put(elk_sim_reply_t *out, const void *p, size_t n)
{
    if (out->overflow || n > sizeof(out->buf) - out->len) {
        out->overflow = true;
        return;
    }
    memcpy(out->buf + out->len, p, n);
    out->len += n;
}

static void put_line(elk_sim_reply_t *out, char type, int64_t v)
{
    uint8_t num[20];
    size_t n = elk_resp_format_int(v, num);
    put(out, &type, 1u);
    put(out, num, n);
    put(out, "\r\n", 2u);
}

void elk_sim_reply_simple(elk_sim_reply_t *out, const char *text)
{
    put(out, "+", 1u);
    put(out, text, strlen(text));
    put(out, "\r\n", 2u);
}

void elk_sim_reply_error(elk_sim_reply_t *out, const char *text)
{
    put(out, "-", 1u);
    put(out, text, strlen(text));
    put(out, "\r\n", 2u);
}

void elk_sim_reply_int(elk_sim_reply_t *out, int64_t v)
{
    put_line(out, ':', v);
}

void elk_sim_reply_bulk(elk_sim_reply_t *out, const uint8_t *p, size_t len)
{
    put_line(out, '$', (int64_t)len);
    put(out, p, len);
    put(out, "\r\n", 2u);
}

void elk_sim_reply_cstr(elk_sim_reply_t *out, const char *s)
{
    elk_sim_reply_bulk(out, (const uint8_t *)s, strlen(s));
}

void elk_sim_reply_null(elk_sim_reply_t *out)
{
    if (out->proto == 3u) {
        put(out, "_\r\n", 3u);
    } else {
        put(out, "$-1\r\n", 5u);
    }
}

void elk_sim_reply_array(elk_sim_reply_t *out, size_t n)
{
    put_line(out, '*', (int64_t)n);
}

void elk_sim_reply_map(elk_sim_reply_t *out, size_t n_pairs)
{
    if (out->proto == 3u) {
        put_line(out, '%', (int64_t)n_pairs);
    } else {
        put_line(out, '*', (int64_t)(2u * n_pairs));
    }
}

void elk_sim_reply_push(elk_sim_reply_t *out, size_t n)
{
    put_line(out, out->proto == 3u ? '>' : '*', (int64_t)n);
}

void elk_sim_reply_oom(elk_sim_reply_t *out)
{
    elk_sim_reply_error(out, "OOM command not allowed when used memory > 'maxmemory'.");
}
