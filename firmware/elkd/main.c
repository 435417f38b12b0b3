/* SPDX-License-Identifier: MIT */
/* elkd's start: command line, configuration, --check, daemon mode, then the loop. */
#include "agent.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "Usage: elkd [-c PATH] [-f] [--log stderr|syslog] [--log-level LEVEL] [--socket PATH] "
        "[--check]\n"
        "            [--print-acl]\n"
        "The edgelock agent: holds leases on a Redis fleet for local programs (see elk(1)).\n"
        "\n"
        "  -c, --config PATH     configuration file (default " ELKD_DEFAULT_CONFIG ")\n"
        "  -f, --foreground      stay in the foreground (default: detach once the socket is up)\n"
        "      --log TARGET      stderr or syslog (overrides [agent] log)\n"
        "      --log-level L     error, warn, info or debug (overrides [agent] log_level)\n"
        "  -s, --socket PATH     control socket (overrides [agent] socket)\n"
        "      --check           check the configuration, its TLS files and secrets, and exit\n"
        "      --print-acl       print the least-privilege Redis ACL rule for the lock user and "
        "exit\n"
        "  -h, --help            this text\n"
        "  -V, --version         print the version\n"
        "\n"
        "Exit codes: 0 ok (also after SIGTERM/SIGINT), 1 runtime failure, 2 bad configuration or\n"
        "usage (with --check also unusable TLS files and secrets every user can read), 3 cannot "
        "bind\n"
        "the control socket or give it its mode and group, 4 fleet setup failed (e.g. TLS "
        "files).\n");
}

static int parse_level(const char *s)
{
    if (strcmp(s, "error") == 0)
        return ELK_LOG_ERROR;
    if (strcmp(s, "warn") == 0)
        return ELK_LOG_WARN;
    if (strcmp(s, "info") == 0)
        return ELK_LOG_INFO;
    if (strcmp(s, "debug") == 0)
        return ELK_LOG_DEBUG;
    return -1;
}

/* systemd names the stream it connected to stderr in $JOURNAL_STREAM ("dev:ino"). */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    return js != NULL && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0 &&
        (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Fork into the background; the parent exits with the child's startup result. */
static int daemonize(agent_t *a)
{
    int p[2];
    pid_t pid;
    if (pipe2(p, O_CLOEXEC) != 0) {
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid > 0) {
        unsigned char code = ELKD_EXIT_RUNTIME;
        close(p[1]);
        if (read(p[0], &code, 1) != 1) {
            code = ELKD_EXIT_RUNTIME;
        }
        _exit(code);
    }
    close(p[0]);
    setsid();
    a->ready_pipe = p[1];
    return 0;
}

static void detach_stdio(agent_t *a)
{
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        if (a->log_target == ELKFW_LOG_SYSLOG) {
            dup2(fd, 2);
        }
        if (fd > 2) {
            close(fd);
        }
    }
}

static int fail_startup(agent_t *a, int code)
{
    if (a->ready_pipe >= 0) {
        unsigned char c = (unsigned char)code;
        (void)!write(a->ready_pipe, &c, 1);
    }
    return code;
}

/* Command line: options into the agent. Returns -1 to go on, else an exit code. */
typedef struct elkd_args {
    const char *log_arg, *level_arg;
    bool check_only;
    bool print_acl;
} elkd_args_t;

/* An option getopt refused (unknown, or its value missing): one line with the closest
 * option when it looks like a slip, then where the usage is. */
static int bad_option(const struct option *opts, const char *arg)
{
    char names[12][24];
    const char *cands[12];
    size_t n = 0;
    const char *guess;
    for (; opts[n].name != NULL && n < 12; n++) {
        snprintf(names[n], sizeof names[n], "--%s", opts[n].name);
        cands[n] = names[n];
    }
    guess = arg[0] == '-' && arg[1] == '-' ? elkfw_suggest(arg, strcspn(arg, "="), cands, n) : NULL;
    if (guess != NULL && strncmp(arg, guess, strlen(guess)) != 0) {
        fprintf(stderr, "elkd: unknown option '%s' (did you mean %s?)\n", arg, guess);
    } else {
        fprintf(stderr, "elkd: unknown option '%s'\n", arg);
    }
    fputs("Try 'elkd --help' for more information.\n", stderr);
    return ELKD_EXIT_CONFIG;
}

