/* SPDX-License-Identifier: MIT */
/*
 * A simulated actuator for the demo: a valve driven over a Unix socket. Every command
 * carries the sender's fencing token; the actuator checks it with lib/fence (state in a
 * file, fsynced) and refuses stale ones, as a real actuator driver should.
 *
 *   elk_demo_actuator serve SOCKET STATEFILE     run the actuator (until SIGTERM)
 *   elk_demo_actuator send SOCKET GATEWAY TOKEN COMMAND
 *                                               send one command; exit 0 accepted,
 *                                               65 refused as stale, 66 storage, 1 other
 * Commands: "open", "close", anything else is logged as is. The actuator also notices if
 * two gateways' open..close sessions overlap (which fencing + leases must prevent).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "elk/err.h"
#include "elk/fence.h"
#include "elk/fence_file.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int unix_addr(struct sockaddr_un *sa, const char *path)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa->sun_path) {
        return -1;
    }
    strcpy(sa->sun_path, path);
    return 0;
}

static int serve(const char *path, const char *state)
{
    struct sockaddr_un sa;
    elk_fence_file_t ff;
    elk_fence_storage_t st;
    elk_fence_t fence;
    char open_by[64] = "";
    unsigned accepted = 0, refused = 0, overlaps = 0;
    int fd, rc;
    struct sigaction act;

    memset(&act, 0, sizeof act);
    act.sa_handler = on_term;
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    if (elk_fence_file_init(&ff, state, &st) != ELK_OK) {
        fprintf(stderr, "actuator: bad state path\n");
        return 1;
    }
    rc = elk_fence_init(&fence, &st);
    if (rc != ELK_OK) {
        fprintf(stderr, "actuator: %s\n", elk_err_message(elk_fence_storage_error(&fence)));
        return 1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(path);
    if (fd < 0 || unix_addr(&sa, path) != 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 16) != 0) {
        fprintf(stderr, "actuator: cannot listen on %s: %s\n", path, strerror(errno));
        return 1;
    }
    printf("actuator: valve ready on %s (highest accepted token so far: %" PRIu64 ")\n", path,
           elk_fence_highest(&fence));
    fflush(stdout);
    while (!stop) {
        char line[256], gw[64], cmd[64], reply[160];
        uint64_t token = 0;
        ssize_t n;
        int c = accept(fd, NULL, NULL);
        if (c < 0) {
            continue; /* EINTR on SIGTERM */
        }
        n = recv(c, line, sizeof line - 1, 0);
        if (n <= 0) {
            close(c);
            continue;
        }
        line[n] = '\0';
        line[strcspn(line, "\r\n")] = '\0';
        if (sscanf(line, "%63s %" SCNu64 " %63s", gw, &token, cmd) != 3) {
            snprintf(reply, sizeof reply, "REFUSED malformed command\n");
            refused++;
        } else {
            rc = elk_fence_check(&fence, token);
            if (rc == ELK_OK) {
                accepted++;
                if (strcmp(cmd, "open") == 0) {
                    if (open_by[0] != '\0' && strcmp(open_by, gw) != 0) {
                        overlaps++;
                        printf("actuator: OVERLAP: %s opens while %s still has it open\n", gw,
                               open_by);
                    }
                    snprintf(open_by, sizeof open_by, "%s", gw);
                } else if (strcmp(cmd, "close") == 0 && strcmp(open_by, gw) == 0) {
                    open_by[0] = '\0';
                }
                printf("actuator: ACCEPT  %-5s from %s with token %" PRIu64 "\n", cmd, gw, token);
                snprintf(reply, sizeof reply, "ACCEPTED\n");
            } else if (rc == ELK_E_FENCE_STALE) {
                refused++;
                printf("actuator: REFUSE  %-5s from %s with token %" PRIu64
                       ": stale, token %" PRIu64 " was already accepted\n",
                       cmd, gw, token, elk_fence_highest(&fence));
                snprintf(reply, sizeof reply, "REFUSED stale\n");
            } else {
                refused++;
                printf("actuator: REFUSE  %-5s from %s with token %" PRIu64 ": %s\n", cmd, gw,
                       token,
                       elk_err_message(rc == ELK_E_FENCE_STORAGE ? elk_fence_storage_error(&fence)
                                                                 : rc));
                snprintf(reply, sizeof reply, "REFUSED %s\n", elk_err_name(rc));
            }
        }
        fflush(stdout);
        (void)!send(c, reply, strlen(reply), MSG_NOSIGNAL);
        close(c);
    }
    close(fd);
    unlink(path);
    printf("actuator: stopped: %u commands accepted, %u refused, %u overlapping sessions, highest "
           "token %" PRIu64 "\n",
           accepted, refused, overlaps, elk_fence_highest(&fence));
    return overlaps == 0 ? 0 : 3;
}

static int send_cmd(const char *path, const char *gw, const char *token, const char *cmd)
{
    struct sockaddr_un sa;
    char line[256], reply[160];
    ssize_t n;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || unix_addr(&sa, path) != 0 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fprintf(stderr, "actuator send: cannot connect to %s: %s\n", path, strerror(errno));
        return 1;
    }
    snprintf(line, sizeof line, "%s %s %s\n", gw, token, cmd);
    if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0) {
        return 1;
    }
    n = recv(fd, reply, sizeof reply - 1, 0);
    close(fd);
    if (n <= 0) {
        return 1;
    }
    reply[n] = '\0';
    if (strncmp(reply, "ACCEPTED", 8) == 0) {
        return 0;
    }
    return strstr(reply, "stale") != NULL ? 65 : strstr(reply, "STORAGE") != NULL ? 66 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "serve") == 0) {
        return serve(argv[2], argv[3]);
    }
    if (argc == 6 && strcmp(argv[1], "send") == 0) {
        return send_cmd(argv[2], argv[3], argv[4], argv[5]);
    }
    fprintf(stderr, "usage: %s serve SOCKET STATEFILE | send SOCKET GATEWAY TOKEN COMMAND\n",
            argv[0]);
    return 64;
}
