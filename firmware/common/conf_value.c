/* SPDX-License-Identifier: MIT */
/* The configuration's values: durations, fractions, switches, numbers, names, modes. */
#include "conf_internal.h"

/* ------------------------------------------------------------------ helpers */

bool elkfw_conf__is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Letters, digits and . _ - : / @: what a resource, node or gateway name may hold. */
static bool name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
        ch == '.' || ch == '_' || ch == '-' || ch == ':' || ch == '/' || ch == '@';
}

bool elkfw_name_valid(const char *name, size_t len, size_t max)
{
    size_t i;
    if (name == NULL || len == 0 || len > max) {
        return false;
    }
    for (i = 0; i < len; i++) {
        if (!name_char((unsigned char)name[i])) {
            return false;
        }
    }
    return true;
}

size_t elkfw_permit_sem_len(const char *name)
{
    const char *h = strrchr(name, '#');
    const char *d;
    if (h == NULL || h == name || h[1] < '1' || h[1] > '9') {
        return 0;
    }
    for (d = h + 1; *d != '\0'; d++) {
        if (*d < '0' || *d > '9' || d - h > 3) {
            return 0;
        }
    }
    return strtoul(h + 1, NULL, 10) <= ELKFW_MAX_PERMITS ? (size_t)(h - name) : 0u;
}

bool elkfw_lease_name_valid(const char *name, size_t len, size_t max)
{
    char buf[ELKFW_NAME_MAX];
    size_t sl;
    if (name == NULL || len == 0 || len > max || len >= sizeof buf) {
        return false;
    }
    if (memchr(name, '#', len) == NULL) {
        return elkfw_name_valid(name, len, max);
    }
    memcpy(buf, name, len);
    buf[len] = '\0';
    sl = elkfw_permit_sem_len(buf);
    return sl != 0 && elkfw_name_valid(name, sl, max);
}

size_t elkfw_resource_name_max(const elkfw_conf_t *c)
{
    /* "<prefix>{" + name + "}:released" */
    size_t overhead = strlen(c->key_prefix) + 1u + strlen("}:released");
    size_t max = overhead < CONFIG_ELK_MAX_KEY_LEN ? CONFIG_ELK_MAX_KEY_LEN - overhead : 0u;
    return max < ELKFW_NAME_MAX - 1u ? max : ELKFW_NAME_MAX - 1u;
}

/* The unit after a duration's digits (len bytes, maybe none): its multiplier to ms. */
static bool duration_unit(const char *u, size_t len, uint64_t *mult)
{
    if (len == 0 || (len == 2 && memcmp(u, "ms", 2) == 0)) {
        *mult = 1;
    } else if (len == 1 && u[0] == 's') {
        *mult = 1000;
    } else if (len == 1 && u[0] == 'm') {
        *mult = 60000;
    } else if (len == 1 && u[0] == 'h') {
        *mult = 3600000;
    } else {
        return false;
    }
    return true;
}

bool elkfw_parse_duration(const char *s, size_t len, uint32_t *ms)
{
    uint64_t v = 0, mult;
    size_t i = 0;
    if (s == NULL || len == 0) {
        return false;
    }
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        v = v * 10u + (uint64_t)(s[i] - '0');
        if (v > UINT32_MAX) {
            return false;
        }
        i++;
    }
    if (i == 0 || !duration_unit(s + i, len - i, &mult)) {
        return false;
    }
    if (v * mult > UINT32_MAX) {
        return false;
    }
    *ms = (uint32_t)(v * mult);
    return true;
}

/* Digits s[from..to) into *v (added to its value): false on any other byte or on more than
 * max_digits digits; *n gets the count. */
static bool digits_to_end(const char *s, size_t from, size_t to, int max_digits, uint64_t *v,
                          int *n)
{
    size_t i;
    *n = 0;
    for (i = from; i < to; i++) {
        if (s[i] < '0' || s[i] > '9' || ++*n > max_digits) {
            return false;
        }
        *v = *v * 10u + (uint64_t)(s[i] - '0');
    }
    return true;
}

/* "33%": 1 to 99 percent. */
static bool parse_percent(const char *s, size_t len, uint32_t *ppm)
{
    uint64_t num = 0;
    int digits;
    if (!digits_to_end(s, 0, len - 1, 3, &num, &digits) || digits == 0 || num == 0 || num >= 100) {
        return false;
    }
    *ppm = (uint32_t)(num * 10000u);
    return true;
}

