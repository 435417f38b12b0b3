/* SPDX-License-Identifier: MIT */
/* The lease file's one line (elkfw/lease.h): parse, judge, format. */
#include "elkfw/lease.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define LEASE_MAGIC "elklease 1 "

/* One decimal number at *p (up to end), stopping at the first non-digit. Rejects an
 * empty number, leading zeros and overflow. */
static bool lease_number(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (s >= end || *s < '0' || *s > '9') {
        return false;
    }
    if (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9') {
        return false;
    }
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10u) {
            return false;
        }
        v = v * 10u + d;
    }
    *p = s;
    *out = v;
    return true;
}

bool elkfw_lease_parse(const char *buf, size_t len, uint64_t *token, uint64_t *deadline_ms)
{
    const size_t mlen = sizeof(LEASE_MAGIC) - 1u;
    const char *p, *end;
    uint64_t t, d;
    if (buf == NULL || len < mlen || memcmp(buf, LEASE_MAGIC, mlen) != 0) {
        return false;
    }
    p = buf + mlen;
    end = buf + len;
    if (!lease_number(&p, end, &t) || p >= end || *p++ != ' ' || !lease_number(&p, end, &d) ||
        p + 1 != end || *p != '\n') {
        return false;
    }
    if (token != NULL) {
        *token = t;
    }
    if (deadline_ms != NULL) {
        *deadline_ms = d;
    }
    return true;
}

elkfw_lease_verdict_t elkfw_lease_judge(const char *buf, size_t len, uint64_t token,
                                        uint64_t now_ms, uint64_t *file_token,
                                        uint64_t *deadline_ms)
{
    uint64_t t = 0, d = 0;
    elkfw_lease_verdict_t v;
    if (!elkfw_lease_parse(buf, len, &t, &d)) {
        v = ELKFW_LEASE_MALFORMED;
        t = d = 0;
    } else if (d == 0) {
        v = ELKFW_LEASE_ENDED;
    } else if (t != token) {
        v = ELKFW_LEASE_TOKEN;
    } else if (now_ms >= d) {
        v = ELKFW_LEASE_EXPIRED;
    } else {
        v = ELKFW_LEASE_OK;
    }
    if (file_token != NULL) {
        *file_token = t;
    }
    if (deadline_ms != NULL) {
        *deadline_ms = d;
    }
    return v;
}

size_t elkfw_lease_format(char *buf, size_t cap, uint64_t token, uint64_t deadline_ms)
{
    int n;
    if (buf == NULL || cap == 0) {
        return 0;
    }
    n = snprintf(buf, cap, LEASE_MAGIC "%" PRIu64 " %" PRIu64 "\n", token, deadline_ms);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

const char *elkfw_lease_verdict_text(elkfw_lease_verdict_t v)
{
    switch (v) {
    case ELKFW_LEASE_OK:
        return "lease current";
    case ELKFW_LEASE_MALFORMED:
        return "lease file is not one 'elklease 1 <token> <deadline_ms>' line";
    case ELKFW_LEASE_ENDED:
        return "lease ended (lost or released)";
    case ELKFW_LEASE_EXPIRED:
        return "lease deadline passed";
    case ELKFW_LEASE_TOKEN:
        return "lease file names another token (a newer or older lease)";
    }
    return "unknown verdict";
}
