/* SPDX-License-Identifier: MIT */
/* Deterministic entropy (see fake_entropy.h). */
#include "fake_entropy.h"

#include <string.h>

#include "elk/err.h"

/* splitmix64: tiny, well distributed, and reproducible across platforms. */
static uint64_t fe_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int fe_fill(void *ctx, uint8_t *buf, size_t len)
{
    fake_entropy_t *e = ctx;
    e->calls++;
    if (e->fail > 0) {
        e->fail--;
        return ELK_E_ENTROPY;
    }
    if (e->fixed) {
        memset(buf, e->fixed_byte, len);
    } else {
        size_t i = 0;
        while (i < len) {
            uint64_t v = fe_next(&e->state);
            for (int k = 0; k < 8 && i < len; k++, i++) {
                buf[i] = (uint8_t)(v >> (8 * k));
            }
        }
    }
    e->bytes += len;
    return ELK_OK;
}

void fake_entropy_init(fake_entropy_t *e, uint64_t seed)
{
    *e = (fake_entropy_t){.state = seed};
}

elk_entropy_t fake_entropy_iface(fake_entropy_t *e)
{
    return (elk_entropy_t){.ctx = e, .fill = fe_fill};
}

void fake_entropy_set_fixed(fake_entropy_t *e, uint8_t b)
{
    e->fixed = true;
    e->fixed_byte = b;
}

void fake_entropy_set_stream(fake_entropy_t *e, uint64_t seed)
{
    e->fixed = false;
    e->state = seed;
}

void fake_entropy_fail_next(fake_entropy_t *e, unsigned n)
{
    e->fail = n;
}
