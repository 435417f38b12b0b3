/* SPDX-License-Identifier: MIT */
/* Small helpers for reading decoded RESP nodes. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elk/resp.h"

bool elk_resp_is_error(const elk_resp_node_t *n)
{
    return n != NULL && (n->type == ELK_RESP_ERROR || n->type == ELK_RESP_BLOB_ERROR);
}

const elk_resp_node_t *elk_resp_reply_top(const elk_resp_reply_t *reply, size_t *index)
{
    size_t i = 0;
    if (reply == NULL || reply->nodes == NULL) {
        return NULL;
    }
    while (i < reply->count && reply->nodes[i].type == ELK_RESP_ATTRIBUTE) {
        i += 1u + reply->nodes[i].subtree;
    }
    if (i >= reply->count) {
        return NULL;
    }
    if (index != NULL) {
        *index = i;
    }
    return &reply->nodes[i];
}

bool elk_resp_str_eq(const elk_resp_node_t *n, const char *s)
{
    size_t len;
    if (n == NULL || s == NULL) {
        return false;
    }
    switch (n->type) {
    case ELK_RESP_SIMPLE:
    case ELK_RESP_ERROR:
    case ELK_RESP_BULK:
    case ELK_RESP_DOUBLE:
    case ELK_RESP_BLOB_ERROR:
    case ELK_RESP_VERBATIM:
    case ELK_RESP_BIGNUM:
        break;
    default:
        return false; /* no string value: never equal, not even to "" */
    }
    len = strlen(s);
    return len == n->len && (len == 0u || memcmp(n->str, s, len) == 0);
}
