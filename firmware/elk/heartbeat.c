/* SPDX-License-Identifier: MIT */
/*
 * The heartbeat of `elk run --heartbeat`: see elkfw/heartbeat.h.
 */
#include "elkfw/heartbeat.h"

#include <string.h>

void elkfw_hb_start(elkfw_hb_t *hb, uint32_t interval_ms, uint64_t now)
{
    memset(hb, 0, sizeof *hb);
    hb->interval_ms = interval_ms;
    hb->last_beat = now;
}

void elkfw_hb_beat(elkfw_hb_t *hb, uint64_t now)
{
    if (hb->interval_ms == 0 || hb->missed) {
        return;
    }
    hb->last_beat = now;
    hb->pending = true;
}

/* A beat waits at most interval/4 for its KEEPALIVE: elkd's own check (one interval
 * without a KEEPALIVE) then still sees every beat the command gave in time. */
static uint64_t hb_send_at(const elkfw_hb_t *hb)
{
    return hb->sent_any ? hb->last_sent + hb->interval_ms / 4u : 0;
}

bool elkfw_hb_keepalive_due(elkfw_hb_t *hb, uint64_t now)
{
    if (hb->interval_ms == 0 || hb->missed || !hb->pending || now < hb_send_at(hb)) {
        return false;
    }
    hb->pending = false;
    hb->sent_any = true;
    hb->last_sent = now;
    return true;
}

bool elkfw_hb_check_missed(elkfw_hb_t *hb, uint64_t now)
{
    if (hb->interval_ms != 0 && !hb->missed && now > hb->last_beat &&
        now - hb->last_beat > hb->interval_ms) {
        hb->missed = true;
        hb->pending = false;
    }
    return hb->missed;
}

uint64_t elkfw_hb_next(const elkfw_hb_t *hb)
{
    uint64_t miss_at, send_at;
    if (hb->interval_ms == 0 || hb->missed) {
        return UINT64_MAX;
    }
    miss_at = hb->last_beat + hb->interval_ms + 1u;
    send_at = hb_send_at(hb);
    return hb->pending && send_at < miss_at ? send_at : miss_at;
}
