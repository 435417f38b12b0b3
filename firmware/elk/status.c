/* SPDX-License-Identifier: MIT */
/* elk status: the agent, resources and nodes as tables, JSON, watch or metrics. */
#include "elk.h"

/* Rows are at most the resources a file may configure plus the fleet; cells point into
 * the copies of the status lines kept in status_store (one STATUS answer fits in it). */
#define ST_MAX_ROWS (ELKFW_MAX_RESOURCES + CONFIG_ELK_MAX_NODES)
#define ST_MAX_COLS 16

typedef struct table {
    const char *kind;
    int rows, cols;
    const char *head[ST_MAX_COLS];
    const char *(*cell)[ST_MAX_COLS]; /* ST_MAX_ROWS rows, in status_view_t's cells */
} table_t;

/* What `elk status` shows: the two tables and copies of the lines their cells point into.
 * Sized for the build's largest configuration (megabytes with thousands of resources): a
 * static object, of which only what one answer fills is ever touched. */
typedef struct status_view {
    table_t tables[3];
    const char *cells[3][ST_MAX_ROWS][ST_MAX_COLS];
    char store[ELK_CTL_REPLY_MAX];
    size_t used;
} status_view_t;

/* Keep a copy of one status line; NULL when the store is full (the row is left out). */
static char *status_keep(status_view_t *v, const char *line, size_t len)
{
    char *copy;
    if (len + 1 > sizeof v->store - v->used) {
        return NULL;
    }
    copy = v->store + v->used;
    memcpy(copy, line, len);
    copy[len] = '\0';
    v->used += len + 1;
    return copy;
}

static void table_add(table_t *t, char *line)
{
    char *save = NULL, *tok;
    int col = 0;
    if (t->rows >= ST_MAX_ROWS) {
        return;
    }
    strtok_r(line, " ", &save); /* kind */
    while ((tok = strtok_r(NULL, " ", &save)) != NULL && col < ST_MAX_COLS) {
        char *eq = strchr(tok, '=');
        if (eq == NULL) {
            continue;
        }
        *eq = '\0';
        if (t->rows == 0) {
            t->head[col] = tok;
        }
        t->cell[t->rows][col] = eq + 1;
        col++;
        if (strcmp(tok, "hygiene") == 0) {
            /* the protocol keeps the value one word ("quarantined:_restarted_1_s_ago;..."):
             * a person reads it with its spaces */
            for (char *u = eq + 1; *u != '\0'; u++) {
                *u = *u == '_' ? ' ' : *u;
            }
        }
        /* musl's strtok_r leaves save NULL after the last token (glibc: at the end). */
        if (strcmp(tok, "check") == 0 && save != NULL && *save != '\0') {
            /* the safety check's text has spaces: it is the last field, up to the end */
            (eq + 1)[strlen(eq + 1)] = ' ';
            break;
        }
    }
    while (col < ST_MAX_COLS) {
        t->cell[t->rows][col++] = "";
    }
    if (t->rows == 0) {
        int c;
        for (c = 0; c < ST_MAX_COLS; c++) {
            if (t->head[c] == NULL) {
                break;
            }
        }
        t->cols = c;
    }
    t->rows++;
}

static void table_print(const table_t *t)
{
    int w[ST_MAX_COLS], r, c;
    if (t->rows == 0) {
        return;
    }
    for (c = 0; c < t->cols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (r = 0; r < t->rows; r++) {
            int l = (int)strlen(t->cell[r][c]);
            if (l > w[c]) {
                w[c] = l;
            }
        }
    }
    printf("%s:\n", t->kind);
    for (c = 0; c < t->cols; c++) {
        char up[24];
        size_t k;
        for (k = 0; k + 1 < sizeof up && t->head[c][k]; k++) {
            up[k] = (char)(t->head[c][k] >= 'a' && t->head[c][k] <= 'z' ? t->head[c][k] - 32
                                                                        : t->head[c][k]);
        }
        up[k] = '\0';
        printf("  %-*s", w[c], up);
    }
    printf("\n");
    for (r = 0; r < t->rows; r++) {
        for (c = 0; c < t->cols; c++) {
            printf("  %-*s", w[c], t->cell[r][c]);
        }
        printf("\n");
    }
}

/* elk status --watch: the status redrawn every second (plain frames when stdout is not a
 * terminal) until SIGINT/SIGTERM, elkd goes away, or count frames (0: no limit). */
static int status_watch(agent_link_t *ak, unsigned long count)
{
    static status_view_t view; /* the lines of one answer: too large for the stack twice */
    const char *rows[1 + ST_MAX_ROWS];
    bool tty = isatty(STDOUT_FILENO) != 0;
    unsigned long frame;
    uint64_t next_frame = 0;
    for (frame = 0; count == 0 || frame < count; frame++) {
        elkfw_ctl_msg_t m;
        const char *line;
        size_t len, n = 0;
        uint32_t k;
        char clock_text[16];
        time_t t = time(NULL);
        struct tm tm;
        /* a frame a second; elkd going away ends the wait (the next STATUS says so) */
        if (frame > 0 && elk__agent_wait(ak, next_frame) < 0) {
            elkfw_say("lost elkd at %s", ak->sock_path);
            return EXIT_UNREACHABLE;
        }
        next_frame = elk__now_ms() + 1000u;
        if (elk__agent_send(ak, "STATUS\n") != 0 || elk__agent_line(ak, &line, &len) <= 0 ||
            elkfw_ctl_parse_reply(line, len, &m) != ELK_OK || m.kind != ELKFW_MSG_OK) {
            elkfw_say("lost elkd at %s", ak->sock_path);
            return EXIT_UNREACHABLE;
        }
        view.used = 0;
        for (k = 0; k < m.count; k++) {
            char *copy;
            if (elk__agent_line(ak, &line, &len) <= 0) {
                elkfw_say("elkd closed the connection in the middle of the status");
                return EXIT_UNREACHABLE;
            }
            if ((copy = status_keep(&view, line, len)) != NULL &&
                n < sizeof rows / sizeof rows[0]) {
                rows[n++] = copy;
            }
        }
        localtime_r(&t, &tm);
        strftime(clock_text, sizeof clock_text, "%H:%M:%S", &tm);
        elkfw_watch_render(stdout, rows, n, tty, clock_text);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            /* the reader left (| head, a closed pager): SIGPIPE is ignored, so without this
             * check every next frame failed unseen and elk went on forever */
            return errno == EPIPE ? EXIT_OK : EXIT_FAIL;
        }
    }
    return EXIT_OK;
}

