/* SPDX-License-Identifier: MIT */
/*
 * The keys of elkd's configuration, private to the parser (conf.c): one table a section
 * (conf_keys.c) says for every key its name, type, where it goes, its range, its default,
 * what a string value must look like and whether its line is kept for later messages.
 * The parser knows the types, never a key: a new key is a row here.
 */
#ifndef ELKFW_CONF_KEYS_H
#define ELKFW_CONF_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum key_type {
    K_STR,     /* text, NUL-terminated in a buffer of size bytes */
    K_DUR,     /* duration, stored as uint32_t ms */
    K_BOOL,    /* on/off, stored as bool */
    K_TRI,     /* on/off, stored as int (default -1: not set, inherit) */
    K_U32,     /* whole number, uint32_t */
    K_PORT,    /* whole number, uint16_t */
    K_ENUM,    /* one of choices, stored as int: enum_base + its index */
    K_FRAC,    /* fraction, stored as uint32_t parts per million */
    K_NAME_ID, /* an id: a name's characters (elkfw_name_valid) */
    K_OCTAL,   /* permission bits, uint32_t */
    K_IDLIST   /* user or group names or ids, commas and spaces between */
};

typedef struct keydef {
    const char *name;
    enum key_type type;
    size_t offset;              /* in the section's struct */
    size_t size;                /* K_STR, K_NAME_ID, K_IDLIST: buffer size */
    const char *const *choices; /* K_ENUM: NULL-terminated */
    uint32_t min, max;          /* K_U32, K_PORT, K_DUR, K_OCTAL bounds */
    int64_t def;                /* default of a number, switch or enum (stored value) */
    const char *def_text;       /* default of a text key (NULL: empty) */
    int enum_base;              /* K_ENUM: the stored value of the first choice */
    /* K_STR: what a value must look like beyond its length (NULL: any), and what is said
     * after "key 'K' in [S]: 'V' " when it does not. */
    bool (*valid)(const char *v, size_t len);
    const char *invalid;
    size_t line_at; /* 1 + offset of the int keeping the key's line number (0: none) */
} keydef_t;

typedef struct keytable {
    const keydef_t *keys;
    size_t n;
} keytable_t;

/* [fleet], [node NAME], [resource NAME], [agent]: their keys, into elkfw_conf_t,
 * elkfw_node_conf_t, elkfw_resource_conf_t and elkfw_agent_conf_t. */
extern const keytable_t elkfw_conf__fleet_keys;
extern const keytable_t elkfw_conf__node_keys;
extern const keytable_t elkfw_conf__resource_keys;
/* [semaphore NAME]: a resource's keys and permits, into elkfw_resource_conf_t */
extern const keytable_t elkfw_conf__semaphore_keys;
extern const keytable_t elkfw_conf__agent_keys;

#endif
