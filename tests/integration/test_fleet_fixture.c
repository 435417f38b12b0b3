/* SPDX-License-Identifier: MIT */
/* The fixture itself: several servers, auth, ACL users, extra args, kill/restart,
 * pause/resume, and that stop leaves nothing behind. Other suites build on these. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/port_posix.h"
#include "fleet.h"

#define TMO 5000u

/* Raw RESP over the posix transport: what a client that has not authenticated sees. */
static void raw_exchange(uint16_t port, const char *req, const char *expect_prefix)
{
    elk_posix_tcp_t tcp;
    elk_transport_t t;
    uint8_t buf[256];
    size_t len;
    elk_endpoint_t ep = {"127.0.0.1", port, NULL};
    assert_int_equal(elk_posix_tcp_init(&tcp, NULL, &t), ELK_OK);
    assert_int_equal(elk_tf_xport_connect(&t, &ep, TMO), 1);
    assert_int_equal(elk_tf_xport_send_all(&t, req, strlen(req), TMO), ELK_OK);
    assert_int_equal(elk_tf_xport_recv_until(&t, buf, sizeof buf, "\r\n", TMO, &len), ELK_OK);
    if (strncmp((char *)buf, expect_prefix, strlen(expect_prefix)) != 0) {
        fail_msg("expected '%s...', got '%s'", expect_prefix, (char *)buf);
    }
    t.close(t.ctx);
}

/* Distinct ports, all on loopback, all running. */
static void check_ports(elk_tf_t *f)
{
    for (size_t i = 0; i < 3; i++) {
        assert_true(elk_tf_running(f, i));
        assert_int_not_equal(elk_tf_port(f, i), 0);
        for (size_t j = 0; j < i; j++) {
            assert_int_not_equal(elk_tf_port(f, i), elk_tf_port(f, j));
        }
        elk_endpoint_t ep = elk_tf_endpoint(f, i);
        assert_string_equal(ep.host, "127.0.0.1");
        assert_null(ep.server_name);
    }
}

/* The control channel is authenticated as the ACL user and sees the extra args. */
static void check_control(elk_tf_t *f)
{
    redisReply *r = elk_tf_cmd(f, 1, "ACL WHOAMI");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, "gateway");
    freeReplyObject(r);
    r = elk_tf_cmd(f, 1, "CONFIG GET maxmemory-policy");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2);
    assert_string_equal(r->element[1]->str, "noeviction");
    freeReplyObject(r);
    r = elk_tf_cmd(f, 2, "CONFIG GET save");
    assert_non_null(r);
    assert_string_equal(r->element[1]->str, "");
    freeReplyObject(r);
}

/* Over TCP: unauthenticated commands are refused; password and ACL user both work. */
static void check_auth(elk_tf_t *f)
{
    uint16_t p0 = elk_tf_port(f, 0);
    raw_exchange(p0, "PING\r\n", "-NOAUTH");
    raw_exchange(p0, "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n", "+OK");
    raw_exchange(p0, "*3\r\n$4\r\nAUTH\r\n$7\r\ngateway\r\n$7\r\ngw-pass\r\n", "+OK");
    raw_exchange(p0, "*3\r\n$4\r\nAUTH\r\n$7\r\ngateway\r\n$5\r\nwrong\r\n", "-WRONGPASS");
}

/* Kill loses data (no persistence); restart comes back on the same port. */
static void check_kill_restart(elk_tf_t *f)
{
    redisReply *r;
    r = elk_tf_cmd(f, 2, "SET k v");
    assert_non_null(r);
    freeReplyObject(r);
    pid_t old = f->servers[2].pid;
    assert_int_equal(elk_tf_kill(f, 2), 0);
    assert_false(elk_tf_running(f, 2));
    assert_int_equal(kill(old, 0), -1);
    assert_null(elk_tf_cmd(f, 2, "PING"));
    assert_int_equal(elk_tf_kill(f, 2), -1); /* not running */
    uint16_t port2 = elk_tf_port(f, 2);
    assert_int_equal(elk_tf_restart(f, 2), 0);
    assert_int_equal(elk_tf_port(f, 2), port2);
    r = elk_tf_cmd(f, 2, "EXISTS k");
    assert_non_null(r);
    assert_int_equal(r->integer, 0);
    freeReplyObject(r);
}

/* Orderly stop of one server. */
static void check_term(elk_tf_t *f)
{
    assert_int_equal(elk_tf_term(f, 0), 0);
    assert_false(elk_tf_running(f, 0));
    assert_int_equal(elk_tf_restart(f, 0), 0);
}

