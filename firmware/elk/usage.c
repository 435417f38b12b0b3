/* SPDX-License-Identifier: MIT */
/* Help texts of elk and its commands, and the checks every command's arguments share. */
#include "elk.h"

void elk__usage_main(FILE *f)
{
    fprintf(
        f,
        "Usage: elk [--socket PATH] COMMAND [OPTIONS] ...\n"
        "Leases on shared actuators through elkd (the edgelock agent).\n"
        "\n"
        "Commands:\n"
        "  run [-w SECS|-n] [-E CODE] RESOURCE -- CMD [ARGS...]  run CMD while holding RESOURCE\n"
        "  run [-w SECS|-n] [-E CODE] RESOURCE -c STRING       the same, STRING run by /bin/sh\n"
        "                                             (as flock(1); hooks, heartbeat: elk run "
        "--help)\n"
        "  acquire [-w SECS|-n] [-E CODE] RESOURCE    take RESOURCE and hold it until "
        "SIGINT/SIGTERM\n"
        "  status [--json|--metrics|--watch]          leases and nodes of this agent\n"
        "  reload                                     make elkd re-read its configuration\n"
        "  guard --state FILE [TOKEN] [-- CMD...]     actuator side: accept or refuse a fencing "
        "token;\n"
        "                                             with CMD: run CMD holding the guard\n"
        "  events [--since WHEN] [--resource R] [--json]  the lease event record\n"
        "  timeline [-o OUT] RECORD...                 the records of gateways as an HTML page\n"
        "\n"
        "  --socket PATH   elkd's control socket (default $ELK_SOCKET or " ELK_DEFAULT_SOCKET ")\n"
        "  --help          help (also after any command), --version\n"
        "\n"
        "Durations on the command line: a bare number is seconds (10, 0.5), or give a unit:\n"
        "500ms, 10s, 2m, 1h.\n"
        "\n"
        "Exit codes: 0 ok, 1 other error from elkd, 64 usage, 65 stale token (guard), 66 guard\n"
        "storage error, 67 guard: lease ended/expired/other token, 68 guard busy (--wait ran "
        "out),\n"
        "69 elkd unreachable or shutting down, 73 held by another holder (or -E CODE), 74 elkd\n"
        "full, 75 lease lost / run: heartbeat missed, 76 fleet unreachable (too few servers for a\n"
        "quorum), 77 not allowed (allow_users / allow_groups), 78 configuration refused (reload),\n"
        "126/127 CMD not executable / not found; run passes on CMD's own exit status.\n");
}

