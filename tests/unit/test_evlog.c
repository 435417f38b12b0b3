/* SPDX-License-Identifier: MIT */
/* The lease event record: record format, parse, the ring file (firmware/evlog.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/evlog.h"

static elkfw_event_t sample(elkfw_ev_kind_t kind, uint64_t t, const char *res, uint64_t token)
{
    elkfw_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.t_ms = t;
    ev.token = token;
    ev.uid = 1000;
    ev.pid = 4242;
    snprintf(ev.gateway, sizeof ev.gateway, "gw-a");
    snprintf(ev.resource, sizeof ev.resource, "%s", res);
    snprintf(ev.cmd, sizeof ev.cmd, "open-valve.sh");
    return ev;
}

static void test_format_parse_round_trip(void **state)
{
    (void)state;
    char line[ELKFW_EVLOG_RECORD];
    elkfw_event_t in = sample(ELKFW_EV_LOST, 1795000000123u, "valve-1", 1795000000000999u), out;
    in.seq = 17;
    in.deadline_ms = 1795000009000u;
    snprintf(in.cause, sizeof in.cause, "ELK_E_LOCK_LOST");
    size_t n = elkfw_event_format(&in, line, sizeof line);
    assert_true(n > 0 && n < ELKFW_EVLOG_RECORD);
    assert_true(elkfw_event_parse(line, n, &out));
    assert_int_equal(out.seq, 17);
    assert_int_equal(out.t_ms, in.t_ms);
    assert_int_equal(out.kind, ELKFW_EV_LOST);
    assert_int_equal(out.token, in.token);
    assert_int_equal(out.deadline_ms, in.deadline_ms);
    assert_int_equal(out.uid, 1000);
    assert_int_equal(out.pid, 4242);
    assert_string_equal(out.gateway, "gw-a");
    assert_string_equal(out.resource, "valve-1");
    assert_string_equal(out.cmd, "open-valve.sh");
    assert_string_equal(out.cause, "ELK_E_LOCK_LOST");
}

/* The longest texts still fit one record, and hostile characters cannot break the line. */
static void test_long_and_hostile_texts(void **state)
{
    (void)state;
    char line[ELKFW_EVLOG_RECORD];
    elkfw_event_t in = sample(ELKFW_EV_GRANT, UINT64_MAX / 2, "r", UINT64_MAX), out;
    memset(in.gateway, 'g', sizeof in.gateway - 1);
    memset(in.resource, 'r', sizeof in.resource - 1);
    memset(in.cause, 'c', sizeof in.cause - 1);
    snprintf(in.cmd, sizeof in.cmd, "evil\"}\n{\\x");
    in.seq = UINT64_MAX;
    in.deadline_ms = UINT64_MAX;
    in.uid = INT64_MIN + 1;
    in.pid = INT64_MAX;
    size_t n = elkfw_event_format(&in, line, sizeof line);
    assert_true(n > 0 && n <= ELKFW_EVLOG_RECORD - 1);
    assert_null(memchr(line, '\n', n));
    assert_true(elkfw_event_parse(line, n, &out));
    assert_string_equal(out.cmd, "evil?}?{?x");
    assert_int_equal(out.token, UINT64_MAX);
    assert_int_equal(out.uid, INT64_MIN + 1);
}

static void test_parse_rejects(void **state)
{
    (void)state;
    elkfw_event_t ev;
    const char *bad[] = {
        "",
        "                ",
        "{\"schema\":1,\"seq\":1,\"t\":5,\"ev\":\"grant\"}",               /* no res */
        "{\"schema\":2,\"seq\":1,\"t\":5,\"ev\":\"grant\",\"res\":\"v\"}", /* schema */
        "{\"schema\":1,\"seq\":1,\"t\":5,\"ev\":\"dance\",\"res\":\"v\"}", /* kind */
        "{\"schema\":1,\"seq\":1,\"t\":5,\"ev\":\"grant\",\"res\":\"v\"",  /* torn */
        "{\"schema\":1,\"seq\":1,\"t\":99999999999999999999,\"ev\":\"grant\",\"res\":\"v\"}",
        "{\"schema\":1,\"seq\":1,\"t\":5,\"ev\":\"grant\",\"res\":\"v\"} trailing",
        "{\"schema\":1,\"seq\":-1,\"t\":5,\"ev\":\"grant\",\"res\":\"v\"}x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(elkfw_event_parse(bad[i], strlen(bad[i]), &ev));
    }
    const char *ok = "  {\"schema\":1,\"seq\":3,\"t\":5,\"ev\":\"wait\",\"res\":\"v\","
                     "\"future\":\"x\",\"n\":null}   \n";
    assert_true(elkfw_event_parse(ok, strlen(ok), &ev));
    assert_int_equal(ev.kind, ELKFW_EV_WAIT);
    assert_int_equal(ev.pid, -1);
}

