/* SPDX-License-Identifier: MIT */
/*
 * elk's command line as a flock(1) user expects it (elkfw/cli.h): -w SECONDS, -n, -E CODE,
 * -c STRING; a usage error in one line; one table from elkd's refusal to the exit code.
 */
#define _GNU_SOURCE /* memmem */
#include "elkfw/cli.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/err.h"
#include "elkfw/ctl.h"
#include "elkfw/heartbeat.h"
#include "elkfw/say.h"
#include "elkfw/suggest.h"

/* ------------------------------------------------------------------ durations */

/* The unit after the number: ms per unit; a bare number is seconds (flock -w). */
static bool cli_unit(const char *u, uint64_t *mult)
{
    static const struct {
        const char *name;
        uint64_t ms;
    } units[] = {{"", 1000u}, {"ms", 1u}, {"s", 1000u}, {"m", 60000u}, {"h", 3600000u}};
    size_t k;
    for (k = 0; k < sizeof units / sizeof units[0]; k++) {
        if (strcmp(u, units[k].name) == 0) {
            *mult = units[k].ms;
            return true;
        }
    }
    return false;
}

bool elkfw_cli_duration(const char *s, uint32_t *ms)
{
    uint64_t whole = 0, milli = 0, mult, scale = 100u, v;
    size_t i = 0, digits = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        whole = whole * 10u + (uint64_t)(s[i] - '0');
        if (whole > UINT32_MAX) {
            return false;
        }
    }
    if (s[i] == '.') {
        /* thousandths of the unit; finer digits are dropped */
        for (i++; s[i] >= '0' && s[i] <= '9'; i++, digits++) {
            milli += (uint64_t)(s[i] - '0') * scale;
            scale /= 10u;
        }
    }
    if (digits == 0 || !cli_unit(s + i, &mult)) {
        return false;
    }
    v = (whole * 1000u + milli) * mult / 1000u;
    if (v > UINT32_MAX) {
        return false;
    }
    *ms = (uint32_t)v;
    return true;
}

/* ------------------------------------------------------------------ exit codes */

/* elkd's refusals and what each means to a script: the one table (elk(1) EXIT STATUS). */
static const struct {
    int err;
    int code; /* 0: the held code (-E) */
} cli_exits[] = {
    {ELK_E_LOCK_BUSY, 0},                    /* a quorum says another holder has it */
    {ELK_E_LOCK_DELAY, 0},                   /* the last holder's lease may still be valid */
    {ELK_E_LOCK_TIMEOUT, 0},                 /* waited behind a holder (no round failed) */
    {ELK_E_PERMITS_TAKEN, 0},                /* every permit of a semaphore is held */
    {ELK_E_FLEET_UNAVAILABLE, EXIT_FLEET},   /* too few servers answered for a quorum */
    {ELK_E_VALIDITY, EXIT_FLEET},            /* the fleet answered too slowly */
    {ELK_E_NODE_QUARANTINED, EXIT_FLEET},    /* too few servers may vote */
    {ELK_E_AGENT_FULL, EXIT_AGENT_FULL},     /* no client slot in elkd */
    {ELK_E_SHUTTING_DOWN, EXIT_UNREACHABLE}, /* elkd is going away */
    {ELK_E_FORBIDDEN, EXIT_NOPERM},          /* allow_users / allow_groups */
    {ELK_E_SUPERVISE_DENIED, EXIT_NOPERM},   /* a process of another user in the group */
    {ELK_E_CONFIG, EXIT_CONFIG},             /* elkd's configuration refused */
    {ELK_E_LOCK_LOST, EXIT_LOST},            /* the lease ended while held */
    {ELK_E_RESOURCE_UNKNOWN, EXIT_USAGE},    /* no such [resource] in elkd.conf */
    {ELK_E_NAME_INVALID, EXIT_USAGE},
    {ELK_E_NAME_TOO_LONG, EXIT_USAGE},
    {ELK_E_CTL_SYNTAX, EXIT_USAGE},
};

