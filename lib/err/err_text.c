/* SPDX-License-Identifier: MIT */
/* Names and messages for elk_err_t, generated from the single list in err.h. */
#include "elk/config.h"
#include "elk/err.h"

#include <stddef.h>

struct elk_err_entry {
    int code;
    const char *name;
#if CONFIG_ELK_ERR_MESSAGES
    const char *message;
#endif
};

static const struct elk_err_entry elk_err_table[] = {
#if CONFIG_ELK_ERR_MESSAGES
#define ELK_ERR_ROW_(name, value, msg) {(value), #name, (msg)},
#else
/* Flash-tight builds keep only the names: docs list each name's message. */
#define ELK_ERR_ROW_(name, value, msg) {(value), #name},
#endif
    ELK_ERR_LIST(ELK_ERR_ROW_)
#undef ELK_ERR_ROW_
};

static const struct elk_err_entry *elk_err_find(int code)
{
    size_t i;
    for (i = 0; i < sizeof elk_err_table / sizeof elk_err_table[0]; i++) {
        if (elk_err_table[i].code == code) {
            return &elk_err_table[i];
        }
    }
    return NULL;
}

const char *elk_err_name(int code)
{
    const struct elk_err_entry *e = elk_err_find(code);
    return e != NULL ? e->name : "ELK_E_UNKNOWN";
}

const char *elk_err_message(int code)
{
#if CONFIG_ELK_ERR_MESSAGES
    const struct elk_err_entry *e = elk_err_find(code);
    return e != NULL ? e->message : "unknown error code";
#else
    return elk_err_name(code);
#endif
}
