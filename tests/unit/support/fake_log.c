/* SPDX-License-Identifier: MIT */
/* Capturing log sink (see fake_log.h). */
#include "fake_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fl_append(fake_log_t *l, const char *s, size_t n)
{
    if (n > FAKE_LOG_CAP / 2) {
        n = FAKE_LOG_CAP / 2;
    }
    if (l->len + n > FAKE_LOG_CAP) {
        size_t drop = l->len - FAKE_LOG_CAP / 2;
        memmove(l->text, l->text + drop, l->len - drop);
        l->len -= drop;
    }
    memcpy(l->text + l->len, s, n);
    l->len += n;
    l->text[l->len] = '\0';
}

static void fl_write(void *ctx, int level, const char *module, const char *text, size_t len)
{
    fake_log_t *l = ctx;
    const char *m = module != NULL ? module : "?";
    fl_append(l, m, strlen(m));
    fl_append(l, ": ", 2);
    fl_append(l, text, len);
    fl_append(l, "\n", 1);
    l->lines++;
    if (level >= 0 && level <= 4) {
        l->by_level[level]++;
    }
    const char *echo = getenv("FAKE_LOG_ECHO");
    if (echo != NULL && echo[0] == '1') {
        fprintf(stderr, "[log %d] %s: %.*s\n", level, m, (int)len, text);
    }
}

void fake_log_init(fake_log_t *l, int level)
{
    memset(l, 0, sizeof *l);
    l->level = level;
}

elk_log_t fake_log_iface(fake_log_t *l)
{
    return (elk_log_t){.ctx = l, .write = fl_write, .level = l->level};
}

bool fake_log_contains(const fake_log_t *l, const char *s)
{
    return strstr(l->text, s) != NULL;
}

void fake_log_clear(fake_log_t *l)
{
    int level = l->level;
    fake_log_init(l, level);
}
