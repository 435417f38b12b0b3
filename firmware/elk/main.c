/* SPDX-License-Identifier: MIT */
/* elk's commands: the table, the small ones (reload, guard, events, timeline) and main. */
#include "elk.h"

/* One STATUS JSON answer's number after "key": (0 if absent). */
static uint64_t json_number(const char *text, size_t len, const char *key)
{
    char pat[48];
    const char *p;
    int n = snprintf(pat, sizeof pat, "\"%s\":", key);
    p = memmem(text, len, pat, (size_t)n);
    return p != NULL ? strtoull(p + n, NULL, 10) : 0;
}

static int status_json(agent_link_t *ak, elkfw_ctl_msg_t *m)
{
    const char *line;
    size_t len;
    if (elk__agent_send(ak, "STATUS JSON\n") != 0 || elk__agent_line(ak, &line, &len) <= 0) {
        return EXIT_UNREACHABLE;
    }
    if (elkfw_ctl_parse_reply(line, len, m) != ELK_OK || m->kind != ELKFW_MSG_OK) {
        elkfw_say("unexpected reply from elkd: %.*s", (int)len, line);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

/* elk reload: SIGHUP to the elkd behind the socket (its pid from STATUS), then wait for
 * its reload counters to move and say how it went. */
static int cmd_reload(agent_link_t *ak, int argc, char **argv)
{
    elkfw_ctl_msg_t m;
    uint64_t pid, ok0, failed0, until;
    int rc;
    if (argc > 1) {
        return elkfw_cli_usage_error("reload", "unexpected argument '%s'", argv[1]);
    }
    if (elk__agent_connect(ak) < 0) {
        return EXIT_UNREACHABLE;
    }
    if ((rc = status_json(ak, &m)) != EXIT_OK) {
        return rc;
    }
    pid = json_number(m.text, m.text_len, "pid");
    ok0 = json_number(m.text, m.text_len, "reloads");
    failed0 = json_number(m.text, m.text_len, "reload_failures");
    if (pid <= 1 || kill((pid_t)pid, SIGHUP) != 0) {
        elkfw_say("cannot signal elkd (pid %" PRIu64 "): %s (run as elkd's user or root)", pid,
                  strerror(errno));
        return EXIT_FAIL;
    }
    /* elkd says nothing when it has reloaded: ask every 50 ms, waiting on the connection
     * between two questions (so an elkd that goes away is seen at once) */
    for (until = elk__now_ms() + 10000u; elk__now_ms() < until;) {
        uint64_t asked = elk__now_ms();
        if ((rc = status_json(ak, &m)) != EXIT_OK) {
            return rc;
        }
        if (json_number(m.text, m.text_len, "reload_failures") != failed0) {
            elkfw_say("reload failed; elkd keeps its running configuration (its log says why)");
            return EXIT_CONFIG;
        }
        if (json_number(m.text, m.text_len, "reloads") != ok0) {
            printf("reloaded\n");
            return EXIT_OK;
        }
        (void)elk__agent_wait(ak, asked + 50u < until ? asked + 50u : until);
    }
    elkfw_say("elkd (pid %" PRIu64 ") did not report a reload within 10 s", pid);
    return EXIT_FAIL;
}

/* ------------------------------------------------------------------ guard */

static int cmd_guard(int argc, char **argv)
{
    return elkfw_guard_main(argc, argv); /* firmware/elk/guard.c */
}

/* ------------------------------------------------------------------ main */

static int cmd_guard_any(agent_link_t *ak, int argc, char **argv)
{
    (void)ak; /* the guard works on the actuator's side, without elkd */
    return cmd_guard(argc, argv);
}

typedef struct command {
    const char *name;
    void (*usage)(FILE *f);
    int (*run)(agent_link_t *ak, int argc, char **argv);
} command_t;

static int cmd_events(agent_link_t *ak, int argc, char **argv)
{
    (void)ak;
    return elkfw_history_events(argc, argv, ELK_DEFAULT_EVENTS_FILE);
}

static int cmd_timeline(agent_link_t *ak, int argc, char **argv)
{
    (void)ak;
    return elkfw_history_timeline(argc, argv);
}

static const command_t commands[] = {
    {"run", elk__usage_run, elk__cmd_run},
    {"acquire", elk__usage_acquire, elk__cmd_acquire},
    {"status", elk__usage_status, elk__cmd_status},
    {"reload", elk__usage_reload, cmd_reload},
    {"guard", elk__usage_guard, cmd_guard_any},
    {"events", elkfw_history_usage_events, cmd_events},
    {"timeline", elkfw_history_usage_timeline, cmd_timeline},
};

/* A command elk does not know: said in one line, with the closest one if it looks like a
 * slip. */
static int unknown_command(const char *cmd)
{
    const char *names[sizeof commands / sizeof commands[0] + 1];
    const char *guess;
    size_t k;
    for (k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        names[k] = commands[k].name;
    }
    names[k] = "help";
    guess = elkfw_suggest(cmd, strlen(cmd), names, k + 1);
    if (guess != NULL) {
        return elkfw_cli_usage_error(NULL, "unknown command '%s' (did you mean '%s'?)", cmd, guess);
    }
    return elkfw_cli_usage_error(NULL, "unknown command '%s'", cmd);
}

/* The options before the command (from argv[*i], which ends at the command): STEP_ON,
 * or the exit code of --help, --version or a wrong option. */
static int main_options(agent_link_t *ak, int argc, char **argv, int *i)
{
    while (*i < argc && argv[*i][0] == '-') {
        const char *a = argv[*i];
        if (strcmp(a, "--socket") == 0 && *i + 1 < argc) {
            ak->sock_path = argv[*i + 1];
            *i += 2;
        } else if (strncmp(a, "--socket=", 9) == 0) {
            ak->sock_path = a + 9;
            (*i)++;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            elk__usage_main(stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("elk %s\n", ELK_VERSION_STRING);
            return EXIT_OK;
        } else {
            return elkfw_cli_usage_error(NULL,
                                         "unknown option '%s' (elk's own options: --socket, "
                                         "--help, --version; a command's come after it)",
                                         a);
        }
    }
    return STEP_ON;
}

int main(int argc, char **argv)
{
    static agent_link_t link; /* its store holds one STATUS answer (heap, kept to the end) */
    agent_link_t *ak = &link;
    int i = 1, rc;
    size_t k;
    const char *cmd;
    signal(SIGPIPE, SIG_IGN);
    ak->fd = -1;
    ak->full = false;
    ak->held_code = EXIT_NOT_ACQUIRED;
    ak->sock_path = getenv("ELK_SOCKET") ? getenv("ELK_SOCKET") : ELK_DEFAULT_SOCKET;
    rc = main_options(ak, argc, argv, &i);
    if (rc != STEP_ON) {
        return rc;
    }
    if (i >= argc) {
        return elkfw_cli_usage_error(NULL,
                                     "missing COMMAND (run, acquire, status, reload, guard, "
                                     "events, timeline)");
    }
    cmd = argv[i];
    argc -= i;
    argv += i;
    for (k = 0; k < sizeof commands / sizeof commands[0]; k++) {
        if (strcmp(cmd, commands[k].name) == 0) {
            if (elk__want_help(argc, argv)) {
                commands[k].usage(stdout);
                return EXIT_OK;
            }
            rc = commands[k].run(ak, argc, argv);
            /* refused for want of a slot, whichever step saw it: one exit code, neither
             * "elkd unreachable" (69) nor "lease not acquired" (73) */
            return ak->full && rc != EXIT_OK ? EXIT_AGENT_FULL : rc;
        }
    }
    if (strcmp(cmd, "help") == 0) {
        elk__usage_main(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "release") == 0) {
        /* Removed: a lease belongs to the connection that took it; another connection
         * that could drop it could stop someone else's actuator mid-step. */
        elkfw_say("there is no 'elk release': a lease is released by the process holding it; stop "
                  "that 'elk "
                  "acquire' or 'elk run' (its pid is the holder in 'elk status')");
        return EXIT_USAGE;
    }
    return unknown_command(cmd);
}
