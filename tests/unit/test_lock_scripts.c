/* SPDX-License-Identifier: MIT */
/*
 * The script constants in elk/lock_scripts.h: each *_SHA1 must be the SHA1 of its
 * text (what Redis computes for EVALSHA), recomputed here with a small test-only
 * SHA1 that is itself checked against the FIPS 180 test vectors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/fair_scripts.h"
#include "elk/lock.h"
#include "elk/lock_scripts.h"
#include "elk/resp.h"

static uint32_t rol(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32u - n));
}

static void sha1_block(uint32_t h[5], const uint8_t *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
            (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    }
    for (int i = 16; i < 80; i++) {
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (b & c) | (~b & d);
            k = 0x5A827999u;
        } else if (i < 40) {
            f = b ^ c ^ d;
            k = 0x6ED9EBA1u;
        } else if (i < 60) {
            f = (b & c) | (b & d) | (c & d);
            k = 0x8F1BBCDCu;
        } else {
            f = b ^ c ^ d;
            k = 0xCA62C1D6u;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

/* SHA1 of s as 40 lowercase hex digits into out[41]. */
static void sha1_hex(const char *s, char out[41])
{
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    size_t len = strlen(s);
    size_t i = 0;
    uint8_t blk[64];
    for (; i + 64 <= len; i += 64) {
        sha1_block(h, (const uint8_t *)s + i);
    }
    size_t rest = len - i;
    memset(blk, 0, sizeof blk);
    memcpy(blk, s + i, rest);
    blk[rest] = 0x80;
    if (rest >= 56) {
        sha1_block(h, blk);
        memset(blk, 0, sizeof blk);
    }
    uint64_t bits = (uint64_t)len * 8u;
    for (int k = 0; k < 8; k++) {
        blk[63 - k] = (uint8_t)(bits >> (8 * k));
    }
    sha1_block(h, blk);
    for (int k = 0; k < 5; k++) {
        snprintf(out + 8 * k, 9, "%08x", h[k]);
    }
}