void elk__usage_run(FILE *f)
{
    fprintf(
        f,
        "Usage: elk run [-w SECS | -n] [-E CODE] [--on-suspect HOOK] [--on-lost HOOK]\n"
        "               [--hook-timeout D] [--heartbeat D] RESOURCE -- CMD [ARGS...]\n"
        "       elk run [OPTIONS] RESOURCE -c STRING\n"
        "Acquire RESOURCE through elkd, run CMD while the lease holds, release when CMD and\n"
        "everything it started in its process group have exited.\n"
        "CMD gets ELK_RESOURCE, ELK_FENCE_TOKEN, ELK_DEADLINE_MS (validity left at start) and\n"
        "ELK_LEASE_FILE (a file rewritten after every renewal: 'elklease 1 TOKEN DEADLINE_MS', "
        "the\n"
        "deadline in CLOCK_BOOTTIME ms, 0 once lost) in its environment; pass ELK_FENCE_TOKEN "
        "with\n"
        "every actuator step (elk guard checks both token and lease file).\n"
        "RESOURCE may be a semaphore (CMD also gets ELK_SEMAPHORE and ELK_PERMIT; ELK_RESOURCE\n"
        "is the permit) or a list a,b[,c]: all or nothing, taken in the order of the names;\n"
        "CMD then gets ELK_RESOURCES and ELK_TOKENS (a=12,b=40) and stops at the loss of any.\n"
        "CMD runs in a process group of its own, which elkd is told before CMD starts. If the "
        "lease\n"
        "is lost, the group gets SIGTERM at once and SIGKILL when the resource's stop margin runs\n"
        "out; elk then exits 75 and says why (the cause elkd reports). If elk itself dies (any\n"
        "signal, even SIGKILL) or stops reading, CMD dies with it (parent-death signal) and elkd\n"
        "stops the rest of the group before it releases the lease; if it cannot confirm the group\n"
        "gone, it lets the lease run out instead. Processes that leave the group (setsid) escape.\n"
        "  -w, --wait SECS  wait up to SECS seconds (as flock -w; or 500ms, 10s, 2m) for the\n"
        "              lease; default: try once\n"
        "  -n, --nonblock   try once, fail at once if the resource is held (the default; wins\n"
        "              over --wait, as in flock)\n"
        "  -E, --conflict-exit-code CODE  exit CODE (0..255) when the resource is held by\n"
        "              another holder; default 73\n"
        "  -c, --command STRING  run STRING with /bin/sh -c instead of CMD after '--'\n"
        "  --on-suspect HOOK  run HOOK (/bin/sh -c, own process group, output on stderr) when a\n"
        "              renewal misses its quorum while the lease still holds (SUSPECT)\n"
        "  --on-lost HOOK     run HOOK when the lease is lost (or the command is stopped for a\n"
        "              missed heartbeat), before the command gets SIGTERM: a safe-position step.\n"
        "              Hooks get ELK_EVENT (suspect|lost), ELK_RESOURCE, ELK_TOKEN and\n"
        "              ELK_TIME_LEFT_MS; the lease is not released while one runs\n"
        "  --hook-timeout D  SIGTERM to a hook still running after D (SIGKILL 1 s later);\n"
        "              default 5s. A hook that fails or times out is reported on stderr\n"
        "  --heartbeat D  CMD must write to the fd in ELK_HEARTBEAT_FD at least once every D\n"
        "              (at least 100ms); elkd renews only while it does. A missed heartbeat:\n"
        "              SIGTERM to CMD's group, SIGKILL after the stop margin (at least 1 s),\n"
        "              release, exit 75. Closing the fd is no miss by itself\n"
        "Durations: a bare number is seconds; or 500ms, 10s, 2m.\n"
        "Exit: CMD's status, or 73 held by another holder (-E), 76 fleet unreachable, 75 lost\n"
        "(or heartbeat missed), 69 elkd unreachable, 74 elkd full, 77 not allowed, 64 usage,\n"
        "126/127 exec failed.\n");
}

void elk__usage_acquire(FILE *f)
{
    fprintf(
        f,
        "Usage: elk acquire [-w SECS | -n] [-E CODE] RESOURCE\n"
        "Acquire RESOURCE and hold it until this process gets SIGINT or SIGTERM (then release,\n"
        "exit 0). Prints 'acquired RESOURCE token=T validity_ms=V' and one line per event.\n"
        "  -w, --wait SECS  wait up to SECS seconds (or 500ms, 10s, 2m); default: try once\n"
        "  -n, --nonblock   try once (the default; wins over --wait)\n"
        "  -E, --conflict-exit-code CODE  exit CODE when held by another holder (default 73)\n"
        "Exit: 0 released, 73 held by another holder (-E), 76 fleet unreachable, 75 lease lost,\n"
        "69 elkd unreachable or shutting down, 74 elkd full, 77 not allowed.\n");
}

void elk__usage_status(FILE *f)
{
    fprintf(f,
            "Usage: elk status [--json | --metrics | --watch [--count N]]\n"
            "Show each resource (state, holder, token, validity left, renewals) and each node\n"
            "(state, TLS, last round trip, failures, last error) of the local elkd.\n"
            "  --json      the same as one JSON object\n"
            "  --metrics   elkd's counters and histograms in the Prometheus text format\n"
            "  --watch     redraw every second (validity bars, holders, node round trips) until\n"
            "              Ctrl-C; plain frames when stdout is not a terminal; --count N frames\n");
}

void elk__usage_reload(FILE *f)
{
    fprintf(
        f,
        "Usage: elk reload\n"
        "Make elkd re-read its configuration (the same as SIGHUP) and say whether it applied it.\n"
        "Held leases go on; elkd's log tells what changed and what needs a restart.\n");
}

void elk__usage_guard(FILE *f)
{
    elkfw_guard_usage(f);
}

bool elk__want_help(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            return false;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return true;
        }
    }
    return false;
}

bool elk__resource_ok(const char *r)
{
    if (!elkfw_name_valid(r, strlen(r), ELKFW_NAME_MAX - 1)) {
        elkfw_say(
            "'%s' is not a valid resource name (letters, digits and . _ - : / @, at most %d bytes)",
            r, ELKFW_NAME_MAX - 1);
        return false;
    }
    return true;
}