/* Pause / resume. */
static void check_pause(elk_tf_t *f)
{
    redisReply *r;
    assert_int_equal(elk_tf_pause(f, 1), 0);
    assert_true(elk_tf_running(f, 1));
    assert_int_equal(elk_tf_pause(f, 1), -1); /* already paused */
    assert_null(elk_tf_redis(f, 1));
    assert_int_equal(elk_tf_resume(f, 1), 0);
    assert_int_equal(elk_tf_resume(f, 1), -1);
    r = elk_tf_cmd(f, 1, "PING");
    assert_non_null(r);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(r);
}

/* Stop (with one server paused, which must not hang it) removes every process and the dir. */
static void check_stop(elk_tf_t *f)
{
    assert_int_equal(elk_tf_pause(f, 0), 0);
    pid_t pids[3];
    for (size_t i = 0; i < 3; i++) {
        pids[i] = f->servers[i].pid;
    }
    char dir[ELK_TF_DIR_MAX];
    memcpy(dir, f->dir, sizeof dir);
    elk_tf_stop(f);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(kill(pids[i], 0), -1);
        assert_int_equal(errno, ESRCH);
        assert_false(elk_tf_running(f, i));
    }
    struct stat st;
    if (getenv("ELK_TF_KEEP") == NULL) {
        assert_int_equal(stat(dir, &st), -1);
    }
    elk_tf_stop(f); /* twice is harmless */
    assert_int_equal(elk_tf_kill(f, 0), -1);
}

static void test_three_servers_auth_and_acl(void **state)
{
    (void)state;
    static elk_tf_t f;
    static const char *const extra[] = {"--maxmemory-policy", "noeviction", "--appendfsync",
                                        "always", NULL};
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    o.count = 3;
    o.requirepass = "s3cret";
    o.acl_user = "gateway";
    o.acl_password = "gw-pass";
    o.extra_args = extra;
    assert_int_equal(elk_tf_start(&f, &o), 0);
    assert_int_equal(elk_tf_count(&f), 3);
    check_ports(&f);
    check_control(&f);
    check_auth(&f);
    check_kill_restart(&f);
    check_term(&f);
    check_pause(&f);
    check_stop(&f);
}

static void test_bad_options(void **state)
{
    (void)state;
    static elk_tf_t f;
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    o.count = 0;
    assert_int_equal(elk_tf_start(&f, &o), -1);
    o.count = ELK_TF_MAX_SERVERS + 1;
    assert_int_equal(elk_tf_start(&f, &o), -1);
    /* A server that cannot start (bad option) fails start cleanly, nothing left running. */
    static const char *const bad[] = {"--no-such-option", "1", NULL};
    o.count = 2;
    o.extra_args = bad;
    assert_int_equal(elk_tf_start(&f, &o), -1);
    assert_false(elk_tf_running(&f, 0));
    assert_false(elk_tf_running(&f, 1));
}

static void test_tls_fleet_and_certs(void **state)
{
    (void)state;
    const elk_tf_certs_t *c = elk_tf_certs();
    assert_non_null(c);
    const char *files[] = {c->ca_crt,      c->server_crt,      c->server_key,   c->wronghost_crt,
                           c->expired_crt, c->other_ca_crt,    c->othersrv_crt, c->client_crt,
                           c->client_key,  c->other_client_crt};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        static uint8_t buf[16384];
        size_t len;
        assert_int_equal(elk_tf_read_file(files[i], buf, sizeof buf, &len), 0);
        assert_non_null(strstr((char *)buf, "-----BEGIN"));
    }
    assert_ptr_equal(elk_tf_certs(), c); /* generated once per process */

    static elk_tf_t f;
    elk_tf_options_t o;
    elk_tf_options_defaults(&o);
    o.tls = true;
    o.count = 2;
    assert_int_equal(elk_tf_start(&f, &o), 0);
    elk_endpoint_t ep = elk_tf_endpoint(&f, 1);
    assert_string_equal(ep.server_name, "localhost");
    /* TLS servers are still reachable for inspection over the unix socket. */
    redisReply *r = elk_tf_cmd(&f, 1, "CONFIG GET tls-port");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(atoi(r->element[1]->str), elk_tf_port(&f, 1));
    freeReplyObject(r);
    r = elk_tf_cmd(&f, 1, "CONFIG GET port");
    assert_non_null(r);
    assert_string_equal(r->element[1]->str, "0");
    freeReplyObject(r);
    elk_tf_stop(&f);
}

int main(void)
{
    return ELK_RUN_GROUP("integration.fleet_fixture", NULL, NULL, test_three_servers_auth_and_acl,
                         test_bad_options, test_tls_fleet_and_certs);
}
