/* SPDX-License-Identifier: MIT */
/*
 * elk_entropy_t over the board's hardware RNG, supplied by the application as a
 * word callback. A failed or stuck generator must stop lock values from being
 * made at all: two gateways with equal "random" values could release each
 * other's locks.
 */
#include <string.h>

#include "elk/port_lwip.h"

static int draw(elk_lwip_entropy_t *e, uint32_t *word)
{
    uint32_t w = 0;

    if (e->rng(e->user, &w) != 0) {
        return ELK_E_ENTROPY;
    }
    if (!e->primed) {
        e->last = w;
        e->primed = true;
        if (e->rng(e->user, &w) != 0) {
            return ELK_E_ENTROPY;
        }
    }
    /* Continuous test: a generator repeating its last word is treated as stuck. */
    if (w == e->last) {
        return ELK_E_ENTROPY;
    }
    e->last = w;
    *word = w;
    return ELK_OK;
}

static int entropy_fill(void *ctx, uint8_t *buf, size_t len)
{
    elk_lwip_entropy_t *e = (elk_lwip_entropy_t *)ctx;
    size_t off = 0;

    if (e == NULL || (buf == NULL && len > 0)) {
        return ELK_E_INVALID_ARG;
    }
    while (off < len) {
        uint32_t w;
        size_t n = len - off < sizeof(w) ? len - off : sizeof(w);
        int rc = draw(e, &w);
        if (rc != ELK_OK) {
            memset(buf, 0, len);
            return rc;
        }
        memcpy(buf + off, &w, n);
        off += n;
    }
    return ELK_OK;
}

int elk_lwip_entropy_init(elk_lwip_entropy_t *ctx, elk_lwip_rng_fn rng, void *user,
                          elk_entropy_t *out)
{
    if (ctx == NULL || rng == NULL || out == NULL) {
        return ELK_E_INVALID_ARG;
    }
    memset(ctx, 0, sizeof(*ctx));
    ctx->rng = rng;
    ctx->user = user;
    out->ctx = ctx;
    out->fill = entropy_fill;
    return ELK_OK;
}
