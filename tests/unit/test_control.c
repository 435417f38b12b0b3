/* SPDX-License-Identifier: MIT */
/* firmware/ctl.c: control protocol request/reply parsers and the line assembler. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include "test_main.h"

#include "elkfw/ctl.h"

static int req(const char *line, elkfw_ctl_req_t *r, const char **why)
{
    return elkfw_ctl_parse_request(line, strlen(line), 40, r, why);
}

static void test_requests_ok(void **state)
{
    (void)state;
    elkfw_ctl_req_t r;
    const char *why;
    assert_int_equal(req("ACQUIRE valve-1 500", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_ACQUIRE);
    assert_string_equal(r.resource, "valve-1");
    assert_int_equal(r.wait_ms, 500);
    assert_int_equal(req("acquire   door/a\t10s\r", &r, &why), ELK_OK);
    assert_string_equal(r.resource, "door/a");
    assert_int_equal(r.wait_ms, 10000);
    assert_int_equal(req("ACQUIRE x", &r, &why), ELK_OK);
    assert_int_equal(r.wait_ms, 0);
    assert_int_equal(req("RELEASE x", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_RELEASE);
    assert_string_equal(r.resource, "x");
    assert_int_equal(req("STATUS", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_STATUS);
    assert_int_equal(req("STATUS JSON", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_STATUS_JSON);
    assert_int_equal(req("PING", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_PING);
    assert_int_equal(req("HELP", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_HELP);
    assert_int_equal(req("  QUIT  ", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_QUIT);
}

static void test_requests_bad(void **state)
{
    (void)state;
    elkfw_ctl_req_t r;
    const char *why = NULL;
    assert_int_equal(req("", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "empty request");
    assert_int_equal(req("   ", &r, &why), ELK_E_CTL_SYNTAX);
    assert_int_equal(req("FROB x", &r, &why), ELK_E_CTL_UNKNOWN);
    assert_string_equal(why, "commands: ACQUIRE RELEASE KEEPALIVE SUPERVISE STATUS PING HELP QUIT");
    assert_int_equal(req("ACQUIRE", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "usage: ACQUIRE <resource> [<wait>] [keepalive=<interval>]");
    assert_int_equal(req("RELEASE", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "usage: RELEASE <resource>");
    assert_int_equal(req("ACQUIRE x 10x", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "wait must be a duration: milliseconds, or e.g. 500ms or 10s");
    assert_int_equal(req("ACQUIRE x 10 extra", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "unexpected extra words after the command");
    assert_int_equal(r.cmd, 0); /* nothing half-filled on error */
    assert_int_equal(req("STATUS XML", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "usage: STATUS [JSON|METRICS]");
    assert_int_equal(req("STATUS METRICS", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_STATUS_METRICS);
    assert_int_equal(req("PING x", &r, &why), ELK_E_CTL_SYNTAX);
    assert_int_equal(req("ACQUIRE a{b}", &r, &why), ELK_E_NAME_INVALID);
    assert_string_equal(why,
                        "resource name may hold only letters, digits and . _ - : / @ (a "
                        "semaphore's permit: NAME#k)");
    /* a permit's name passes; '#' alone, at the start or with no number does not */
    assert_int_equal(req("RELEASE pumps#2", &r, &why), ELK_OK);
    assert_int_equal(req("RELEASE pumps#", &r, &why), ELK_E_NAME_INVALID);
    assert_int_equal(req("RELEASE #2", &r, &why), ELK_E_NAME_INVALID);
    assert_int_equal(req("RELEASE pumps#x", &r, &why), ELK_E_NAME_INVALID);
    assert_int_equal(req("ACQUIRE caf\xc3\xa9", &r, &why), ELK_E_NAME_INVALID);
    assert_int_equal(req("ACQUIRE 0123456789012345678901234567890123456789X", &r, &why),
                     ELK_E_NAME_TOO_LONG);
    assert_string_equal(why,
                        "resource name too long for CONFIG_ELK_MAX_KEY_LEN and the key prefix");
    assert_int_equal(req("ACQUIRE 0123456789012345678901234567890123456789", &r, &why), ELK_OK);
    {
        static const char nul[] = "ACQUIRE a\0b";
        assert_int_equal(elkfw_ctl_parse_request(nul, sizeof nul - 1, 40, &r, &why),
                         ELK_E_CTL_SYNTAX);
        assert_string_equal(why, "control characters in the request");
    }
    {
        char big[ELK_CTL_LINE_MAX + 8];
        memset(big, 'A', sizeof big);
        assert_int_equal(elkfw_ctl_parse_request(big, sizeof big, 40, &r, &why),
                         ELK_E_CTL_TOO_LONG);
    }
    assert_int_equal(elkfw_ctl_parse_request(NULL, 0, 40, &r, &why), ELK_E_CTL_SYNTAX);
    assert_int_equal(elkfw_ctl_parse_request("PING", 4, 40, &r, NULL), ELK_OK);
}

/* Issue 20: ACQUIRE ... keepalive=<interval> and KEEPALIVE <resource>. */
static void test_keepalive_requests(void **state)
{
    (void)state;
    elkfw_ctl_req_t r;
    const char *why = NULL;
    assert_int_equal(req("ACQUIRE valve-1 5s keepalive=2000", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_ACQUIRE);
    assert_string_equal(r.resource, "valve-1");
    assert_int_equal(r.wait_ms, 5000);
    assert_int_equal(r.keepalive_ms, 2000);
    assert_int_equal(req("acquire valve-1 0 KEEPALIVE=3s", &r, &why), ELK_OK);
    assert_int_equal(r.wait_ms, 0);
    assert_int_equal(r.keepalive_ms, 3000);
    /* the wait may be left out; keepalive=0 means the resource's own setting */
    assert_int_equal(req("ACQUIRE valve-1 keepalive=500ms", &r, &why), ELK_OK);
    assert_int_equal(r.wait_ms, 0);
    assert_int_equal(r.keepalive_ms, 500);
    assert_int_equal(req("ACQUIRE valve-1 10 keepalive=0", &r, &why), ELK_OK);
    assert_int_equal(r.keepalive_ms, 0);
    assert_int_equal(req("ACQUIRE valve-1 10", &r, &why), ELK_OK);
    assert_int_equal(r.keepalive_ms, 0);

    assert_int_equal(req("ACQUIRE valve-1 10 keepalive=", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "keepalive must be a duration: keepalive=<ms>, or e.g. keepalive=2s");
    assert_int_equal(req("ACQUIRE valve-1 10 keepalive=2x", &r, &why), ELK_E_CTL_SYNTAX);
    assert_int_equal(req("ACQUIRE valve-1 10 keepalive=99999999999", &r, &why), ELK_E_CTL_SYNTAX);
    assert_int_equal(req("ACQUIRE valve-1 10 heartbeat=1", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "usage: ACQUIRE <resource> [<wait>] [keepalive=<interval>]");
    assert_int_equal(req("ACQUIRE valve-1 10 keepalive=1 keepalive=2", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "unexpected extra words after the command");
    assert_int_equal(r.cmd, 0);
    assert_int_equal(r.keepalive_ms, 0); /* nothing half-filled on error */
    assert_int_equal(req("ACQUIRE valve-1 keepalive=1 10", &r, &why), ELK_E_CTL_SYNTAX);
    assert_int_equal(req("ACQUIRE valve-1 10 20", &r, &why), ELK_E_CTL_SYNTAX);

    assert_int_equal(req("KEEPALIVE valve-1", &r, &why), ELK_OK);
    assert_int_equal(r.cmd, ELKFW_CTL_KEEPALIVE);
    assert_string_equal(r.resource, "valve-1");
    assert_int_equal(req("keepalive valve-1\r", &r, &why), ELK_OK);
    assert_int_equal(req("KEEPALIVE", &r, &why), ELK_E_CTL_SYNTAX);
    assert_string_equal(why, "usage: KEEPALIVE <resource>");
    assert_int_equal(req("KEEPALIVE valve-1 10", &r, &why), ELK_E_CTL_SYNTAX);
    assert_int_equal(req("KEEPALIVE a{b}", &r, &why), ELK_E_NAME_INVALID);
}

/* Issue 20: EVENT SUSPECT / RECOVERED, RENEW_STOPPED's cause, OK KEEPALIVE. */
static void test_suspect_replies(void **state)
{
    (void)state;
    elkfw_ctl_msg_t m;
    assert_int_equal(
        elkfw_ctl_parse_reply("EVENT SUSPECT valve-1 4200 ELK_E_FLEET_UNAVAILABLE",
                              strlen("EVENT SUSPECT valve-1 4200 ELK_E_FLEET_UNAVAILABLE"), &m),
        ELK_OK);
    assert_int_equal(m.kind, ELKFW_MSG_EVENT);
    assert_string_equal(m.word, "SUSPECT");
    assert_string_equal(m.resource, "valve-1");
    assert_int_equal(m.deadline_ms, 4200);
    assert_string_equal(m.code, "ELK_E_FLEET_UNAVAILABLE");
    /* newer fields as key=value words are skipped */
    assert_int_equal(elkfw_ctl_parse_reply("EVENT SUSPECT v 1 ELK_E_LOCK_LOST x=1",
                                           strlen("EVENT SUSPECT v 1 ELK_E_LOCK_LOST x=1"), &m),
                     ELK_OK);
    assert_int_equal(elkfw_ctl_parse_reply("EVENT SUSPECT v 1", strlen("EVENT SUSPECT v 1"), &m),
                     ELK_E_CTL_SYNTAX);
    assert_int_equal(elkfw_ctl_parse_reply("EVENT SUSPECT v ELK_E_LOCK_LOST",
                                           strlen("EVENT SUSPECT v ELK_E_LOCK_LOST"), &m),
                     ELK_E_CTL_SYNTAX);
    assert_int_equal(elkfw_ctl_parse_reply("EVENT SUSPECT v 1 ELK_E_LOCK_LOST junk",
                                           strlen("EVENT SUSPECT v 1 ELK_E_LOCK_LOST junk"), &m),
                     ELK_E_CTL_SYNTAX);
    /* RECOVERED has RENEWED's shape */
    {
        static const char l[] =
            "EVENT RECOVERED valve-1 17 8801 1000 deadline_boottime_ms=91239801";
        assert_int_equal(elkfw_ctl_parse_reply(l, sizeof l - 1, &m), ELK_OK);
        assert_string_equal(m.word, "RECOVERED");
        assert_string_equal(m.resource, "valve-1");
        assert_int_equal(m.token, 17);
        assert_int_equal(m.deadline_ms, 8801);
        assert_int_equal(m.stop_margin_ms, 1000);
        assert_true(m.deadline_boottime_ms == 91239801u);
    }
    assert_int_equal(elkfw_ctl_parse_reply("EVENT RECOVERED valve-1 17",
                                           strlen("EVENT RECOVERED valve-1 17"), &m),
                     ELK_E_CTL_SYNTAX);
    {
        static const char l[] = "EVENT RENEW_STOPPED valve-1 ELK_E_KEEPALIVE_MISSED";
        assert_int_equal(elkfw_ctl_parse_reply(l, sizeof l - 1, &m), ELK_OK);
        assert_string_equal(m.word, "RENEW_STOPPED");
        assert_string_equal(m.code, "ELK_E_KEEPALIVE_MISSED");
        assert_int_equal(elkfw_err_from_name(m.code), ELK_E_KEEPALIVE_MISSED);
    }
    assert_int_equal(
        elkfw_ctl_parse_reply("OK KEEPALIVE valve-1", strlen("OK KEEPALIVE valve-1"), &m), ELK_OK);
    assert_int_equal(m.kind, ELKFW_MSG_OK);
    assert_string_equal(m.word, "KEEPALIVE");
    assert_string_equal(m.resource, "valve-1");
    assert_int_equal(elkfw_ctl_parse_reply("OK KEEPALIVE", strlen("OK KEEPALIVE"), &m),
                     ELK_E_CTL_SYNTAX);
}

static int rep(const char *line, elkfw_ctl_msg_t *m)
{
    return elkfw_ctl_parse_reply(line, strlen(line), m);
}

static void test_replies(void **state)
{
    (void)state;
    elkfw_ctl_msg_t m;
    assert_int_equal(rep("OK ACQUIRED valve-1 42 9480", &m), ELK_OK);
    assert_int_equal(m.kind, ELKFW_MSG_OK);
    assert_string_equal(m.word, "ACQUIRED");
    assert_string_equal(m.resource, "valve-1");
    assert_int_equal(m.token, 42);
    assert_int_equal(m.deadline_ms, 9480);
    assert_int_equal(rep("EVENT RENEWED valve-1 42 9990\r", &m), ELK_OK);
    assert_int_equal(m.kind, ELKFW_MSG_EVENT);
    assert_string_equal(m.word, "RENEWED");
    assert_int_equal(m.deadline_ms, 9990);
    assert_int_equal(rep("EVENT LOST valve-1 ELK_E_LOCK_LOST", &m), ELK_OK);
    assert_string_equal(m.word, "LOST");
    assert_string_equal(m.code, "ELK_E_LOCK_LOST");
    assert_int_equal(rep("OK RELEASED valve-1", &m), ELK_OK);
    assert_string_equal(m.resource, "valve-1");
    assert_int_equal(rep("EVENT SHUTDOWN", &m), ELK_OK);
    assert_string_equal(m.word, "SHUTDOWN");
    assert_int_equal(rep("OK STATUS 3", &m), ELK_OK);
    assert_int_equal(m.count, 3);
    assert_int_equal(rep("OK JSON {\"a\": 1}", &m), ELK_OK);
    assert_int_equal(m.text_len, 8);
    assert_memory_equal(m.text, "{\"a\": 1}", 8);
    assert_int_equal(rep("ERR ELK_E_LOCK_BUSY lock held by another holder", &m), ELK_OK);
    assert_int_equal(m.kind, ELKFW_MSG_ERR);
    assert_string_equal(m.code, "ELK_E_LOCK_BUSY");
    assert_int_equal(m.text_len, strlen("lock held by another holder"));
    assert_int_equal(elkfw_err_from_name(m.code), ELK_E_LOCK_BUSY);
    assert_int_equal(elkfw_err_from_name("ELK_E_CTL_SYNTAX"), ELK_E_CTL_SYNTAX);
    assert_int_equal(elkfw_err_from_name("NOPE"), ELK_E_INTERNAL);

    assert_int_equal(rep("", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("HELLO", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("ERR", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 x 1", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 1", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 1 99999999999", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 1 2 3", &m), ELK_OK);
    assert_int_equal(m.stop_margin_ms, 3);
    assert_int_equal(rep("OK ACQUIRED valve-1 1 2 3 4", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 1 2 x", &m), ELK_E_CTL_SYNTAX);
    /* the absolute deadline (CLOCK_BOOTTIME ms) as an optional key=value word */
    assert_int_equal(rep("OK ACQUIRED valve-1 1 2 3", &m), ELK_OK);
    assert_int_equal(m.deadline_boottime_ms, 0);
    assert_int_equal(rep("OK ACQUIRED valve-1 7 1500 300 deadline_boottime_ms=123456789", &m),
                     ELK_OK);
    assert_int_equal(m.token, 7);
    assert_int_equal(m.deadline_ms, 1500);
    assert_int_equal(m.stop_margin_ms, 300);
    assert_true(m.deadline_boottime_ms == 123456789u);
    assert_int_equal(rep("EVENT RENEWED valve-1 7 1500 300 deadline_boottime_ms=99 future=x", &m),
                     ELK_OK);
    assert_true(m.deadline_boottime_ms == 99u);
    assert_int_equal(rep("OK ACQUIRED valve-1 7 1500 300 future=1 deadline_boottime_ms=5", &m),
                     ELK_OK);
    assert_true(m.deadline_boottime_ms == 5u);
    assert_int_equal(rep("OK ACQUIRED valve-1 7 1500 300 deadline_boottime_ms=", &m),
                     ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 7 1500 300 deadline_boottime_ms=0", &m),
                     ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 7 1500 300 deadline_boottime_ms=1x", &m),
                     ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 7 1500 300 =5", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 7 1500 deadline_boottime_ms=5", &m),
                     ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("EVENT LOST valve-1 ELK_E_LOCK_LOST 500", &m), ELK_OK);
    assert_int_equal(m.stop_margin_ms, 500);
    assert_int_equal(rep("EVENT LOST valve-1 ELK_E_LOCK_LOST 5x", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("EVENT LOST valve-1 ELK_E_LOCK_LOST 5 6", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED valve-1 99999999999999999999 2", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK ACQUIRED a{b} 1 2", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK RELEASED", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK STATUS many", &m), ELK_E_CTL_SYNTAX);
    assert_int_equal(rep("OK WORDWAYTOOLONGFORTHEBUFFER", &m), ELK_E_CTL_SYNTAX);
}

static void test_linebuf(void **state)
{
    (void)state;
    char storage[16];
    elkfw_linebuf_t lb;
    const char *line;
    size_t len, avail;
    char *sp;
    elkfw_linebuf_init(&lb, storage, sizeof storage);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), 0);
    sp = elkfw_linebuf_space(&lb, &avail);
    assert_int_equal(avail, 16);
    memcpy(sp, "PING\nSTA", 8);
    elkfw_linebuf_commit(&lb, 8);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), 1);
    assert_int_equal(len, 4);
    assert_memory_equal(line, "PING", 4);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), 0);
    sp = elkfw_linebuf_space(&lb, &avail);
    assert_int_equal(avail, 13); /* "STA" kept at the front */
    memcpy(sp, "TUS\n", 4);
    elkfw_linebuf_commit(&lb, 4);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), 1);
    assert_int_equal(len, 6);
    assert_memory_equal(line, "STATUS", 6);
    /* a line longer than the buffer: reported once, skipped to its newline */
    sp = elkfw_linebuf_space(&lb, &avail);
    memset(sp, 'x', avail);
    elkfw_linebuf_commit(&lb, avail);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), ELK_E_CTL_TOO_LONG);
    sp = elkfw_linebuf_space(&lb, &avail);
    memcpy(sp, "xxxx\nQUIT\n", 10);
    elkfw_linebuf_commit(&lb, 10);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), 1);
    assert_int_equal(len, 4);
    assert_memory_equal(line, "QUIT", 4);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), 0);
    /* commit beyond the space is clamped */
    sp = elkfw_linebuf_space(&lb, &avail);
    elkfw_linebuf_commit(&lb, avail + 100);
    assert_int_equal(lb.len, lb.cap);
}

