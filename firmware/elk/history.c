/* SPDX-License-Identifier: MIT */
/* elk events and elk timeline (elkfw/history.h). */
#define _GNU_SOURCE
#include "elkfw/history.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "elkfw/conf.h"
#include "elkfw/evlog.h"
#include "elkfw/say.h"
#include "elkfw/timeline.h"

enum { H_OK = 0, H_FAIL = 1, H_USAGE = 64 };

void elkfw_history_usage_events(FILE *f)
{
    fputs("Usage: elk events [--file FILE] [--since WHEN] [--resource NAME] [--json]\n"
          "The lease event record elkd keeps (events_file in elkd.conf): grants, waits,\n"
          "refusals, failed renewals, SUSPECT, RECOVERED, losses and releases, oldest first.\n"
          "  --file FILE      the record to read (default: the events_file of the installed\n"
          "                   configuration)\n"
          "  --since WHEN     only events since WHEN: a duration back from now (10m, 2h) or\n"
          "                   a UTC time 2026-11-27T10:00:00\n"
          "  --resource NAME  only that resource's events\n"
          "  --json           one JSON object a line (schema in docs/events.md): the input\n"
          "                   of 'elk timeline'\n"
          "Exit codes: 0 ok, 1 the file cannot be read, 64 usage.\n",
          f);
}

void elkfw_history_usage_timeline(FILE *f)
{
    fputs("Usage: elk timeline [-o OUT] [--title TEXT] INPUT...\n"
          "Draws the lease event records of one or more gateways as one HTML page: a lane per\n"
          "gateway and resource, each lease a bar from grant to release or loss with its\n"
          "token, waits, SUSPECT and losses marked, overlaps between holders of one resource\n"
          "in red. The page is self-contained (no network): open it in any browser.\n"
          "  INPUT          a record file (events_file), the JSON lines of 'elk events', or - for\n"
          "                 stdin; records of several gateways are merged by time\n"
          "  -o OUT         the page to write (default timeline.html)\n"
          "  --title TEXT   the page's title\n"
          "Exit codes: 0 ok (also with overlaps: the page shows them), 1 an input cannot be\n"
          "read or the page cannot be written, 64 usage.\n",
          f);
}

/* ------------------------------------------------------------------ input */

/* The whole of f in a heap buffer (*len bytes, NUL-terminated); NULL on a read error. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f)) {
            break;
        }
        if (feof(f)) {
            buf[n] = '\0';
            *len = n;
            return buf;
        }
        char *more = realloc(buf, cap * 2);
        if (!more) {
            break;
        }
        buf = more;
        cap *= 2;
    }
    free(buf);
    return NULL;
}

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* --since: a duration back from now, or a UTC time. */
static bool parse_since(const char *s, uint64_t *since)
{
    uint32_t ms;
    struct tm tm;
    if (elkfw_parse_duration(s, strlen(s), &ms)) {
        uint64_t now = wall_ms();
        *since = now > ms ? now - ms : 0;
        return true;
    }
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (end && (*end == '\0' || strcmp(end, "Z") == 0)) {
        *since = (uint64_t)timegm(&tm) * 1000u;
        return true;
    }
    return false;
}

/* ------------------------------------------------------------------ elk events */

typedef struct events_opts {
    const char *file, *resource;
    uint64_t since;
    bool json;
} events_opts_t;

static int events_args(int argc, char **argv, events_opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--json") == 0) {
            o->json = true;
        } else if (strcmp(a, "--file") == 0 && has) {
            o->file = argv[++i];
        } else if (strcmp(a, "--resource") == 0 && has) {
            o->resource = argv[++i];
        } else if (strcmp(a, "--since") == 0 && has) {
            if (!parse_since(argv[++i], &o->since)) {
                elkfw_say("--since takes a duration (10m) or a UTC time "
                          "(2026-11-27T10:00:00), not '%s'",
                          argv[i]);
                return H_USAGE;
            }
        } else {
            elkfw_say("events: unknown or incomplete option '%s' (see elk events --help)", a);
            return H_USAGE;
        }
    }
    return H_OK;
}

static void print_event_text(const elkfw_event_t *ev)
{
    char when[32];
    time_t s = (time_t)(ev->t_ms / 1000u);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    printf("%s.%03uZ %s %s %s", when, (unsigned)(ev->t_ms % 1000u), ev->gateway, ev->resource,
           elkfw_ev_kind_name(ev->kind));
    if (ev->token) {
        printf(" token=%" PRIu64, ev->token);
    }
    if (ev->pid >= 0) {
        printf(" pid=%" PRId64 " uid=%" PRId64, ev->pid, ev->uid);
    }
    if (ev->cmd[0]) {
        printf(" cmd=%s", ev->cmd);
    }
    if (ev->deadline_ms) {
        printf(" valid_for=%" PRId64 "ms", (int64_t)(ev->deadline_ms - ev->t_ms));
    }
    if (ev->cause[0]) {
        printf(" cause=%s", ev->cause);
    }
    putchar('\n');
}

