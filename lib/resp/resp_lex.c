/* SPDX-License-Identifier: MIT */
/* Lexical checks for RESP3 doubles, big numbers and verbatim strings. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "resp_lex.h"

static size_t elk_resp_lex_digits(const uint8_t *s, size_t i, size_t len)
{
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        i++;
    }
    return i;
}

/* Index just past an optional sign and at least one digit from s[i], or 0 when there
 * is no digit (a success is never 0). Shared by doubles, exponents and big numbers. */
static size_t elk_resp_lex_int(const uint8_t *s, size_t i, size_t len)
{
    size_t j;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        i++;
    }
    j = elk_resp_lex_digits(s, i, len);
    return j == i ? 0u : j;
}

/* The doubles without digits: nan, inf, +inf, -inf. */
static bool elk_resp_lex_inf_nan(const uint8_t *s, size_t len)
{
    size_t i = 0;
    if (len == 3u && memcmp(s, "nan", 3u) == 0) {
        return true;
    }
    if (len > 0u && (s[0] == '+' || s[0] == '-')) {
        i = 1;
    }
    return len - i == 3u && memcmp(s + i, "inf", 3u) == 0;
}

bool elk_resp_lex_double(const uint8_t *s, size_t len)
{
    size_t i;
    size_t j;
    if (elk_resp_lex_inf_nan(s, len)) {
        return true;
    }
    i = elk_resp_lex_int(s, 0, len); /* an integral part is required */
    if (i == 0u) {
        return false;
    }
    if (i < len && s[i] == '.') {
        j = elk_resp_lex_digits(s, i + 1u, len);
        if (j == i + 1u) {
            return false;
        }
        i = j;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i = elk_resp_lex_int(s, i + 1u, len);
        if (i == 0u) {
            return false;
        }
    }
    return i == len;
}

bool elk_resp_lex_bignum(const uint8_t *s, size_t len)
{
    size_t e = elk_resp_lex_int(s, 0, len);
    return e != 0u && e == len;
}

int elk_resp_lex_verbatim(elk_resp_node_t *n)
{
    size_t k;
    if (n->len < 4u || n->str[3] != ':') {
        return ELK_E_RESP_PROTOCOL;
    }
    for (k = 0; k < 3u; k++) {
        uint8_t c = n->str[k];
        if (c <= ' ' || c > '~' || c == ':') {
            return ELK_E_RESP_PROTOCOL;
        }
        n->format[k] = (char)c;
    }
    n->str += 4;
    n->len -= 4u;
    return ELK_OK;
}
