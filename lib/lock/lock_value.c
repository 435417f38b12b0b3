/* SPDX-License-Identifier: MIT */
/*
 * What the lock draws from the injected entropy: a fresh lock value for each
 * acquisition, and the random delay between a waiter's retries.
 */
#include <string.h>

#include "lock_internal.h"

/* Hex digits of the random bytes. On a 64-bit little-endian host 4 bytes at a time,
 * spread one nibble per byte lane: a third of the instructions of the byte loop,
 * which every acquisition runs. Elsewhere the byte loop in elk_lock__new_value, the smaller
 * code on a Cortex-M. Both write the same digits. */
#if UINTPTR_MAX > 0xFFFFFFFFu && defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) &&    \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LK_HEX_WIDE 1
static void lk_hex(char *out, const uint8_t *rnd)
{
    const uint64_t lo4 = 0x000f000f000f000fu;
    const uint64_t ones = 0x0101010101010101u;
    size_t i;
    for (i = 0; i < ELK_LOCK_RANDOM_BYTES; i += 4u) {
        uint32_t w;
        uint64_t t;
        uint64_t v;
        memcpy(&w, rnd + i, 4);
        /* byte k of w to 16-bit lane k, then high nibble first in each lane */
        t = ((uint64_t)w | ((uint64_t)w << 16)) & 0x0000ffff0000ffffu;
        t = (t | (t << 8)) & 0x00ff00ff00ff00ffu;
        v = ((t >> 4) & lo4) | ((t & lo4) << 8);
        /* '0' + n, plus 'a' - '0' - 10 = 39 where n >= 10 (n + 6 carries into bit 4) */
        v += 0x30u * ones + (((v + 6u * ones) >> 4) & ones) * 39u;
        memcpy(out + 2u * i, &v, 8);
    }
}
#else
#define LK_HEX_WIDE 0
#endif

/* A fresh lock value: "<gateway id>:<32 hex digits>" from the injected entropy. */
int elk_lock__new_value(elk_lock_t *lock)
{
#if !LK_HEX_WIDE
    static const char hex[] = "0123456789abcdef";
    size_t i;
#endif
    const elk_client_t *c = lock->client;
    uint8_t rnd[ELK_LOCK_RANDOM_BYTES];
    size_t idlen = strlen(c->cfg.gateway_id);
    /* c->entropy and its fill are set: elk_client_init refuses a client without them. */
    if (c->entropy->fill(c->entropy->ctx, rnd, sizeof(rnd)) != ELK_OK) {
        return ELK_E_ENTROPY;
    }
    memcpy(lock->value, c->cfg.gateway_id, idlen);
    lock->value[idlen] = ':';
#if LK_HEX_WIDE
    lk_hex(lock->value + idlen + 1u, rnd);
#else
    for (i = 0; i < sizeof(rnd); i++) {
        lock->value[idlen + 1u + 2u * i] = hex[rnd[i] >> 4];
        lock->value[idlen + 2u + 2u * i] = hex[rnd[i] & 15u];
    }
#endif
    lock->value_len = (uint16_t)(idlen + 1u + 2u * sizeof(rnd));
    lock->value[lock->value_len] = '\0';
    return ELK_OK;
}

uint32_t elk_lock__random_delay(const elk_lock_t *lock)
{
    const elk_client_t *c = lock->client;
    uint32_t span = lock->cfg.wait_max_ms - lock->cfg.wait_min_ms;
    uint8_t b[4];
    uint32_t r;
    if (span == 0u || c->entropy->fill(c->entropy->ctx, b, sizeof(b)) != ELK_OK) {
        return lock->cfg.wait_min_ms;
    }
    r = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
    return lock->cfg.wait_min_ms + (uint32_t)(r % (span + 1u));
}
