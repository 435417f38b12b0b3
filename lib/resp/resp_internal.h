/* SPDX-License-Identifier: MIT */
/*
 * Cross-file internals of the RESP decoder (lib/resp): the reader's entry and buffer
 * handling (resp_decode.c), the general parser (resp_parse.c) and the fast path for
 * whole common replies (resp_decode_fast.c).
 */
#ifndef ELK_RESP_INTERNAL_H
#define ELK_RESP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/config.h"
#include "elk/resp.h"
#include "resp_lex.h"

/* The fast path is built when Kconfig asks for it (CONFIG_ELK_RESP_FAST_PATH) on a
 * 64-bit target: it reads replies a word at a time. -DELK_RESP_FAST=0 or 1 overrides. */
#ifndef ELK_RESP_FAST
#if CONFIG_ELK_RESP_FAST_PATH && ELK_RESP_WIDE
#define ELK_RESP_FAST 1
#else
#define ELK_RESP_FAST 0
#endif
#endif

static inline void elk_resp_node_set(elk_resp_node_t *n, uint8_t type, const uint8_t *str,
                                     size_t len, int64_t integer)
{
    n->str = str;
    n->integer = integer;
    n->len = (uint32_t)len;
    n->subtree = 0;
    n->type = type;
    n->format[0] = n->format[1] = n->format[2] = 0;
}

/* General parser: goes on with the reply at r->pos from wherever the previous call
 * stopped. Returns 1 when a whole reply is in r->nodes[0..r->n_nodes), 0 when more
 * bytes are needed (r->pos, r->scan say where to go on), or a negative elk_err_t. */
int elk_resp__parse(elk_resp_reader_t *r);

/* The general path of elk_resp_reader_next (r and out not NULL): sticky errors, the
 * reply-out check, elk_resp__parse, room made when the buffer is full. Returns as
 * elk_resp_reader_next does. */
int elk_resp__next_slow(elk_resp_reader_t *r, elk_resp_reply_t *out);

/* The fast path (resp_decode_fast.c, built when ELK_RESP_FAST) is the public
 * elk_resp_reader_next itself, so that a reply costs no extra call: it takes a new reply
 * that is wholly in the buffer and of a common shape (+OK, integers, nil, bulk strings,
 * errors, flat arrays of those) and declines anything else by returning
 * elk_resp__next_slow(r, out), a tail call (r->nodes may have been written over, nothing
 * else). Without ELK_RESP_FAST, resp_decode.c defines elk_resp_reader_next. */

#endif /* ELK_RESP_INTERNAL_H */
