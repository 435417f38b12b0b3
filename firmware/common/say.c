/* SPDX-License-Identifier: MIT */
/* The elk CLI's messages to people, and elkd's limit on repeated lines: see elkfw/say.h. */
#include "elkfw/say.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void elkfw_say(const char *fmt, ...)
{
    va_list ap;
    fputs("elk: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* FNV-1a over the level, the module and the text without its digits: lines that differ
 * in numbers only are one kind. Never 0 (a free entry). */
static uint32_t lograte_key(int level, const char *module, const char *text, size_t len)
{
    uint32_t h = 2166136261u ^ (uint32_t)level;
    size_t i;
    for (i = 0; module[i] != '\0'; i++) {
        h = (h ^ (uint8_t)module[i]) * 16777619u;
    }
    h = (h ^ 0xffu) * 16777619u;
    for (i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') {
            h = (h ^ (uint8_t)text[i]) * 16777619u;
        }
    }
    return h != 0 ? h : 1u;
}

/* The kind's summary, if lines were left out; then it starts over. */
static void lograte_say(elkfw_lograte_kind_t *k, uint64_t now, elkfw_lograte_emit_fn emit,
                        void *ctx)
{
    if (k->suppressed > 0) {
        char line[ELKFW_LOGRATE_SAMPLE + 96];
        int n = snprintf(line, sizeof line,
                         "%u similar line%s suppressed in the last %u s; the last: %s",
                         (unsigned)k->suppressed, k->suppressed == 1 ? "" : "s",
                         (unsigned)((now - k->since + 999u) / 1000u), k->last);
        if (n > 0) {
            emit(ctx, k->level, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        }
    }
    k->passed = 0;
    k->suppressed = 0;
    k->since = now;
}

static bool lograte_over(const elkfw_lograte_kind_t *k, uint64_t now)
{
    return now >= k->since + ELKFW_LOGRATE_INTERVAL_MS;
}

/* The entry of this key: its own, a free or finished one, or the oldest (said first). */
static elkfw_lograte_kind_t *lograte_find(elkfw_lograte_t *lr, uint32_t key, uint64_t now,
                                          elkfw_lograte_emit_fn emit, void *ctx)
{
    elkfw_lograte_kind_t *spare = NULL, *oldest = NULL;
    size_t i;
    for (i = 0; i < ELKFW_LOGRATE_KINDS; i++) {
        elkfw_lograte_kind_t *k = &lr->kind[i];
        if (k->key == key) {
            if (lograte_over(k, now)) {
                lograte_say(k, now, emit, ctx);
            }
            return k;
        }
        if (k->key == 0 || lograte_over(k, now)) {
            spare = spare != NULL ? spare : k;
        } else if (oldest == NULL || k->since < oldest->since) {
            oldest = k;
        }
    }
    spare = spare != NULL ? spare : oldest;
    lograte_say(spare, now, emit, ctx);
    spare->key = key;
    return spare;
}

bool elkfw_lograte_admit(elkfw_lograte_t *lr, int level, const char *module, const char *text,
                         size_t len, uint64_t now, elkfw_lograte_emit_fn emit, void *ctx)
{
    elkfw_lograte_kind_t *k =
        lograte_find(lr, lograte_key(level, module, text, len), now, emit, ctx);
    k->level = level;
    if (k->passed < ELKFW_LOGRATE_BURST) {
        k->passed++;
        return true;
    }
    k->suppressed++;
    snprintf(k->last, sizeof k->last, "%s: %.*s", module, (int)len, text);
    return false;
}

void elkfw_lograte_flush(elkfw_lograte_t *lr, uint64_t now, uint64_t *next,
                         elkfw_lograte_emit_fn emit, void *ctx)
{
    size_t i;
    for (i = 0; i < ELKFW_LOGRATE_KINDS; i++) {
        elkfw_lograte_kind_t *k = &lr->kind[i];
        if (k->key == 0) {
            continue;
        }
        if (lograte_over(k, now)) {
            lograte_say(k, now, emit, ctx);
            k->key = 0;
        } else if (k->suppressed > 0 && k->since + ELKFW_LOGRATE_INTERVAL_MS < *next) {
            *next = k->since + ELKFW_LOGRATE_INTERVAL_MS;
        }
    }
}
