/* SPDX-License-Identifier: MIT */
/* elk/agent_client.h against a real elkd (test_agent_client.sh starts it and the fleet).
 *
 *   agent_client_test SOCKET basic
 *       acquire, token and deadline, a renewal read, errors by code, release
 *   agent_client_test SOCKET lose MARKFILE
 *       acquire, write the token to MARKFILE, poll until the lease is lost (the script
 *       stops the fleet once MARKFILE exists); print "lost <CODE>" and the token
 * Exit 0 when every check held. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elk/agent_client.h"
#include "elk/err.h"
#include "elk/port_posix.h"

static int fails;

#define CHECK(what, cond)                                                                          \
    do {                                                                                           \
        if (cond) {                                                                                \
            printf("ok: %s\n", what);                                                              \
        } else {                                                                                   \
            printf("FAIL: %s (line %d)\n", what, __LINE__);                                        \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_RC(what, want, got)                                                                  \
    do {                                                                                           \
        int got_ = (got);                                                                          \
        if (got_ == (want)) {                                                                      \
            printf("ok: %s (%s)\n", what, elk_err_name(got_));                                     \
        } else {                                                                                   \
            printf("FAIL: %s: want %s, got %s (line %d)\n", what, elk_err_name(want),              \
                   elk_err_name(got_), __LINE__);                                                  \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static int basic(const char *sock)
{
    elk_agent_t a, b;
    uint64_t first, deadline, now;
    int rc = ELK_OK;

    CHECK_RC("connect to a missing socket", ELK_E_AGENT_UNREACHABLE,
             elk_agent_connect(&a, "/nonexistent/elkd.sock"));
    CHECK("its message names the path", strstr(a.message, "/nonexistent/elkd.sock") != NULL);
    CHECK_RC("connect", ELK_OK, elk_agent_connect(&a, sock));
    CHECK_RC("poll before any acquire", ELK_E_NOT_HELD, elk_agent_poll(&a, 0));
    CHECK_RC("unknown resource", ELK_E_RESOURCE_UNKNOWN,
             elk_agent_acquire(&a, "no-such-valve", 0, 30000));
    CHECK("elkd's text is kept", strstr(a.message, "no-such-valve") != NULL);
    CHECK_RC("a name with a space is not sent", ELK_E_NAME_INVALID,
             elk_agent_acquire(&a, "valve 1", 0, 30000));
    CHECK_RC("acquire valve-1 with a wait", ELK_OK, elk_agent_acquire(&a, "valve-1", 5000, 30000));
    now = elk_posix_now_ms();
    CHECK("token from 1", a.token >= 1);
    CHECK("deadline within one ttl (3 s) of now",
          a.deadline_ms > now && a.deadline_ms <= now + 3000);
    CHECK("stop margin 500 ms", a.stop_margin_ms == 500);
    CHECK("remaining_ms within the ttl",
          elk_agent_remaining_ms(&a) > 0 && elk_agent_remaining_ms(&a) <= 3000);
    CHECK_RC("acquire twice on one connection", ELK_E_ALREADY_HELD,
             elk_agent_acquire(&a, "valve-1", 0, 30000));

    CHECK_RC("second connection", ELK_OK, elk_agent_connect(&b, sock));
    CHECK_RC("busy for another client", ELK_E_LOCK_BUSY,
             elk_agent_acquire(&b, "valve-1", 0, 30000));
    CHECK_RC("wait times out for another client", ELK_E_LOCK_TIMEOUT,
             elk_agent_acquire(&b, "valve-1", 300, 30000));

    /* Held across renewals: poll until the deadline moved on (bounded, the event is what counts). */
    first = a.token;
    deadline = a.deadline_ms;
    for (now = elk_posix_now_ms(); a.deadline_ms == deadline && elk_posix_now_ms() < now + 60000;) {
        rc = elk_agent_poll(&a, 200);
        if (rc != ELK_OK) {
            break;
        }
    }
    CHECK_RC("held while polling", ELK_OK, rc);
    CHECK("a renewal moved the deadline on", a.deadline_ms > deadline);
    CHECK("same token after renewals", a.token == first);

    CHECK_RC("release", ELK_OK, elk_agent_release(&a, 30000));
    CHECK_RC("poll after release", ELK_E_NOT_HELD, elk_agent_poll(&a, 0));
    CHECK_RC("release twice", ELK_E_NOT_HELD, elk_agent_release(&a, 30000));
    CHECK_RC("the other client gets it now", ELK_OK, elk_agent_acquire(&b, "valve-1", 5000, 30000));
    CHECK("with a larger token", b.token > first);
    elk_agent_close(&b);
    CHECK_RC("closed: not held", ELK_E_CLOSED, elk_agent_poll(&b, 0));
    elk_agent_close(&b);
    CHECK_RC("acquire again on the first connection", ELK_OK,
             elk_agent_acquire(&a, "valve-1", 5000, 30000));
    CHECK("token larger again", a.token > first);
    elk_agent_close(&a);
    return fails == 0 ? 0 : 1;
}

static int lose(const char *sock, const char *mark)
{
    elk_agent_t a;
    FILE *f;
    uint64_t end;
    int rc = ELK_OK;
    CHECK_RC("connect", ELK_OK, elk_agent_connect(&a, sock));
    CHECK_RC("acquire", ELK_OK, elk_agent_acquire(&a, "valve-1", 5000, 30000));
    if (fails) {
        return 1;
    }
    f = fopen(mark, "w");
    if (f == NULL || fprintf(f, "%llu\n", (unsigned long long)a.token) < 0 || fclose(f) != 0) {
        perror(mark);
        return 1;
    }
    for (end = elk_posix_now_ms() + 60000; rc == ELK_OK && elk_posix_now_ms() < end;) {
        rc = elk_agent_poll(&a, 1000);
    }
    printf("lost %s at %llu, deadline %llu\n", elk_err_name(rc),
           (unsigned long long)elk_posix_now_ms(), (unsigned long long)a.deadline_ms);
    CHECK("the lease was lost within 60 s", rc != ELK_OK);
    CHECK("the cause is the fleet's", rc == ELK_E_FLEET_LOST || rc == ELK_E_LOCK_LOST);
    CHECK("no longer held", !a.held && elk_agent_remaining_ms(&a) == 0);
    CHECK_RC("release after the loss", ELK_E_NOT_HELD, elk_agent_release(&a, 1000));
    elk_agent_close(&a);
    return fails == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[2], "basic") == 0) {
        return basic(argv[1]);
    }
    if (argc >= 4 && strcmp(argv[2], "lose") == 0) {
        return lose(argv[1], argv[3]);
    }
    fprintf(stderr, "usage: %s SOCKET basic | SOCKET lose MARKFILE\n", argv[0]);
    return 2;
}
