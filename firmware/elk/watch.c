/* SPDX-License-Identifier: MIT */
/* The live status view (elkfw/watch.h). */
#include "elkfw/watch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool elkfw_watch_field(const char *line, const char *key, char *buf, size_t cap)
{
    size_t kl = strlen(key);
    const char *p = line;
    buf[0] = '\0';
    while ((p = strstr(p, key)) != NULL) {
        if ((p == line || p[-1] == ' ') && p[kl] == '=') {
            size_t vl = strcspn(p + kl + 1, " ");
            if (vl >= cap) {
                vl = cap - 1;
            }
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = '\0';
            return true;
        }
        p += kl;
    }
    return false;
}

#define FIELD_MAX 96

/* The values of n keys of one status line, in order. */
static void fields(const char *line, const char *const *keys, char (*vals)[FIELD_MAX], size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        (void)elkfw_watch_field(line, keys[i], vals[i], FIELD_MAX);
    }
}

/* "[#######-----]  8.1 s": validity left against the ttl. */
static void bar(FILE *out, unsigned long validity, unsigned long ttl, bool tty)
{
    unsigned long cells = ttl > 0 ? (validity * ELKFW_WATCH_BAR + ttl / 2) / ttl : 0;
    unsigned long i;
    if (cells > ELKFW_WATCH_BAR) {
        cells = ELKFW_WATCH_BAR;
    }
    fputc('[', out);
    for (i = 0; i < ELKFW_WATCH_BAR; i++) {
        fputs(i < cells ? (tty ? "\u2588" : "#") : (tty ? "\u00b7" : "."), out);
    }
    if (validity > 0) {
        fprintf(out, "] %3lu.%lu s", validity / 1000u, validity % 1000u / 100u);
    } else {
        fputs("]     -", out);
    }
}

static void header(FILE *out, const char *line, const char *clock_text)
{
    static const char *const keys[] = {"version",     "gateway", "uptime_s", "mode",
                                       "nodes_ready", "quorum",  "clients",  "shutting_down"};
    char v[8][FIELD_MAX];
    unsigned long s;
    fields(line, keys, v, 8);
    s = strtoul(v[2], NULL, 10);
    fprintf(out,
            "elkd %s  gateway %s  up %lud%02luh%02lum%02lus  %s  nodes %s (quorum %s)  clients "
            "%s%s  %s\n",
            v[0], v[1], s / 86400u, s / 3600u % 24u, s / 60u % 60u, s % 60u, v[3], v[4], v[5], v[6],
            strcmp(v[7], "yes") == 0 ? "  SHUTTING DOWN" : "", clock_text);
}

static void resource_row(FILE *out, const char *line, bool tty)
{
    static const char *const keys[] = {"name",        "state",  "holder",   "token",
                                       "validity_ms", "ttl_ms", "renewals", "last_error"};
    char v[8][FIELD_MAX];
    fields(line, keys, v, 8);
    fprintf(out, "  %-16s %-10s %-18s %8s  ", v[0], v[1], v[2],
            strcmp(v[3], "0") == 0 ? "-" : v[3]);
    bar(out, strtoul(v[4], NULL, 10), strtoul(v[5], NULL, 10), tty);
    fprintf(out, "  %8s  %s\n", v[6], v[7]);
}

/* The hygiene word of a node line with its spaces back ('_' on the wire):
 * "quarantined: restarted 2 s ago; until 07:31:02 (in 12 s)". */
static void hygiene_text(const char *line, char *out, size_t cap)
{
    size_t i;
    if (!elkfw_watch_field(line, "hygiene", out, cap)) {
        snprintf(out, cap, "-");
        return;
    }
    for (i = 0; out[i] != '\0'; i++) {
        out[i] = out[i] == '_' ? ' ' : out[i];
    }
}

static void node_row(FILE *out, const char *line)
{
    static const char *const keys[] = {"name",   "addr",     "state", "tls",
                                       "rtt_ms", "failures", "votes", "last_error"};
    char v[8][FIELD_MAX], hyg[2 * FIELD_MAX];
    fields(line, keys, v, 8);
    hygiene_text(line, hyg, sizeof hyg);
    fprintf(out, "  %-10s %-24s %-10s %-4s %6s ms  %8s  %-5s  %-14s  %s\n", v[0], v[1], v[2], v[3],
            v[4], v[5], v[6][0] ? v[6] : "-", v[7], hyg);
}

void elkfw_watch_render(FILE *out, const char *const *lines, size_t n, bool tty,
                        const char *clock_text)
{
    size_t i;
    if (tty) {
        fputs("\033[H\033[2J", out); /* home, clear */
    }
    for (i = 0; i < n; i++) {
        if (strncmp(lines[i], "agent ", 6) == 0) {
            header(out, lines[i], clock_text);
        }
    }
    fprintf(out, "\n  %-16s %-10s %-18s %8s  %-*s  %8s  %s\n", "RESOURCE", "STATE", "HOLDER",
            "TOKEN", ELKFW_WATCH_BAR + 9, "VALIDITY", "RENEWALS", "LAST ERROR");
    for (i = 0; i < n; i++) {
        if (strncmp(lines[i], "resource ", 9) == 0) {
            resource_row(out, lines[i], tty);
        }
    }
    fprintf(out, "\n  %-10s %-24s %-10s %-4s %9s  %8s  %-5s  %-14s  %s\n", "NODE", "ADDRESS",
            "STATE", "TLS", "RTT", "FAILURES", "VOTES", "LAST ERROR", "HYGIENE");
    for (i = 0; i < n; i++) {
        if (strncmp(lines[i], "node ", 5) == 0) {
            node_row(out, lines[i]);
        }
    }
    if (!tty) {
        fputc('\n', out);
    }
    fflush(out);
}