static void test_sha1_vectors(void **state)
{
    (void)state;
    char hex[41];
    sha1_hex("", hex);
    assert_string_equal(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    sha1_hex("abc", hex);
    assert_string_equal(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
    sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex);
    assert_string_equal(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

static void test_script_sha1_constants(void **state)
{
    (void)state;
    char hex[41];
    sha1_hex(ELK_LOCK_SCRIPT_ACQUIRE, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_ACQUIRE_SHA1);
    sha1_hex(ELK_LOCK_SCRIPT_EXTEND, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_EXTEND_SHA1);
    sha1_hex(ELK_LOCK_SCRIPT_RELEASE, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_RELEASE_SHA1);
    sha1_hex(ELK_LOCK_SCRIPT_COMMIT, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_COMMIT_SHA1);
    sha1_hex(ELK_LOCK_SCRIPT_SAFETY, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_SAFETY_SHA1);
    sha1_hex(ELK_LOCK_SCRIPT_PROBE, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_PROBE_SHA1);
    sha1_hex(ELK_LOCK_SCRIPT_EXTEND_BATCH, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_EXTEND_BATCH_SHA1);
    sha1_hex(ELK_LOCK_SCRIPT_RELEASE_BATCH, hex);
    assert_string_equal(hex, ELK_LOCK_SCRIPT_RELEASE_BATCH_SHA1);
    sha1_hex(ELK_FAIR_SCRIPT_KEEP, hex); /* fair waiting's (lib/fair) */
    assert_string_equal(hex, ELK_FAIR_SCRIPT_KEEP_SHA1);
    sha1_hex(ELK_FAIR_SCRIPT_LEAVE, hex);
    assert_string_equal(hex, ELK_FAIR_SCRIPT_LEAVE_SHA1);
}

static void test_scripts_shape(void **state)
{
    (void)state;
    /* one trailing newline each (part of the hashed text), the documented calls inside */
    const char *all[] = {ELK_LOCK_SCRIPT_ACQUIRE, ELK_LOCK_SCRIPT_EXTEND, ELK_LOCK_SCRIPT_RELEASE,
                         ELK_LOCK_SCRIPT_COMMIT, ELK_LOCK_SCRIPT_PROBE};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        size_t n = strlen(all[i]);
        assert_true(n > 2);
        assert_int_equal(all[i][n - 1], '\n');
        assert_int_not_equal(all[i][n - 2], '\n');
    }
    assert_non_null(strstr(ELK_LOCK_SCRIPT_ACQUIRE, "'PX',a[2])"));
    /* the token: the counter + 1, at least the server's clock in microseconds */
    assert_non_null(strstr(ELK_LOCK_SCRIPT_ACQUIRE,
                           "math.max((tonumber(c('GET',k[2]))or 0)+1,u,tonumber(a[5])or 0)"));
    /* the clock check needs the server's TIME in every acquire and renewal reply */
    assert_non_null(strstr(ELK_LOCK_SCRIPT_ACQUIRE, "c('TIME')"));
    assert_non_null(strstr(ELK_LOCK_SCRIPT_EXTEND, "c('TIME')"));
    /* the amnesia check: both read (and create) the fleet marker, the last key */
    assert_non_null(strstr(ELK_LOCK_SCRIPT_ACQUIRE, "c('GET',k[4])"));
    assert_non_null(strstr(ELK_LOCK_SCRIPT_EXTEND, "c('GET',k[3])"));
    /* lock-delay: acquire honours the marker, renewal pushes it out, release deletes it */
    assert_non_null(strstr(ELK_LOCK_SCRIPT_ACQUIRE, "EXISTS',k[3]"));
    assert_non_null(strstr(ELK_LOCK_SCRIPT_EXTEND, "SET',k[2]"));
    assert_non_null(strstr(ELK_LOCK_SCRIPT_RELEASE, "DEL', KEYS[2]"));
    assert_non_null(strstr(ELK_LOCK_SCRIPT_EXTEND, "PEXPIRE"));
    assert_non_null(strstr(ELK_LOCK_SCRIPT_RELEASE, "PUBLISH"));
    assert_non_null(strstr(ELK_LOCK_SCRIPT_PROBE, "run_id"));
    assert_string_equal(ELK_LOCK_DELAY_SUFFIX, ":delay");
    assert_non_null(strstr(ELK_LOCK_SCRIPT_COMMIT, "tonumber"));
    assert_string_equal(ELK_LOCK_FENCE_SUFFIX, ":fence");
    assert_string_equal(ELK_LOCK_CHANNEL_SUFFIX, ":released");
}

/* The longest request the engine can send fits ELK_LOCK_REQUEST_MAX, which the build
 * demands of CONFIG_ELK_POOL_BLOCK_SIZE: EVAL of every script with keys, value and
 * numbers at their longest. (With 256-byte blocks the commit's EVAL could never be sent
 * and Redlock leases were never granted.) */
static void test_longest_request_fits_the_bound(void **state)
{
    (void)state;
    static const char *scripts[] = {ELK_LOCK_SCRIPT_ACQUIRE, ELK_LOCK_SCRIPT_EXTEND,
                                    ELK_LOCK_SCRIPT_RELEASE, ELK_LOCK_SCRIPT_COMMIT};
    char key[CONFIG_ELK_MAX_KEY_LEN + 1], value[ELK_LOCK_VALUE_MAX + 1];
    char marker[CONFIG_ELK_MAX_KEY_LEN + sizeof(ELK_LOCK_MARKER_NAME)];
    uint8_t buf[ELK_LOCK_REQUEST_MAX + 256];
    size_t longest = 0;
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    memset(value, 'v', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    memset(marker, 'p', CONFIG_ELK_MAX_KEY_LEN);
    memcpy(marker + CONFIG_ELK_MAX_KEY_LEN, ELK_LOCK_MARKER_NAME, sizeof(ELK_LOCK_MARKER_NAME));
    for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
        /* the widest argument list of any script (ACQUIRE's): 3 keys, the fleet marker
         * (the longest prefix and "marker"), value, ttl, flag, lock delay (both uint32), the
         * token floor (an int64: 20 characters at most) */
        elk_resp_arg_t argv[12] = {
            elk_resp_arg_cstr("EVAL"), elk_resp_arg_cstr(scripts[i]), elk_resp_arg_int(4),
            elk_resp_arg_cstr(key),    elk_resp_arg_cstr(key),        elk_resp_arg_cstr(key),
            elk_resp_arg_cstr(marker), elk_resp_arg_cstr(value),      elk_resp_arg_int(UINT32_MAX),
            elk_resp_arg_cstr("1"),    elk_resp_arg_int(UINT32_MAX),  elk_resp_arg_int(INT64_MIN)};
        size_t len = 0;
        assert_int_equal(elk_resp_encode_command(buf, sizeof buf, argv, 12, &len), ELK_OK);
        if (len > longest) {
            longest = len;
        }
    }
    assert_true(longest <= ELK_LOCK_REQUEST_MAX);
    assert_true(CONFIG_ELK_POOL_BLOCK_SIZE >= ELK_LOCK_REQUEST_MAX);
    /* the bound is not slack enough to hide a much longer script */
    assert_true(ELK_LOCK_REQUEST_MAX - longest < 64u);
}

int main(void)
{
    return ELK_RUN_TESTS(test_sha1_vectors, test_script_sha1_constants, test_scripts_shape,
                         test_longest_request_fits_the_bound);
}