static int cli_exit_of(int err, int held)
{
    size_t k;
    for (k = 0; k < sizeof cli_exits / sizeof cli_exits[0]; k++) {
        if (cli_exits[k].err == err) {
            return cli_exits[k].code != 0 ? cli_exits[k].code : held;
        }
    }
    return EXIT_FAIL;
}

int elkfw_cli_exit_for(const char *code, const char *text, size_t len, int held)
{
    static const char mark[] = "last round: ";
    int err = elkfw_err_from_name(code);
    if (err == ELK_E_LOCK_TIMEOUT && text != NULL) {
        /* a wait that ran out: what stood in the way in its last round decides */
        const char *p = memmem(text, len, mark, sizeof mark - 1);
        if (p != NULL) {
            char name[48];
            size_t off = (size_t)(p - text) + sizeof mark - 1, n = 0;
            while (off + n < len && n + 1 < sizeof name && text[off + n] != ' ') {
                name[n] = text[off + n];
                n++;
            }
            name[n] = '\0';
            err = elkfw_err_from_name(name);
        }
    }
    return cli_exit_of(err, held);
}

/* ------------------------------------------------------------------ usage errors */

int elkfw_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("elk: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'elk%s%s --help' for more information.\n", cmd ? " " : "",
            cmd ? cmd : "");
    return EXIT_USAGE;
}

/* ------------------------------------------------------------------ run / acquire options */

/* Every option of run (acquire takes those before "--on-suspect"), for "did you mean". */
static const char *const cli_lock_options[] = {
    "--wait",       "--nonblock", "--conflict-exit-code", "--socket",    "--command",
    "--on-suspect", "--on-lost",  "--hook-timeout",       "--heartbeat",
};

/* argv[*i] is the option (long name, or short letter when given): its value (the next
 * argument, or after '=') in *val. 1 with the value, 0 for another option, -1 when the
 * value is missing (said). */
static int cli_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                     const char *shortopt, const char **val)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (shortopt != NULL && strcmp(a, shortopt) == 0) {
        n = strlen(shortopt);
    } else if (strncmp(a, name, n) != 0 || (a[n] != '\0' && a[n] != '=')) {
        return 0;
    }
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (*i + 1 >= argc) {
        elkfw_cli_usage_error(cmd, "%s needs a value", name);
        return -1;
    }
    *val = argv[++*i];
    return 1;
}

static int cli_duration_opt(const char *cmd, const char *name, const char *v, uint32_t min_ms,
                            uint32_t *ms)
{
    if (!elkfw_cli_duration(v, ms) || *ms < min_ms) {
        elkfw_cli_usage_error(cmd,
                              "%s takes seconds (10, 0.5) or a duration with a unit (500ms, 10s, "
                              "2m)%s (got '%s')",
                              name,
                              min_ms > 1   ? ", at least 100ms"
                                  : min_ms ? ", above 0"
                                           : "",
                              v);
        return -1;
    }
    return 1;
}

static int cli_code_opt(const char *cmd, const char *v, int *code)
{
    char *end;
    long c = strtol(v, &end, 10);
    if (end == v || *end != '\0' || c < 0 || c > 255) {
        elkfw_cli_usage_error(cmd, "--conflict-exit-code takes an exit code 0..255 (got '%s')", v);
        return -1;
    }
    *code = (int)c;
    return 1;
}