static int parse_args(agent_t *a, int argc, char **argv, elkd_args_t *args)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"foreground", no_argument, NULL, 'f'},
        {"log", required_argument, NULL, 'L'},    {"log-level", required_argument, NULL, 'l'},
        {"socket", required_argument, NULL, 's'}, {"check", no_argument, NULL, 'C'},
        {"print-acl", no_argument, NULL, 'A'},    {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
    int opt;
    memset(args, 0, sizeof *args);
    opterr = 0; /* a wrong option is said in one line below, with the closest one */
    while ((opt = getopt_long(argc, argv, ":c:fs:hV", opts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            a->conf_path = optarg;
            break;
        case 'f':
            a->foreground = true;
            break;
        case 'L':
            args->log_arg = optarg;
            break;
        case 'l':
            args->level_arg = optarg;
            break;
        case 's':
            a->socket_override = optarg;
            break;
        case 'C':
            args->check_only = true;
            break;
        case 'A':
            args->print_acl = true;
            break;
        case 'h':
            usage(stdout);
            return ELKD_EXIT_OK;
        case 'V':
            printf("elkd %s\n", ELK_VERSION_STRING);
            return ELKD_EXIT_OK;
        case ':':
            fprintf(stderr,
                    "elkd: option '%s' needs a value\nTry 'elkd --help' for more "
                    "information.\n",
                    argv[optind - 1]);
            return ELKD_EXIT_CONFIG;
        default:
            return bad_option(opts, argv[optind - 1]);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "elkd: unexpected argument '%s' (see elkd --help)\n", argv[optind]);
        return ELKD_EXIT_CONFIG;
    }
    if (args->log_arg != NULL && strcmp(args->log_arg, "stderr") != 0 &&
        strcmp(args->log_arg, "syslog") != 0) {
        fprintf(stderr, "elkd: --log must be stderr or syslog, not '%s'\n", args->log_arg);
        return ELKD_EXIT_CONFIG;
    }
    if (args->level_arg != NULL && parse_level(args->level_arg) < 0) {
        fprintf(stderr, "elkd: --log-level must be error, warn, info or debug, not '%s'\n",
                args->level_arg);
        return ELKD_EXIT_CONFIG;
    }
    return -1;
}

/* The gateway id: from the file, else the host name's allowed characters, else "gw". */
void elkd__pick_gateway_id(agent_t *a)
{
    char host[256];
    size_t k, o = 0;
    if (a->conf.gateway_id[0] != '\0') {
        strcpy(a->gateway_id, a->conf.gateway_id);
        return;
    }
    if (gethostname(host, sizeof host) != 0) {
        strcpy(host, "gw");
    }
    host[sizeof host - 1] = '\0';
    for (k = 0; host[k] != '\0' && o < CONFIG_ELK_GATEWAY_ID_MAX_LEN; k++) {
        if (elkfw_name_valid(&host[k], 1, 1)) {
            a->gateway_id[o++] = host[k];
        }
    }
    if (o == 0) {
        strcpy(a->gateway_id, "gw");
    }
}

/* The file into c with the command line's socket, its allow lists resolved into allow
 * (indexed like c->resources) and its socket group into *gid: what --check checks before
 * it tries the TLS files, and all a reload checks before it applies anything (new TLS
 * material is set up for real then, and the running fleet set up again if that fails).
 * Returns ELK_OK, or ELK_E_CONFIG with the reason in err. */
int elkd__read_conf(const agent_t *a, elkfw_conf_t *c, elkfw_allow_t **allow, gid_t *gid, char *err,
                    size_t errlen)
{
    if (elkfw_conf_load(c, a->conf_path, err, errlen) != ELK_OK) {
        return ELK_E_CONFIG;
    }
    *allow = calloc(c->n_resources + 1u, sizeof **allow);
    if (*allow == NULL) {
        snprintf(err, errlen, "no memory for the allow lists of %zu resources", c->n_resources);
        return ELK_E_CONFIG;
    }
    if (a->socket_override != NULL) {
        if (strlen(a->socket_override) >= sizeof c->agent.socket_path) {
            snprintf(err, errlen, "--socket path is longer than %zu bytes",
                     sizeof c->agent.socket_path - 1);
            return ELK_E_CONFIG;
        }
        strcpy(c->agent.socket_path, a->socket_override);
    }
    if (elkfw_access_resolve(c, *allow, err, errlen) != ELK_OK ||
        elkfw_access_socket_group(c, gid, err, errlen) != ELK_OK) {
        return ELK_E_CONFIG;
    }
    return ELK_OK;
}

/* --check: what setup would refuse, refused now (exit 2, which the unit does not restart):
 * the TLS files are parsed as elkd will (CA, certificate, key), and a build without TLS
 * refuses tls = on. Then what is allowed to whom, so an open resource is never a surprise. */
static int check_config(agent_t *a)
{
    char err[ELKFW_ERR_MAX];
    size_t i, pos = 0;
    int rc;
    elk_posix_clock(&a->clock);
    elk_posix_entropy(&a->entropy);
    rc = elkd__setup_fleet(a, err, sizeof err);
    elkd__teardown_fleet(a);
    if (rc != ELK_OK) {
        fprintf(stderr, "elkd: %s\n", err);
        return ELKD_EXIT_CONFIG;
    }
    for (i = 0; i < a->conf.n_resources; i++) {
        const elkfw_resource_conf_t *r = &a->conf.resources[i];
        /* a semaphore once, by its name and permits (its permits share its settings) */
        int nl = r->permits != 0 ? (int)elkfw_permit_sem_len(r->name) : (int)strlen(r->name);
        const char *what = r->permits != 0 ? "semaphore" : "resource";
        char permits[40] = "";
        if (r->permit > 1u) {
            continue;
        }
        if (r->permits != 0) {
            snprintf(permits, sizeof permits, " (%" PRIu32 " permits)", r->permits);
        }
        if (a->allow[i].open) {
            printf("%s: [%s %.*s]%s is open to every local user that can reach the socket (set "
                   "allow_users or allow_groups)\n",
                   a->conf_path, what, nl, r->name, permits);
        } else {
            printf("%s: [%s %.*s]%s allow_users = %s; allow_groups = %s\n", a->conf_path, what, nl,
                   r->name, permits, r->allow_users[0] ? r->allow_users : "-",
                   r->allow_groups[0] ? r->allow_groups : "-");
        }
    }
    if (a->conf.agent.safety_check != ELKFW_SAFETY_OFF) {
        printf("%s: safety check: on every connection and again every %" PRIu32
               " ms on each connected node; a node whose settings turn unsafe (CONFIG SET "
               "maxmemory-policy) is %s within %" PRIu64 " ms\n",
               a->conf_path, elk_client_safety_recheck_ms(&a->client),
               a->conf.agent.safety_check == ELKFW_SAFETY_REFUSE ? "refused its vote" : "warned of",
               elk_client_safety_bound_ms(&a->client));
    }
    /* risky but valid: said, and --check still passes */
    while (elkfw_conf_warning(&a->conf, &pos, err, sizeof err)) {
        printf("%s\n", err);
    }
    printf("%s: configuration ok (%s, %zu node%s, %zu resource%s, gateway %s)\n", a->conf_path,
           elkfw_mode_name(a->conf.mode), a->conf.n_nodes, a->conf.n_nodes == 1 ? "" : "s",
           a->conf.n_resources, a->conf.n_resources == 1 ? "" : "s", a->gateway_id);
    return ELKD_EXIT_OK;
}

/* The file, with the command line's overrides. Returns -1 to go on, else an exit code. */
static int load_config(agent_t *a, const elkd_args_t *args)
{
    char err[ELKFW_ERR_MAX];
    elkfw_allow_t *allow = NULL;
    if (elkd__read_conf(a, &a->conf, &allow, &a->socket_gid, err, sizeof err) != ELK_OK) {
        fprintf(stderr, "elkd: %s\n", err);
        free(allow);
        return ELKD_EXIT_CONFIG;
    }
    if (!elkd__res_reserve(a, a->conf.n_resources)) {
        fprintf(stderr, "elkd: no memory for %zu resources\n", a->conf.n_resources);
        free(allow);
        return ELKD_EXIT_RUNTIME;
    }
    memcpy(a->allow, allow, a->conf.n_resources * sizeof *allow); /* slot i serves resource i */
    free(allow);
    a->log_target = args->log_arg != NULL
        ? (strcmp(args->log_arg, "syslog") == 0 ? ELKFW_LOG_SYSLOG : ELKFW_LOG_STDERR)
        : a->conf.agent.log_target;
    a->level_override = args->level_arg != NULL ? parse_level(args->level_arg) : -1;
    a->log_level = a->level_override >= 0 ? a->level_override : a->conf.agent.log_level;
    elkd__pick_gateway_id(a);
    if (args->print_acl) {
        char line[600];
        (void)elkfw_acl_line(&a->conf, a->conf.nodes[0].user, line, sizeof line);
        printf("%s\n", line);
        return ELKD_EXIT_OK;
    }
    if (args->check_only) {
        return check_config(a);
    }
    return -1;
}

/* Fleet, signals, control socket; then tells a waiting parent (daemon mode) we are up.
 * Returns -1 when ready, else an exit code. */
static int start_agent(agent_t *a)
{
    char err[ELKFW_ERR_MAX];
    sigset_t mask;
    int rc;
    elk_posix_clock(&a->clock);
    elk_posix_entropy(&a->entropy);
    a->started_at = a->clock.now_ms(a->clock.ctx);
    a->lib_log.ctx = a;
    a->lib_log.write = elkd__lib_log_write;
    a->lib_log.level = a->log_level;
    rc = elkd__setup_fleet(a, err, sizeof err);
    if (rc != ELK_OK) {
        fprintf(stderr, "elkd: %s\n", err);
        if (a->log_target == ELKFW_LOG_SYSLOG) {
            syslog(LOG_ERR, "%s", err);
        }
        return fail_startup(a,
                            rc == ELK_E_INVALID_ARG || rc == ELK_E_NAME_INVALID ||
                                    rc == ELK_E_NAME_TOO_LONG
                                ? ELKD_EXIT_CONFIG
                                : ELKD_EXIT_FLEET);
    }
    elkd__log_conf_warnings(a);
    elkd__evlog_apply(a, "", 0);
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    a->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (a->signal_fd < 0) {
        fprintf(stderr, "elkd: signalfd: %s\n", strerror(errno));
        return fail_startup(a, ELKD_EXIT_RUNTIME);
    }
    a->listen_fd = elkfw_access_listen(a->conf.agent.socket_path, a->conf.agent.socket_mode,
                                       a->socket_gid, err, sizeof err);
    if (a->listen_fd < 0) {
        fprintf(stderr, "elkd: %s\n", err);
        if (a->log_target == ELKFW_LOG_SYSLOG) {
            syslog(LOG_ERR, "%s", err);
        }
        elkd__teardown_fleet(a);
        return fail_startup(a, ELKD_EXIT_SOCKET);
    }
    /* READY=1 waits for a quorum at most as long as a first connection may take. */
    a->ready_by = a->clock.now_ms(a->clock.ctx) + a->conf.connect_timeout_ms + 1000u;
    if (a->ready_pipe >= 0) {
        /* The socket accepts connections now: let the parent exit 0. */
        char ok = 0;
        (void)!write(a->ready_pipe, &ok, 1);
        close(a->ready_pipe);
        a->ready_pipe = -1;
    }
    return -1;
}

static int elkd_main(agent_t *a, int argc, char **argv)
{
    elkd_args_t args;
    int rc, i;

    a->conf_path = ELKD_DEFAULT_CONFIG;
    a->listen_fd = -1;
    a->signal_fd = -1;
    a->ready_pipe = -1;
    a->notify.fd = -1;
    a->evlog.fd = -1;
    a->log_level = ELK_LOG_INFO;
    for (i = 0; i < ELKD_MAX_CLIENTS; i++) {
        a->clients[i].fd = -1;
    }
    for (i = 0; i < (int)(sizeof a->waiters / sizeof a->waiters[0]); i++) {
        a->waiters[i].client = -1;
    }
    if ((rc = parse_args(a, argc, argv, &args)) >= 0 || (rc = load_config(a, &args)) >= 0) {
        return rc;
    }
    if (a->log_target == ELKFW_LOG_SYSLOG) {
        openlog("elkd", LOG_PID, LOG_DAEMON);
    }
    elkfw_notify_init(&a->notify);
    a->journal = a->log_target == ELKFW_LOG_STDERR && stderr_is_journal();
    signal(SIGPIPE, SIG_IGN); /* port/posix has no MSG_NOSIGNAL (lwIP mirror) */
    if (!a->foreground && daemonize(a) != 0) {
        fprintf(stderr, "elkd: cannot fork into the background: %s\n", strerror(errno));
        return ELKD_EXIT_RUNTIME;
    }
    if ((rc = start_agent(a)) >= 0) {
        return rc;
    }
    if (!a->foreground) {
        detach_stdio(a);
    }
    elkd__log(a, ELK_LOG_INFO,
              "elkd %s started: gateway %s, %s fleet of %zu node%s, %zu resource%s, socket %s",
              ELK_VERSION_STRING, a->gateway_id, elkfw_mode_name(a->conf.mode), a->conf.n_nodes,
              a->conf.n_nodes == 1 ? "" : "s", a->n_res, a->n_res == 1 ? "" : "s",
              a->conf.agent.socket_path);
    rc = elkd__run_loop(a);
    elkfw_evlog_close(&a->evlog);
    elkfw_notify_close(&a->notify);
    elkd__teardown_fleet(a);
    if (a->listen_fd >= 0) {
        close(a->listen_fd);
        unlink(a->conf.agent.socket_path);
    }
    return rc;
}

int main(int argc, char **argv)
{
    /* The whole agent in one object (client slots with their output queues, the buffer
     * pool, the TLS contexts): hundreds of KiB, taken once at start, never per lock. */
    agent_t *a = calloc(1, sizeof *a);
    int rc;
    if (a == NULL) {
        fprintf(stderr, "elkd: out of memory for the agent (%zu bytes)\n", sizeof *a);
        return ELKD_EXIT_RUNTIME;
    }
    rc = elkd_main(a, argc, argv);
    elkd__res_free_all(a);
    free(a->res);
    free(a->allow);
    elkfw_conf_free(&a->conf);
    free(a);
    return rc;
}
