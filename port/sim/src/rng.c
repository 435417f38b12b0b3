/* SPDX-License-Identifier: MIT */
/* Seeded PRNG (xoshiro256** over splitmix64) and the entropy adapter built on it.
 * Reproducibility is the whole point: the same seed must give the same stream on
 * every host, so only fixed-width integer arithmetic is used. */
#include "elk/sim.h"

uint64_t elk_sim_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void elk_sim_rng_seed(elk_sim_rng_t *rng, uint64_t seed)
{
    uint64_t st = seed;
    size_t i;
    for (i = 0; i < 4u; i++) {
        rng->s[i] = elk_sim_splitmix64(&st);
    }
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t elk_sim_rng_next(elk_sim_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5u, 7) * 9u;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t elk_sim_rng_range(elk_sim_rng_t *rng, uint64_t lo, uint64_t hi)
{
    uint64_t span;
    if (hi <= lo) {
        return lo;
    }
    span = hi - lo + 1u;
    if (span == 0u) {
        return elk_sim_rng_next(rng);
    }
    /* The modulo bias is below 2^-40 for every span used here; determinism matters
     * more than perfect uniformity. */
    return lo + elk_sim_rng_next(rng) % span;
}

bool elk_sim_rng_chance(elk_sim_rng_t *rng, uint32_t ppm)
{
    if (ppm == 0u) {
        return false;
    }
    return elk_sim_rng_next(rng) % 1000000u < ppm;
}

static int rng_fill(void *ctx, uint8_t *buf, size_t len)
{
    elk_sim_rng_t *rng = (elk_sim_rng_t *)ctx;
    size_t i = 0;
    if (rng == NULL || (buf == NULL && len > 0u)) {
        return ELK_E_INVALID_ARG;
    }
    while (i < len) {
        uint64_t v = elk_sim_rng_next(rng);
        size_t k;
        for (k = 0; k < 8u && i < len; k++, i++) {
            buf[i] = (uint8_t)(v >> (8u * k));
        }
    }
    return ELK_OK;
}

elk_entropy_t elk_sim_rng_entropy(elk_sim_rng_t *rng)
{
    elk_entropy_t e;
    e.ctx = rng;
    e.fill = rng_fill;
    return e;
}
