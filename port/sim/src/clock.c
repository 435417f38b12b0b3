/* SPDX-License-Identifier: MIT */
/* Simulated clocks: true time scaled by a rate and shifted by an offset. Gateways get
 * monotonic clocks with drift; Redis nodes get wall clocks that may also jump. */
#include "elk/sim.h"

void elk_sim_clock_init(elk_sim_clock_t *c, const uint64_t *true_now_us, int64_t offset_us,
                        int32_t rate_ppm)
{
    c->true_now_us = true_now_us;
    c->offset_us = offset_us;
    c->rate_ppm = rate_ppm;
}

int64_t elk_sim_clock_local_us_at(const elk_sim_clock_t *c, uint64_t t_us)
{
    int64_t t = (int64_t)t_us;
    /* Split t so t * rate cannot overflow for runs of any realistic length. */
    int64_t whole = t / 1000000;
    int64_t frac = t % 1000000;
    int64_t v =
        c->offset_us + t + whole * (int64_t)c->rate_ppm + (frac * (int64_t)c->rate_ppm) / 1000000;
    return v < 0 ? 0 : v;
}

uint64_t elk_sim_clock_now_ms(const elk_sim_clock_t *c)
{
    return (uint64_t)(elk_sim_clock_local_us_at(c, *c->true_now_us) / 1000);
}

uint64_t elk_sim_clock_true_at(const elk_sim_clock_t *c, uint64_t local_ms)
{
    int64_t target = (int64_t)local_ms * 1000;
    int64_t denom = 1000000 + (int64_t)c->rate_ppm;
    int64_t base = target - c->offset_us;
    int64_t t;
    if (base <= 0) {
        return 0;
    }
    /* First guess from the inverse rate, then walk to the exact first microsecond. */
    t = (base / denom) * 1000000 + ((base % denom) * 1000000) / denom;
    if (t < 0) {
        t = 0;
    }
    while (t > 0 && elk_sim_clock_local_us_at(c, (uint64_t)(t - 1)) >= target) {
        t--;
    }
    while (elk_sim_clock_local_us_at(c, (uint64_t)t) < target) {
        t++;
    }
    return (uint64_t)t;
}

void elk_sim_clock_jump(elk_sim_clock_t *c, int64_t delta_us)
{
    c->offset_us += delta_us;
}

static uint64_t clock_now(void *ctx)
{
    return elk_sim_clock_now_ms((const elk_sim_clock_t *)ctx);
}

elk_clock_t elk_sim_clock_iface(elk_sim_clock_t *c)
{
    elk_clock_t k;
    k.ctx = c;
    k.now_ms = clock_now;
    return k;
}
