/* SPDX-License-Identifier: MIT */
/*
 * Lease settings: defaults, validation, the drift and deadline arithmetic, names.
 */
#include <string.h>

#include "lock_internal.h"

void elk_lock_config_defaults(elk_lock_config_t *cfg)
{
    if (cfg == NULL) {
        return;
    }
    memset(cfg, 0, sizeof(*cfg));
    cfg->ttl_ms = CONFIG_ELK_DEFAULT_TTL_MS;
    cfg->renew_fraction_pct = CONFIG_ELK_RENEW_FRACTION_PCT;
    cfg->drift_factor_ppm = CONFIG_ELK_DRIFT_FACTOR_PPM;
    cfg->drift_fixed_ms = CONFIG_ELK_DRIFT_FIXED_MS;
    /* A finite cap: a hold nobody ends (a hung holder that still answers) must not keep
     * the resource forever. 0 stays possible, explicitly. */
    cfg->max_hold_ms = CONFIG_ELK_DEFAULT_MAX_HOLD_MS;
    cfg->wait_min_ms = 50;
    cfg->wait_max_ms = 250;
    cfg->fencing = true;
    cfg->use_release_channel = true;
}

/* ceil(p / 10^6) by long division on 32-bit words: a 64-bit `/` would link libgcc's
 * __udivmoddi4 (about 700 bytes) into Cortex-M images, while 32-bit division is one
 * instruction there. The high word divides directly; the remainder r stays below
 * 10^6 < 2^20, so (r << 12) | 12 more bits of the low word fits 32 bits, and each
 * quotient digit fits its 12 (or last 8) bits. Four divisions: this runs every round. */
static uint64_t lock_div_1e6_up(uint64_t p)
{
    const uint32_t d = 1000000u;
    uint32_t hi = (uint32_t)(p >> 32);
    uint32_t lo = (uint32_t)p;
    uint32_t r = hi % d;
    uint32_t c1 = (r << 12) | (lo >> 20);
    uint32_t c2 = ((c1 % d) << 12) | ((lo >> 8) & 0xfffu);
    uint32_t c3 = ((c2 % d) << 8) | (lo & 0xffu);
    uint32_t q = ((c1 / d) << 20) | ((c2 / d) << 8) | (c3 / d);
    return (((uint64_t)(hi / d) << 32) | q) + (c3 % d != 0u ? 1u : 0u);
}

uint64_t elk_lock__drift(const elk_lock_config_t *cfg)
{
    /* Round up: a drift allowance that is too small by a millisecond is unsafe. */
    return lock_div_1e6_up((uint64_t)cfg->ttl_ms * cfg->drift_factor_ppm) + cfg->drift_fixed_ms;
}

static uint64_t lock_margins(const elk_lock_config_t *cfg)
{
    return elk_lock__drift(cfg) + cfg->stop_margin_ms;
}

uint32_t elk_lock__span(const elk_lock_config_t *cfg)
{
    /* elk_lock_config_check guarantees ttl > margins, so this never underflows. */
    return cfg->ttl_ms - (uint32_t)lock_margins(cfg);
}

uint64_t elk_lock_config_drift(const elk_lock_config_t *cfg)
{
    return cfg != NULL ? elk_lock__drift(cfg) : 0u;
}

static elk_lock_config_fault_t lock_config_fault(const elk_lock_config_t *cfg)
{
    if (cfg->ttl_ms == 0) {
        return ELK_LOCK_CFG_TTL_ZERO;
    }
    if (cfg->renew_fraction_pct > 90u) {
        return ELK_LOCK_CFG_RENEW_FRACTION;
    }
    if (cfg->wait_min_ms > cfg->wait_max_ms) {
        return ELK_LOCK_CFG_WAIT_RANGE;
    }
    if (lock_margins(cfg) + cfg->min_validity_ms >= cfg->ttl_ms) {
        return ELK_LOCK_CFG_NO_VALIDITY;
    }
    /* A lease whose renewal starts after its deadline is lost every time it is held. */
    if (cfg->renew_fraction_pct != 0u &&
        (uint64_t)cfg->ttl_ms * cfg->renew_fraction_pct / 100u >= elk_lock__span(cfg)) {
        return ELK_LOCK_CFG_RENEW_AFTER_DEADLINE;
    }
    return ELK_LOCK_CFG_OK;
}

int elk_lock_config_explain(const elk_lock_config_t *cfg, elk_lock_config_fault_t *fault)
{
    elk_lock_config_fault_t f = cfg != NULL ? lock_config_fault(cfg) : ELK_LOCK_CFG_TTL_ZERO;
    if (fault != NULL) {
        *fault = f;
    }
    return f == ELK_LOCK_CFG_OK ? ELK_OK : ELK_E_INVALID_ARG;
}

int elk_lock_config_check(const elk_lock_config_t *cfg)
{
    return elk_lock_config_explain(cfg, NULL);
}

const char *elk_lock_state_name(elk_lock_state_t state)
{
    static const char *const names[] = {"idle",    "acquiring", "committing",
                                        "held",    "renewing",  "releasing",
                                        "waiting", "lost",      "suspect"};
    if ((unsigned)state < sizeof(names) / sizeof(names[0])) {
        return names[state];
    }
    return "unknown";
}

const char *elk_lock_event_name(elk_lock_event_type_t type)
{
    static const char *const names[] = {"none",     "acquired",     "acquire-failed", "retry",
                                        "renewed",  "renew-failed", "renew-stopped",  "lost",
                                        "released", "suspect",      "recovered"};
    if ((unsigned)type < sizeof(names) / sizeof(names[0])) {
        return names[type];
    }
    return "unknown";
}
