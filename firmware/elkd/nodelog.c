/* SPDX-License-Identifier: MIT */
/* Node-down log throttling (elkfw/nodelog.h). */
#include "elkfw/nodelog.h"

void elkfw_nodelog_failed(elkfw_nodelog_t *n, int err, uint64_t now, uint32_t interval_ms)
{
    if (!n->down) {
        n->down = true;
        n->down_since = now;
        n->next_summary = now + interval_ms;
        n->attempts = 0;
        n->summarized = 1; /* the first failure was its own warning */
    }
    n->attempts++;
    n->last_err = err;
}

bool elkfw_nodelog_ready(elkfw_nodelog_t *n)
{
    bool was = n->down;
    n->down = false;
    return was;
}

bool elkfw_nodelog_quiet(const elkfw_nodelog_t *n)
{
    return n->down;
}

bool elkfw_nodelog_summary_due(elkfw_nodelog_t *n, uint64_t now, uint32_t interval_ms,
                               uint64_t *next)
{
    if (!n->down) {
        return false;
    }
    if (now < n->next_summary) {
        if (n->next_summary < *next) {
            *next = n->next_summary;
        }
        return false;
    }
    n->next_summary = now + interval_ms;
    if (n->next_summary < *next) {
        *next = n->next_summary;
    }
    if (n->attempts == n->summarized) {
        return false; /* nothing new to say */
    }
    n->summarized = n->attempts;
    return true;
}