/* elk status --metrics: elkd's metrics in the Prometheus text format, as they come. */
static int status_metrics(agent_link_t *ak)
{
    elkfw_ctl_msg_t m;
    const char *line;
    size_t len;
    unsigned long n, k;
    if (elk__agent_send(ak, "STATUS METRICS\n") != 0 || elk__agent_line(ak, &line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, &m) != ELK_OK || m.kind != ELKFW_MSG_OK ||
        strcmp(m.word, "METRICS") != 0) {
        elkfw_say("unexpected reply from elkd (does it know STATUS METRICS?): %.*s", (int)len,
                  line);
        return EXIT_FAIL;
    }
    n = strtoul(m.text, NULL, 10);
    for (k = 0; k < n; k++) {
        if (elk__agent_line(ak, &line, &len) <= 0) {
            elkfw_say("elkd closed the connection in the middle of the metrics");
            return EXIT_FAIL;
        }
        printf("%.*s\n", (int)len, line);
    }
    return EXIT_OK;
}

/* elk status's options. */
typedef struct status_opts {
    bool json, metrics, watch;
    unsigned long count;
} status_opts_t;

/* Reads the options into *o (and --socket into ak); false on anything else. */
static bool status_args(agent_link_t *ak, int argc, char **argv, status_opts_t *o)
{
    int i;
    memset(o, 0, sizeof *o);
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
        } else if (strcmp(argv[i], "--metrics") == 0) {
            o->metrics = true;
        } else if (strcmp(argv[i], "--watch") == 0) {
            o->watch = true;
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            o->count = strtoul(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc) {
            ak->sock_path = argv[++i];
        } else {
            elkfw_cli_usage_error("status", "unexpected argument '%s'", argv[i]);
            return false;
        }
    }
    return true;
}

/* Sends STATUS [JSON] and reads the answer's first line into *m: EXIT_OK, or the exit
 * code of a refusal or a failure. */
static int status_request(agent_link_t *ak, bool json, elkfw_ctl_msg_t *m)
{
    const char *line;
    size_t len;
    if (elk__agent_send(ak, json ? "STATUS JSON\n" : "STATUS\n") != 0 ||
        elk__agent_line(ak, &line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, m) == ELK_OK && m->kind == ELKFW_MSG_ERR) {
        /* refused at connect (agent full, shutting down): the same words as agent_send's */
        elkfw_say("elkd refused the connection: %s %.*s", m->code, (int)m->text_len, m->text);
        return elk__exit_for_err(ak, m);
    }
    if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK || m->kind != ELKFW_MSG_OK) {
        elkfw_say("unexpected reply from elkd: %.*s", (int)len, line);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* The count status lines after "OK STATUS <count>", printed as tables (resources,
 * semaphores when there are any, nodes). */
static int status_tables(agent_link_t *ak, status_view_t *view, uint32_t count)
{
    const char *line;
    size_t len;
    uint32_t k;
    memset(view->tables, 0, sizeof view->tables);
    view->used = 0;
    view->tables[0].kind = "RESOURCES";
    view->tables[1].kind = "NODES";
    view->tables[2].kind = "SEMAPHORES";
    view->tables[0].cell = view->cells[0];
    view->tables[1].cell = view->cells[1];
    view->tables[2].cell = view->cells[2];
    for (k = 0; k < count; k++) {
        char *copy;
        if (elk__agent_line(ak, &line, &len) <= 0) {
            elkfw_say("elkd closed the connection in the middle of the status");
            return EXIT_FAIL;
        }
        if (len > 6 && strncmp(line, "agent ", 6) == 0) {
            printf("%.*s\n", (int)len - 6, line + 6);
        } else if ((copy = status_keep(view, line, len)) == NULL) {
            continue;
        } else if (strncmp(copy, "resource ", 9) == 0) {
            table_add(&view->tables[0], copy);
        } else if (strncmp(copy, "node ", 5) == 0) {
            table_add(&view->tables[1], copy);
        } else if (strncmp(copy, "semaphore ", 10) == 0) {
            table_add(&view->tables[2], copy);
        }
    }
    table_print(&view->tables[0]);
    table_print(&view->tables[2]);
    table_print(&view->tables[1]);
    return EXIT_OK;
}

int elk__cmd_status(agent_link_t *ak, int argc, char **argv)
{
    static status_view_t sv;
    status_opts_t o;
    elkfw_ctl_msg_t m;
    int rc;
    if (!status_args(ak, argc, argv, &o)) {
        return EXIT_USAGE;
    }
    if (elk__agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    if (o.metrics) {
        return status_metrics(ak);
    }
    if (o.watch) {
        return status_watch(ak, o.count);
    }
    rc = status_request(ak, o.json, &m);
    if (rc != EXIT_OK) {
        return rc;
    }
    if (o.json) {
        printf("%.*s\n", (int)m.text_len, m.text);
        return EXIT_OK;
    }
    return status_tables(ak, &sv, m.count);
}
