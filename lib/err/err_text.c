/* Names and messages for elk_err_t, generated from the single list in err.h. */
#include "elk/err.h"

#include <stddef.h>

struct elk_err_entry {
    int code;
    const char *name;
    const char *message;
};

static const struct elk_err_entry elk_err_table[] = {
#define ELK_ERR_ROW_(name, value, msg) {(value), #name, (msg)},
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
    const struct elk_err_entry *e = elk_err_find(code);
    return e != NULL ? e->message : "unknown error code";
}
