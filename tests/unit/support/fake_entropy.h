/* SPDX-License-Identifier: MIT */
/*
 * Deterministic entropy for unit tests: an elk_entropy_t that yields a reproducible
 * byte stream from a seed (splitmix64), or a fixed pattern, and can be told to fail.
 *
 *     fake_entropy_t fe;
 *     fake_entropy_init(&fe, 1);               // seeded stream
 *     fake_entropy_set_fixed(&fe, 0x00);       // or: every byte 0x00 (minimum jitter)
 *     fake_entropy_fail_next(&fe, 1);          // next fill() returns ELK_E_ENTROPY
 *     elk_entropy_t e = fake_entropy_iface(&fe);
 */
#ifndef FAKE_ENTROPY_H
#define FAKE_ENTROPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/platform.h"

typedef struct fake_entropy {
    uint64_t state; /* splitmix64 state */
    bool fixed;     /* every byte is fixed_byte instead of the stream */
    uint8_t fixed_byte;
    unsigned fail;  /* fill() calls still to fail with ELK_E_ENTROPY */
    unsigned calls; /* fill() calls so far (including failed ones) */
    size_t bytes;   /* bytes handed out so far */
} fake_entropy_t;

/* Seeded stream; the same seed gives the same bytes in every run. */
void fake_entropy_init(fake_entropy_t *e, uint64_t seed);
/* The elk_entropy_t to hand to lib/ (ctx = e). */
elk_entropy_t fake_entropy_iface(fake_entropy_t *e);
/* Every byte from now on is b (0x00: smallest random values, 0xFF: largest). */
void fake_entropy_set_fixed(fake_entropy_t *e, uint8_t b);
/* Back to the seeded stream (restarted from seed). */
void fake_entropy_set_stream(fake_entropy_t *e, uint64_t seed);
/* The next n fill() calls fail with ELK_E_ENTROPY (buffer left untouched). */
void fake_entropy_fail_next(fake_entropy_t *e, unsigned n);

#endif /* FAKE_ENTROPY_H */
