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
