/* SPDX-License-Identifier: MIT */
/*
 * The configuration module's own header (elkfw/conf.h is its interface): the parser's
 * state, shared by the parser (conf.c), the whole-file checks (conf_check.c) and the
 * value readers (conf_value.c); the keys themselves are in conf_keys.c.
 */
#ifndef ELKFW_CONF_INTERNAL_H
#define ELKFW_CONF_INTERNAL_H
#define _GNU_SOURCE
#include "elkfw/conf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "elk/platform.h"
#include "elkfw/preflight.h"
#include "elkfw/suggest.h"

#include "conf_keys.h"

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

enum section_kind { SEC_NONE, SEC_FLEET, SEC_NODE, SEC_RESOURCE, SEC_SEMAPHORE, SEC_AGENT };

typedef struct parser {
    elkfw_conf_t *c;
    const char *file;
    char *err;
    size_t errlen;
    int line;
    enum section_kind kind;
    void *obj; /* struct the current section's keys write into */
    const keydef_t *keys;
    size_t n_keys;
    char section[ELKFW_NAME_MAX + 16]; /* "[resource valve-1]" for messages */
    uint32_t seen;                     /* keys of the current section already set */
    int seen_line[32];
    bool fleet_seen, agent_seen;
    int fleet_line, agent_line;
    int errors;        /* problems found so far: each is one line of err */
    size_t used;       /* bytes of err written */
    bool skip_section; /* its header was wrong: its keys are not read (nor blamed) */
} parser_t;

/* Shared between the configuration's files. */
bool elkfw_conf__is_space(char c);
bool elkfw_conf__parse_fraction(const char *s, size_t len, uint32_t *ppm);
int elkfw_conf__parse_bool(const char *s, size_t len);
bool elkfw_conf__parse_u32(const char *s, size_t len, uint32_t *out);
void elkfw_conf__quote_value(char *out, size_t cap, const char *s, size_t len);
bool elkfw_conf__idlist_valid(const char *v, size_t len);
__attribute__((format(printf, 3, 4))) int elkfw_conf__fail(parser_t *p, int line, const char *fmt,
                                                           ...);
bool elkfw_conf__parse_octal(const char *v, size_t vlen, uint32_t max, uint32_t *out);
int elkfw_conf__check_conf(parser_t *p);
int elkfw_conf__expand_semaphores(parser_t *p);
const char *elkfw_conf__kind(const elkfw_resource_conf_t *r);

#endif