/* The look-ahead behind an unanswered ACQUIRE: only complete, valid lines not yet handed
 * out count, and the tail of an overlong line is no request. */
static void test_linebuf_has_request(void **state)
{
    (void)state;
    char storage[64];
    elkfw_linebuf_t lb;
    const char *line;
    size_t len, avail;
    char *sp;
    elkfw_linebuf_init(&lb, storage, sizeof storage);
    sp = elkfw_linebuf_space(&lb, &avail);
    memcpy(sp, "ACQUIRE v1\nPING\nrelease v1\nRELEASE v2", 38);
    elkfw_linebuf_commit(&lb, 38);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), 1); /* the ACQUIRE, handed out */
    assert_true(elkfw_linebuf_has_request(&lb, ELKFW_CTL_RELEASE, "v1", 40));
    assert_false(elkfw_linebuf_has_request(&lb, ELKFW_CTL_RELEASE, "v2", 40)); /* no newline yet */
    assert_false(
        elkfw_linebuf_has_request(&lb, ELKFW_CTL_ACQUIRE, "v1", 40)); /* handed out already */
    assert_false(elkfw_linebuf_has_request(&lb, ELKFW_CTL_RELEASE, "v1x", 40));
    /* an overlong line whose tail reads like a RELEASE */
    elkfw_linebuf_init(&lb, storage, sizeof storage);
    sp = elkfw_linebuf_space(&lb, &avail);
    memset(sp, 'A', avail);
    elkfw_linebuf_commit(&lb, avail);
    assert_int_equal(elkfw_linebuf_next(&lb, &line, &len), ELK_E_CTL_TOO_LONG);
    sp = elkfw_linebuf_space(&lb, &avail);
    memcpy(sp, "RELEASE v1\n", 11); /* the tail of the long line, then nothing */
    elkfw_linebuf_commit(&lb, 11);
    assert_false(elkfw_linebuf_has_request(&lb, ELKFW_CTL_RELEASE, "v1", 40));
    sp = elkfw_linebuf_space(&lb, &avail);
    memcpy(sp, "RELEASE v1\n", 11);
    elkfw_linebuf_commit(&lb, 11);
    assert_true(elkfw_linebuf_has_request(&lb, ELKFW_CTL_RELEASE, "v1", 40));
}

int main(void)
{
    return ELK_RUN_TESTS(test_requests_ok, test_requests_bad, test_replies, test_keepalive_requests,
                         test_suspect_replies, test_linebuf, test_linebuf_has_request);
}