static char *temp_path(void)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/elk-evlog-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    return path;
}

/* More events than slots: the newest remain, in order; a reopened file continues the
 * sequence. */
static void test_ring_wraps_and_continues(void **state)
{
    (void)state;
    const char *path = temp_path();
    elkfw_evlog_t log;
    elkfw_event_t got[64];
    assert_int_equal(elkfw_evlog_open(&log, path, 16u * ELKFW_EVLOG_RECORD), 0);
    for (uint64_t i = 1; i <= 40; i++) {
        elkfw_event_t ev = sample(ELKFW_EV_GRANT, 1000u + i, "valve-1", i);
        assert_true(elkfw_evlog_append(&log, &ev));
        assert_int_equal(ev.seq, i);
    }
    elkfw_evlog_close(&log);
    assert_int_equal(elkfw_evlog_open(&log, path, 16u * ELKFW_EVLOG_RECORD), 0);
    assert_int_equal(log.seq, 40);
    elkfw_event_t ev = sample(ELKFW_EV_RELEASE, 2000u, "valve-1", 40);
    assert_true(elkfw_evlog_append(&log, &ev));
    assert_int_equal(ev.seq, 41);
    long n = elkfw_evlog_read_fd(log.fd, got, 64);
    assert_int_equal(n, 16);
    for (long i = 0; i < n; i++) {
        assert_int_equal(got[i].seq, 26 + (uint64_t)i);
    }
    assert_int_equal(got[15].kind, ELKFW_EV_RELEASE);
    /* a smaller cap keeps the newest */
    n = elkfw_evlog_read_fd(log.fd, got, 4);
    assert_int_equal(n, 4);
    assert_int_equal(got[0].seq, 38);
    assert_int_equal(got[3].seq, 41);
    elkfw_evlog_close(&log);
    unlink(path);
}

/* A torn record (a power cut mid-write) is skipped; the others are read. */
static void test_torn_record_skipped(void **state)
{
    (void)state;
    const char *path = temp_path();
    elkfw_evlog_t log;
    elkfw_event_t got[32];
    assert_int_equal(elkfw_evlog_open(&log, path, 0), 0);
    for (uint64_t i = 1; i <= 5; i++) {
        elkfw_event_t ev = sample(ELKFW_EV_GRANT, i, "v", i);
        assert_true(elkfw_evlog_append(&log, &ev));
    }
    /* the power went in the middle of rewriting slot 3: its second half never arrived */
    char zeros[ELKFW_EVLOG_RECORD / 2];
    memset(zeros, 0, sizeof zeros);
    assert_int_equal(pwrite(log.fd, zeros, sizeof zeros, 2 * ELKFW_EVLOG_RECORD + 40),
                     (ssize_t)sizeof zeros);
    assert_int_equal(elkfw_evlog_read_fd(log.fd, got, 32), 4);
    assert_int_equal(got[1].seq, 2);
    assert_int_equal(got[2].seq, 4);
    elkfw_evlog_close(&log);
    assert_false(elkfw_evlog_append(&log, &got[0])); /* closed: ignored */
    unlink(path);
}

static void test_open_refuses_non_regular(void **state)
{
    (void)state;
    elkfw_evlog_t log;
    assert_true(elkfw_evlog_open(&log, "/tmp", 0) < 0);
    assert_int_equal(log.fd, -1);
    assert_true(elkfw_evlog_open(&log, "/nonexistent-dir/x", 0) < 0);
}

/* Text of two gateways is merged in time order, junk lines skipped. */
static void test_parse_text_merges(void **state)
{
    (void)state;
    char a[ELKFW_EVLOG_RECORD], b[ELKFW_EVLOG_RECORD], text[4 * ELKFW_EVLOG_RECORD];
    elkfw_event_t e1 = sample(ELKFW_EV_GRANT, 300, "v", 7),
                  e2 = sample(ELKFW_EV_GRANT, 100, "v", 3);
    e1.seq = 1;
    e2.seq = 1;
    snprintf(e2.gateway, sizeof e2.gateway, "gw-b");
    elkfw_event_format(&e1, a, sizeof a);
    elkfw_event_format(&e2, b, sizeof b);
    snprintf(text, sizeof text, "%s\nnot a record\n%s", a, b);
    elkfw_event_t out[4];
    assert_int_equal(elkfw_evlog_parse_text(text, strlen(text), out, 4), 2);
    assert_string_equal(out[0].gateway, "gw-b");
    assert_int_equal(out[1].token, 7);
}

int main(void)
{
    return ELK_RUN_TESTS(test_format_parse_round_trip, test_long_and_hostile_texts,
                         test_parse_rejects, test_ring_wraps_and_continues,
                         test_torn_record_skipped, test_open_refuses_non_regular,
                         test_parse_text_merges);
}
