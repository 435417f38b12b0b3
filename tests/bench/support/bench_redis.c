/* redis-server processes for the benchmarks: see bench_redis.h. */
#include "bench_redis.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

uint16_t bench_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("bench: free port");
        exit(2);
    }
    close(fd);
    return ntohs(a.sin_port);
}

pid_t bench_redis_start(const char *dir, uint16_t port, bool tls, const char *log_path)
{
    char p[16], crt[256], key[256], ca[256];
    snprintf(p, sizeof p, "%u", port);
    snprintf(crt, sizeof crt, "%s/server.crt", dir);
    snprintf(key, sizeof key, "%s/server.key", dir);
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = log_path != NULL ? open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600)
                                  : open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        if (tls) {
            execlp("redis-server", "redis-server", "--port", "0", "--tls-port", p, "--tls-cert-file", crt,
                   "--tls-key-file", key, "--tls-ca-cert-file", ca, "--tls-auth-clients", "no", "--bind",
                   "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, (char *)NULL);
        } else {
            execlp("redis-server", "redis-server", "--port", p, "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", dir, (char *)NULL);
        }
        _exit(127);
    }
    return pid;
}

void bench_redis_stop_all(pid_t *pids, size_t count, char *dir)
{
    for (size_t i = 0; i < count; i++) {
        if (pids[i] > 0) {
            kill(pids[i], SIGTERM);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    }
    if (dir != NULL && dir[0] != '\0') {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) {
            fprintf(stderr, "bench: could not remove %s\n", dir);
        }
        dir[0] = '\0';
    }
}