int elkfw_history_events(int argc, char **argv, const char *default_file)
{
    events_opts_t o = {default_file, NULL, 0, false};
    int rc = events_args(argc, argv, &o);
    if (rc != H_OK) {
        return rc;
    }
    int fd = open(o.file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        elkfw_say("cannot read the event record %s: %s (events_file in elkd.conf; --file)", o.file,
                  strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return H_FAIL;
    }
    size_t cap = (size_t)st.st_size / ELKFW_EVLOG_RECORD + 1u;
    elkfw_event_t *ev = calloc(cap, sizeof *ev);
    long n = ev ? elkfw_evlog_read_fd(fd, ev, cap) : -ENOMEM;
    close(fd);
    if (n < 0) {
        elkfw_say("cannot read the event record %s: %s", o.file, strerror((int)-n));
        free(ev);
        return H_FAIL;
    }
    for (long i = 0; i < n; i++) {
        char line[ELKFW_EVLOG_RECORD];
        if (ev[i].t_ms < o.since || (o.resource && strcmp(ev[i].resource, o.resource) != 0)) {
            continue;
        }
        if (o.json) {
            elkfw_event_format(&ev[i], line, sizeof line);
            puts(line);
        } else {
            print_event_text(&ev[i]);
        }
    }
    free(ev);
    return fflush(stdout) == 0 ? H_OK : H_FAIL;
}

/* ------------------------------------------------------------------ elk timeline */

typedef struct text_buf {
    char *p;
    size_t len;
} text_buf_t;

/* Append the contents of path ("-": stdin) and a newline to t. */
static bool append_input(text_buf_t *t, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    size_t n = 0;
    char *more, *data = f ? read_all(f, &n) : NULL;
    int e = errno;
    if (f && f != stdin) {
        fclose(f);
    }
    if (!data) {
        elkfw_say("cannot read %s: %s", path, strerror(e));
        return false;
    }
    more = realloc(t->p, t->len + n + 2);
    if (more) {
        memcpy(more + t->len, data, n);
        t->len += n;
        more[t->len++] = '\n';
        more[t->len] = '\0';
        t->p = more;
    }
    free(data);
    return more != NULL;
}

static size_t count_lines(const text_buf_t *t)
{
    size_t n = 1;
    for (size_t i = 0; i < t->len; i++) {
        n += t->p[i] == '\n';
    }
    return n;
}

static int write_page(const elkfw_event_t *ev, size_t n, const char *out, const char *title)
{
    elkfw_timeline_t tl = {0};
    tl.cap_lanes = 1024;
    tl.cap_bars = tl.cap_marks = tl.cap_overlaps = n + 1;
    tl.lanes = calloc(tl.cap_lanes, sizeof *tl.lanes);
    tl.bars = calloc(tl.cap_bars, sizeof *tl.bars);
    tl.marks = calloc(tl.cap_marks, sizeof *tl.marks);
    tl.overlaps = calloc(tl.cap_overlaps, sizeof *tl.overlaps);
    int rc = H_FAIL;
    FILE *f = NULL;
    if (tl.lanes && tl.bars && tl.marks && tl.overlaps) {
        elkfw_timeline_build(&tl, ev, n);
        f = fopen(out, "w");
    }
    if (f && elkfw_timeline_write_html(&tl, f, title) == 0 && fclose(f) == 0) {
        printf("elk: wrote %s: %zu events, %zu lanes, %zu bars, %zu overlaps%s\n", out, n,
               tl.n_lanes, tl.n_bars, tl.n_overlaps, tl.truncated ? " (some did not fit)" : "");
        rc = H_OK;
    } else {
        elkfw_say("cannot write %s: %s", out, strerror(errno));
    }
    free(tl.lanes);
    free(tl.bars);
    free(tl.marks);
    free(tl.overlaps);
    return rc;
}

int elkfw_history_timeline(int argc, char **argv)
{
    const char *out = "timeline.html", *title = "edgelock lease timeline";
    text_buf_t t = {NULL, 0};
    int inputs = 0, rc = H_OK;
    for (int i = 1; i < argc && rc == H_OK; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--title") == 0 && i + 1 < argc) {
            title = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            elkfw_say("timeline: unknown or incomplete option '%s' (see elk timeline --help)",
                      argv[i]);
            rc = H_USAGE;
        } else {
            inputs++;
            rc = append_input(&t, argv[i]) ? H_OK : H_FAIL;
        }
    }
    if (rc == H_OK && inputs == 0) {
        elkfw_say("timeline: name at least one record (a file, or - for stdin); see --help");
        rc = H_USAGE;
    }
    if (rc == H_OK) {
        size_t cap = count_lines(&t);
        elkfw_event_t *ev = calloc(cap, sizeof *ev);
        size_t n = ev ? elkfw_evlog_parse_text(t.p, t.len, ev, cap) : 0;
        rc = ev ? write_page(ev, n, out, title) : H_FAIL;
        free(ev);
    }
    free(t.p);
    return rc;
}
