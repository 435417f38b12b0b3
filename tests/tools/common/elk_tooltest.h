/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the tool tests (tests/tools) and the fault scenarios
 * (tests/faults): start a helper process and read the port(s) it prints, start a
 * throw-away redis-server on an ephemeral loopback port, talk to the fault
 * proxy's control port, and blocking loopback sockets with timeouts.
 * Everything is 127.0.0.1 only. Test code: the heap and blocking calls are fine.
 */
#ifndef ELK_TOOLTEST_H
#define ELK_TOOLTEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Start argv[0] (a path) with argv, read its first stdout line and parse up to
 * nports integers from it into ports[]. Returns the pid, or -1 (a message on stderr)
 * if it did not print a line within timeout_ms. The child's stdin is /dev/null. */
pid_t elk_tt_spawn(char *const argv[], int *ports, int nports, int timeout_ms);

/* SIGTERM, wait up to 2 s, then SIGKILL; always reaps. Returns the exit status as
 * waitpid reports it (or -1). Safe with pid <= 0 (does nothing). */
int elk_tt_stop(pid_t pid);

/* Wait for a child to exit by itself for up to timeout_ms; returns its wait status,
 * or -1 if it is still running (then it is left running). */
int elk_tt_wait(pid_t pid, int timeout_ms);

/* Start redis-server on a free loopback port (no persistence). Stores the port.
 * Returns the pid, or -1 if redis-server is missing or did not answer PING. */
pid_t elk_tt_redis_start(int *port);

/* Blocking TCP connect to 127.0.0.1:port with send/recv timeouts of timeout_ms.
 * Returns the fd or -1. */
int elk_tt_connect(int port, int timeout_ms);

/* Send all of buf (blocking). Returns 0 or -1. */
int elk_tt_send_all(int fd, const void *buf, size_t len);

/* Read until len bytes, EOF, error or timeout_ms of silence. Returns bytes read;
 * *eof (may be NULL) is set to 1 on an orderly close or reset, 0 otherwise. */
size_t elk_tt_recv_upto(int fd, void *buf, size_t len, int timeout_ms, int *eof);

/* One request/reply on the fault proxy control port: sends "cmd\n", reads one reply
 * line into reply (NUL-terminated). Returns 0 if the reply starts with "OK", -1 otherwise. */
int elk_tt_ctl(int ctl_port, const char *cmd, char *reply, size_t reply_cap);

/* Monotonic milliseconds (for lower-bound checks only, never upper bounds). */
uint64_t elk_tt_now_ms(void);

/* A free loopback port right now (bound to 0, then closed). */
int elk_tt_free_port(void);

#endif