/* One option at argv[*i]: 1 taken, 0 not an option of this command, -1 wrong (said). */
static int cli_lock_option(int argc, char **argv, int *i, bool run, elkfw_lock_opts_t *o)
{
    const char *cmd = argv[0], *v = NULL;
    int rc;
    if (strcmp(argv[*i], "-n") == 0 || strcmp(argv[*i], "--nonblock") == 0) {
        o->nonblock = true; /* one attempt, whatever -w says (as flock -n) */
        return 1;
    }
    if ((rc = cli_value(cmd, argc, argv, i, "--wait", "-w", &v)) != 0) {
        return rc < 0 ? rc : cli_duration_opt(cmd, "--wait", v, 0, &o->wait_ms);
    }
    if ((rc = cli_value(cmd, argc, argv, i, "--conflict-exit-code", "-E", &v)) != 0) {
        return rc < 0 ? rc : cli_code_opt(cmd, v, &o->held_code);
    }
    if ((rc = cli_value(cmd, argc, argv, i, "--socket", NULL, &o->sock_path)) != 0) {
        return rc;
    }
    if (!run) {
        return 0;
    }
    if ((rc = cli_value(cmd, argc, argv, i, "--command", "-c", &o->command)) != 0) {
        return rc;
    }
    if ((rc = cli_value(cmd, argc, argv, i, "--on-suspect", NULL, &o->on_suspect)) != 0 ||
        (rc = cli_value(cmd, argc, argv, i, "--on-lost", NULL, &o->on_lost)) != 0) {
        return rc;
    }
    if ((rc = cli_value(cmd, argc, argv, i, "--heartbeat", NULL, &v)) != 0) {
        return rc < 0 ? rc
                      : cli_duration_opt(cmd, "--heartbeat", v, ELKFW_HB_MIN_MS, &o->heartbeat_ms);
    }
    if ((rc = cli_value(cmd, argc, argv, i, "--hook-timeout", NULL, &v)) != 0) {
        return rc < 0 ? rc : cli_duration_opt(cmd, "--hook-timeout", v, 1, &o->hook_timeout_ms);
    }
    return 0;
}

/* An argument starting with '-' that is no option of this command: said, with a guess. */
static int cli_unknown_option(const char *cmd, const char *a, bool run)
{
    size_t n = strcspn(a, "=");
    const char *guess = elkfw_suggest(
        a, n, cli_lock_options, run ? sizeof cli_lock_options / sizeof cli_lock_options[0] : 4);
    if (guess != NULL) {
        return elkfw_cli_usage_error(cmd, "unknown option '%s' (did you mean %s?)", a, guess);
    }
    return elkfw_cli_usage_error(cmd, "unknown option '%s'", a);
}

static bool cli_hooks_ok(const char *cmd, const elkfw_lock_opts_t *o)
{
    if ((o->on_suspect != NULL && o->on_suspect[0] == '\0') ||
        (o->on_lost != NULL && o->on_lost[0] == '\0')) {
        elkfw_cli_usage_error(cmd, "%s needs a shell command",
                              o->on_suspect != NULL && o->on_suspect[0] == '\0' ? "--on-suspect"
                                                                                : "--on-lost");
        return false;
    }
    if (o->command != NULL && o->command[0] == '\0') {
        elkfw_cli_usage_error(cmd, "--command needs a shell command");
        return false;
    }
    return true;
}

int elkfw_cli_lock_args(int argc, char **argv, bool run, uint32_t default_hook_ms,
                        elkfw_lock_opts_t *o)
{
    int i, rc;
    memset(o, 0, sizeof *o);
    o->held_code = EXIT_NOT_ACQUIRED;
    o->hook_timeout_ms = default_hook_ms;
    for (i = 1; i < argc; i++) {
        if ((rc = cli_lock_option(argc, argv, &i, run, o)) < 0) {
            return -1;
        }
        if (rc > 0) {
            continue;
        }
        if (argv[i][0] == '-' && strcmp(argv[i], "--") != 0) {
            cli_unknown_option(argv[0], argv[i], run);
            return -1;
        }
        if (strcmp(argv[i], "--") == 0) {
            break;
        }
        o->resource = argv[i++];
        o->wait_ms = o->nonblock ? 0 : o->wait_ms;
        /* flock FILE -c STRING: -c may follow the resource too */
        rc = 0;
        if (run && i < argc &&
            (rc = cli_value(argv[0], argc, argv, &i, "--command", "-c", &o->command)) != 0) {
            i++;
        }
        if (rc < 0 || !cli_hooks_ok(argv[0], o)) {
            return -1;
        }
        return i;
    }
    elkfw_cli_usage_error(argv[0], "missing RESOURCE");
    return -1;
}
