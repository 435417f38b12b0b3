/* SPDX-License-Identifier: MIT */
/* Manual clock (see fake_clock.h). */
#include "fake_clock.h"

#include <string.h>

static uint64_t fc_now(void *ctx)
{
    fake_clock_t *c = ctx;
    uint64_t t = c->now;
    c->reads++;
    c->now += c->step;
    return t;
}

void fake_clock_init(fake_clock_t *c, uint64_t start_ms)
{
    *c = (fake_clock_t){.now = start_ms};
}

elk_clock_t fake_clock_iface(fake_clock_t *c)
{
    return (elk_clock_t){.ctx = c, .now_ms = fc_now};
}

uint64_t fake_clock_now(const fake_clock_t *c)
{
    return c->now;
}

void fake_clock_advance(fake_clock_t *c, uint64_t ms)
{
    c->now += ms;
}

void fake_clock_set(fake_clock_t *c, uint64_t t)
{
    c->now = t;
}

void fake_clock_set_step(fake_clock_t *c, uint64_t step)
{
    c->step = step;
}

void fake_clock_run_until(fake_clock_t *c, uint64_t t, uint64_t (*pump)(void))
{
    while (c->now < t) {
        uint64_t next = pump();
        if (next <= c->now) {
            next = c->now + 1;
        }
        c->now = next < t ? next : t;
    }
    (void)pump();
}