/* "1/3": num (already read) over the digits after the slash at s[slash]. */
static bool parse_ratio(const char *s, size_t slash, size_t len, uint64_t num, uint32_t *ppm)
{
    uint64_t d = 0;
    int ddigits;
    if (!digits_to_end(s, slash + 1, len, 6, &d, &ddigits) || ddigits == 0 || d == 0 || num == 0 ||
        num >= d) {
        return false;
    }
    *ppm = (uint32_t)(num * 1000000u / d);
    return *ppm > 0;
}

/* "0.33", ".5": the digits after the point at s[dot]. */
static bool parse_decimal(const char *s, size_t dot, size_t len, uint32_t *ppm)
{
    uint64_t num = 0, den = 1;
    int frac_digits, k;
    if (!digits_to_end(s, dot + 1, len, 6, &num, &frac_digits) || frac_digits == 0 || num == 0) {
        return false;
    }
    for (k = 0; k < frac_digits; k++) {
        den *= 10u;
    }
    *ppm = (uint32_t)(num * 1000000u / den);
    return *ppm > 0;
}

/* "0.33", ".5", "33%", "1/3" -> parts per million in (0, 1e6). */
bool elkfw_conf__parse_fraction(const char *s, size_t len, uint32_t *ppm)
{
    uint64_t num = 0;
    size_t i;
    int digits = 0;
    if (len == 0) {
        return false;
    }
    if (s[len - 1] == '%') {
        return parse_percent(s, len, ppm);
    }
    for (i = 0; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        if (++digits > 6) {
            return false;
        }
        num = num * 10u + (uint64_t)(s[i] - '0');
    }
    if (i < len && s[i] == '/') {
        return digits != 0 && parse_ratio(s, i, len, num, ppm);
    }
    if (i < len && s[i] == '.') {
        return num == 0 && parse_decimal(s, i, len, ppm); /* "1.5" is not below 1 */
    }
    return false;
}

int elkfw_conf__parse_bool(const char *s, size_t len)
{
    static const char *const yes[] = {"on", "yes", "true", "1"};
    static const char *const no[] = {"off", "no", "false", "0"};
    size_t i;
    for (i = 0; i < 4; i++) {
        if (strlen(yes[i]) == len && strncasecmp(s, yes[i], len) == 0) {
            return 1;
        }
        if (strlen(no[i]) == len && strncasecmp(s, no[i], len) == 0) {
            return 0;
        }
    }
    return -1;
}

bool elkfw_conf__parse_u32(const char *s, size_t len, uint32_t *out)
{
    uint64_t v = 0;
    size_t i;
    if (len == 0 || len > 10) {
        return false;
    }
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10u + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Quote a value for a message: at most 40 bytes, unprintable bytes as '?'. */
void elkfw_conf__quote_value(char *out, size_t cap, const char *s, size_t len)
{
    size_t i, n = len > 40 ? 40 : len, o = 0;
    for (i = 0; i < n && o + 1 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[o++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    if (len > n && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o < cap ? o : cap - 1] = '\0';
}

const char *elkfw_mode_name(elkfw_mode_t m)
{
    return m == ELKFW_MODE_REDLOCK ? "redlock" : "single";
}

/* "name, 1000,other": names or ids of users or groups, commas and spaces between. Names
 * as useradd takes them; whether each exists is elkfw_access_resolve's business. */
bool elkfw_conf__idlist_valid(const char *v, size_t len)
{
    size_t i;
    bool any = false;
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch == ',' || ch == ' ') {
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-')) {
            return false;
        }
        any = true;
    }
    return any;
}

/* "0660": up to four octal digits, at most max. */
bool elkfw_conf__parse_octal(const char *v, size_t vlen, uint32_t max, uint32_t *out)
{
    uint32_t u = 0;
    size_t k;
    if (vlen == 0 || vlen > 4) {
        return false;
    }
    for (k = 0; k < vlen; k++) {
        if (v[k] < '0' || v[k] > '7') {
            return false;
        }
        u = u * 8u + (uint32_t)(v[k] - '0');
    }
    *out = u;
    return u <= max;
}
