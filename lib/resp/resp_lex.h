/* SPDX-License-Identifier: MIT */
/*
 * Lexical checks for the rarer RESP3 scalars (internal to lib/resp). Kept apart from
 * the state machine so the hot path stays small and these rules can be read at once.
 */
#ifndef ELK_RESP_LEX_H
#define ELK_RESP_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elk/resp.h"

/* The decoder's eight-bytes-a-step scans and fast reply path, and the encoder's
 * one-copy integer argument, pay where a uint64_t is one register (64-bit gateways).
 * On a 32-bit MCU they cost about 1.3 KB of flash for little speed, so there only the
 * general paths are built; both produce exactly the same results.
 * -DELK_RESP_WIDE=0 or 1 overrides (to test the narrow paths on a host). */
#ifndef ELK_RESP_WIDE
#if UINTPTR_MAX > 0xFFFFFFFFu
#define ELK_RESP_WIDE 1
#else
#define ELK_RESP_WIDE 0
#endif
#endif

/* True if s[0..len) is a RESP3 double: [+|-]digits[.digits][(e|E)[+|-]digits], or
 * inf, +inf, -inf, nan. */
bool elk_resp_lex_double(const uint8_t *s, size_t len);

/* True if s[0..len) is a RESP3 big number: [+|-]digits (at least one digit). */
bool elk_resp_lex_bignum(const uint8_t *s, size_t len);

/* Splits a VERBATIM node's body "fmt:data" into n->format and n->str/len = data.
 * Returns ELK_OK, or ELK_E_RESP_PROTOCOL if the body lacks a 3-byte printable format
 * and ':'. */
int elk_resp_lex_verbatim(elk_resp_node_t *n);

#endif /* ELK_RESP_LEX_H */
