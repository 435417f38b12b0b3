/* SPDX-License-Identifier: MIT */
/* firmware/conf.c: the elkd config parser, every value type and every error message. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include "test_main.h"

#include "elk/platform.h"
#include "elkfw/access.h"
#include "elkfw/acl.h"
#include "elkfw/conf.h"
#include "elkfw/preflight.h"

#define NODE1 "[node a]\nhost = 127.0.0.1\n"
#define RES1 "[resource valve-1]\n"
#define MIN NODE1 RES1

static elkfw_conf_t conf; /* large: keep it off the stack */

static int parse(const char *text, char *err)
{
    return elkfw_conf_parse(&conf, "elkd.conf", text, strlen(text), err, ELKFW_ERR_MAX);
}

/* The first problem of text is message (the parser goes on and adds any others, one a line). */
static void expect_error(const char *text, const char *message)
{
    char err[ELKFW_ERR_MAX];
    int rc = parse(text, err);
    size_t n = strlen(message);
    if (rc != ELK_E_CONFIG || strncmp(err, message, n) != 0 || (err[n] != '\0' && err[n] != '\n')) {
        print_error("config:\n%s\nexpected: %s\ngot (%d): %s\n", text, message, rc, err);
        fail();
    }
}

static void test_minimal_defaults(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX];
    assert_int_equal(parse(MIN, err), ELK_OK);
    assert_string_equal(err, "");
    assert_int_equal(conf.mode, ELKFW_MODE_SINGLE);
    assert_int_equal(conf.n_nodes, 1);
    assert_string_equal(conf.nodes[0].name, "a");
    assert_string_equal(conf.nodes[0].host, "127.0.0.1");
    assert_int_equal(conf.nodes[0].port, 6379);
    assert_int_equal(conf.nodes[0].tls.on, 0);
    assert_int_equal(conf.nodes[0].connect_timeout_ms, 2000);
    assert_int_equal(conf.nodes[0].request_timeout_ms, 1000);
    assert_int_equal(conf.n_resources, 1);
    assert_string_equal(conf.resources[0].name, "valve-1");
    assert_int_equal(conf.resources[0].ttl_ms, CONFIG_ELK_DEFAULT_TTL_MS);
    assert_true(conf.resources[0].fencing);
    assert_int_equal(conf.resources[0].min_validity_ms, CONFIG_ELK_DEFAULT_TTL_MS / 5);
    assert_string_equal(conf.key_prefix, "elk:");
    assert_string_equal(conf.agent.socket_path, "/run/elkd/elkd.sock");
    assert_int_equal(conf.agent.log_level, ELK_LOG_INFO);
    assert_int_equal(conf.agent.safety_check, ELKFW_SAFETY_WARN);
}

static void test_full_file(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX];
    const char *text = "# a comment\n"
                       "; another\n"
                       "\n"
                       "[fleet]\n"
                       "mode = redlock\n"
                       "gateway_id = gw-7\n"
                       "key_prefix = plant1:\n"
                       "tls = on\n"
                       "ca = /etc/elk/ca.pem\n"
                       "cert = /etc/elk/client.pem\n"
                       "key = /etc/elk/client.key\n"
                       "connect_timeout = 3s\n"
                       "request_timeout = 250ms\n"
                       "drift_factor = 0.02\n"
                       "drift_fixed = 5\n"
                       "[node.1]\n"
                       "  host   =   10.0.0.1  \r\n"
                       "port = 6380\n"
                       "sni = redis1.example\n"
                       "user = elk\n"
                       "password = \" sp#ce \"\n"
                       "db = 3\n"
                       "[node 2]\n"
                       "host = 10.0.0.2\n"
                       "tls = off\n"
                       "request_timeout = 2s\n"
                       "[node 3]\n"
                       "host = 10.0.0.3\n"
                       "server_name = r3\n"
                       "ca = /other/ca.pem\n"
                       "[resource valve-1]\n"
                       "ttl = 30s\n"
                       "renew_fraction = 1/4\n"
                       "stop_margin = 2s\n"
                       "min_validity = 1s\n"
                       "max_hold = 1h\n"
                       "max_renewals = 100\n"
                       "fencing = off\n"
                       "wait_min = 10ms\n"
                       "wait_max = 1s\n"
                       "release_channel = yes\n"
                       "[resource door/a]\n"
                       "renew_fraction = 40%\n"
                       "[agent]\n"
                       "socket = /tmp/elkd.sock\n"
                       "log = syslog\n"
                       "log_level = debug\n"
                       "safety_check = refuse\n";
    assert_int_equal(parse(text, err), ELK_OK);
    assert_int_equal(conf.mode, ELKFW_MODE_REDLOCK);
    assert_string_equal(conf.gateway_id, "gw-7");
    assert_string_equal(conf.key_prefix, "plant1:");
    assert_int_equal(conf.drift_factor_ppm, 20000);
    assert_int_equal(conf.drift_fixed_ms, 5);
    assert_int_equal(conf.n_nodes, 3);
    assert_string_equal(conf.nodes[0].name, "1");
    assert_string_equal(conf.nodes[0].host, "10.0.0.1");
    assert_int_equal(conf.nodes[0].port, 6380);
    assert_int_equal(conf.nodes[0].tls.on, 1);
    assert_string_equal(conf.nodes[0].tls.ca, "/etc/elk/ca.pem"); /* inherited */
    assert_string_equal(conf.nodes[0].tls.cert, "/etc/elk/client.pem");
    assert_string_equal(conf.nodes[0].server_name, "redis1.example");
    assert_string_equal(conf.nodes[0].user, "elk");
    assert_string_equal(conf.nodes[0].password, " sp#ce ");
    assert_int_equal(conf.nodes[0].db, 3);
    assert_int_equal(conf.nodes[0].connect_timeout_ms, 3000);
    assert_int_equal(conf.nodes[0].request_timeout_ms, 250);
    assert_int_equal(conf.nodes[1].tls.on, 0);
    assert_int_equal(conf.nodes[1].request_timeout_ms, 2000);
    assert_string_equal(conf.nodes[2].tls.ca, "/other/ca.pem");
    assert_string_equal(conf.nodes[2].server_name, "r3");
    assert_int_equal(conf.n_resources, 2);
    const elkfw_resource_conf_t *r = elkfw_conf_resource(&conf, "valve-1", 7);
    assert_non_null(r);
    assert_int_equal(r->ttl_ms, 30000);
    assert_int_equal(r->renew_fraction_ppm, 250000);
    assert_int_equal(r->stop_margin_ms, 2000);
    assert_int_equal(r->min_validity_ms, 1000);
    assert_int_equal(r->max_hold_ms, 3600000);
    assert_int_equal(r->max_renewals, 100);
    assert_false(r->fencing);
    assert_int_equal(r->wait_min_ms, 10);
    assert_int_equal(r->wait_max_ms, 1000);
    assert_true(r->release_channel);
    r = elkfw_conf_resource(&conf, "door/a", 6);
    assert_non_null(r);
    assert_int_equal(r->renew_fraction_ppm, 400000);
    assert_null(elkfw_conf_resource(&conf, "door", 4));
    assert_string_equal(conf.agent.socket_path, "/tmp/elkd.sock");
    assert_int_equal(conf.agent.log_target, ELKFW_LOG_SYSLOG);
    assert_int_equal(conf.agent.log_level, ELK_LOG_DEBUG);
    assert_int_equal(conf.agent.safety_check, ELKFW_SAFETY_REFUSE);
}

static void test_durations(void **state)
{
    (void)state;
    uint32_t ms;
    assert_true(elkfw_parse_duration("10s", 3, &ms));
    assert_int_equal(ms, 10000);
    assert_true(elkfw_parse_duration("500ms", 5, &ms));
    assert_int_equal(ms, 500);
    assert_true(elkfw_parse_duration("750", 3, &ms));
    assert_int_equal(ms, 750);
    assert_true(elkfw_parse_duration("2m", 2, &ms));
    assert_int_equal(ms, 120000);
    assert_true(elkfw_parse_duration("1h", 2, &ms));
    assert_int_equal(ms, 3600000);
    assert_true(elkfw_parse_duration("4294967295", 10, &ms));
    assert_false(elkfw_parse_duration("4294967296", 10, &ms));
    assert_false(elkfw_parse_duration("4294968s", 8, &ms));
    assert_false(elkfw_parse_duration("10x", 3, &ms));
    assert_false(elkfw_parse_duration("s", 1, &ms));
    assert_false(elkfw_parse_duration("", 0, &ms));
    assert_false(elkfw_parse_duration("-5", 2, &ms));
    assert_false(elkfw_parse_duration("1.5s", 4, &ms));
    assert_false(elkfw_parse_duration("10 s", 4, &ms));
    assert_false(elkfw_parse_duration("10sec", 5, &ms));
}

static void test_names(void **state)
{
    (void)state;
    assert_true(elkfw_name_valid("valve-1", 7, 63));
    assert_true(elkfw_name_valid("a.b_c:d/e@f", 11, 63));
    assert_false(elkfw_name_valid("", 0, 63));
    assert_false(elkfw_name_valid("a b", 3, 63));
    assert_false(elkfw_name_valid("a{b}", 4, 63));
    assert_false(elkfw_name_valid("a\nb", 3, 63));
    assert_false(elkfw_name_valid("\xc3\xa9", 2, 63));
    assert_false(elkfw_name_valid("abcd", 4, 3));
}

/* Every message the parser can produce, exactly as a user sees it. */
static void test_error_messages_lines(void **state)
{
    (void)state;
    expect_error(MIN "[resource valve-2]\nttl = 10x\n",
                 "elkd.conf:5: key 'ttl' in [resource valve-2]: '10x' is not a duration (use e.g. "
                 "500ms or 10s)");
    expect_error(
        "host = x\n",
        "elkd.conf:1: key 'host' outside any section (start with [fleet], [node NAME], ...)");
    expect_error("[fleet\n",
                 "elkd.conf:1: section header is not closed: expected ']' at the end of the line");
    expect_error("[bogus]\n",
                 "elkd.conf:1: unknown section [bogus] (expected [fleet], [node NAME], [resource "
                 "NAME], [semaphore NAME] or [agent])");
    expect_error("[node]\n",
                 "elkd.conf:1: unknown section [node] (expected [fleet], [node NAME], [resource "
                 "NAME], [semaphore NAME] or [agent])");
    expect_error("[fleet]\n[fleet]\n",
                 "elkd.conf:2: section [fleet] appears twice (first on line 1)");
    expect_error("[agent]\n\n[agent]\n",
                 "elkd.conf:3: section [agent] appears twice (first on line 1)");
    expect_error(NODE1 "[node a]\n",
                 "elkd.conf:3: section [node a] appears twice (first on line 1)");
    expect_error(MIN "[resource valve-1]\n",
                 "elkd.conf:4: section [resource valve-1] appears twice (first on line 3)");
    expect_error("[node a b]\n",
                 "elkd.conf:1: node name 'a b' is not valid (1-63 bytes of letters, digits and . _ "
                 "- : / @)");
    expect_error("[resource a{b}]\n",
                 "elkd.conf:1: resource name 'a{b}' is not valid (1-63 bytes of letters, digits "
                 "and . _ - : / @; "
                 "the limit follows from CONFIG_ELK_MAX_KEY_LEN and key_prefix)");
    expect_error(
        "[fleet]\nfoo = 1\n",
        "elkd.conf:2: unknown key 'foo' in [fleet] (the keys of each section: elkd.conf(5))");
    expect_error(NODE1 "host = y\n",
                 "elkd.conf:3: key 'host' in [node a] is set twice (first on line 2)");
    expect_error("[fleet]\njust words\n",
                 "elkd.conf:2: 'just words' is not 'key = value' or a [section]");
    expect_error("[fleet]\n = x\n", "elkd.conf:2: missing key name before '='");
    expect_error("[fleet]\nmode = multi\n",
                 "elkd.conf:2: key 'mode' in [fleet]: 'multi' is not one of: single, redlock");
    expect_error("[agent]\nlog = file\n",
                 "elkd.conf:2: key 'log' in [agent]: 'file' is not one of: stderr, syslog");
    expect_error(
        "[agent]\nlog_level = loud\n",
        "elkd.conf:2: key 'log_level' in [agent]: 'loud' is not one of: error, warn, info, debug");
    expect_error(
        "[agent]\nsafety_check = maybe\n",
        "elkd.conf:2: key 'safety_check' in [agent]: 'maybe' is not one of: warn, refuse, off");
    expect_error(
        "[node a]\nport = 70000\n",
        "elkd.conf:2: key 'port' in [node a]: '70000' is not a whole number from 1 to 65535");
    expect_error("[node a]\nport = 0\n",
                 "elkd.conf:2: key 'port' in [node a]: '0' is not a whole number from 1 to 65535");
    expect_error("[node a]\ndb = x\n",
                 "elkd.conf:2: key 'db' in [node a]: 'x' is not a whole number from 0 to 65535");
    expect_error("[node a]\ntls = maybe\n",
                 "elkd.conf:2: key 'tls' in [node a]: 'maybe' is not on or off (use on/off, "
                 "yes/no, true/false, 1/0)");
    expect_error(
        "[resource r]\nttl = 50ms\n",
        "elkd.conf:2: key 'ttl' in [resource r]: 50ms is out of range (100ms to 86400000ms)");
    expect_error("[resource r]\nrenew_fraction = 1.5\n",
                 "elkd.conf:2: key 'renew_fraction' in [resource r]: '1.5' is not a fraction "
                 "between 0 and 1 "
                 "(use e.g. 0.33, 33% or 1/3)");
    expect_error("[resource r]\nfencing = nope\n",
                 "elkd.conf:2: key 'fencing' in [resource r]: 'nope' is not on or off (use on/off, "
                 "yes/no, true/false, 1/0)");
    expect_error("[fleet]\ngateway_id = gw 1\n",
                 "elkd.conf:2: key 'gateway_id' in [fleet]: 'gw 1' is not a valid id (letters, "
                 "digits and . _ - : / @)");
    expect_error(
        "[fleet]\ngateway_id = 0123456789012345678901234567890123\n",
        "elkd.conf:2: key 'gateway_id' in [fleet]: value is 34 bytes long; at most 32 allowed");
    {
        char text[600], msg[300];
        memset(text, 0, sizeof text);
        strcpy(text, "[agent]\nsocket = /");
        memset(text + strlen(text), 'x', 200);
        strcat(text, "\n");
        snprintf(
            msg, sizeof msg,
            "elkd.conf:2: key 'socket' in [agent]: value is 201 bytes long; at most 107 allowed");
        expect_error(text, msg);
    }
    {
        static const char nul[] = "[fleet]\nmode = si\0ngle\n";
        char err[ELKFW_ERR_MAX];
        assert_int_equal(elkfw_conf_parse(&conf, "elkd.conf", nul, sizeof nul - 1, err, sizeof err),
                         ELK_E_CONFIG);
        /* the first problem; the whole-file ones follow, one a line */
        assert_string_equal(strtok(err, "\n"),
                            "elkd.conf:2: line contains a NUL byte (is this a text file?)");
    }
}

static void test_error_messages_whole_file(void **state)
{
    (void)state;
    expect_error("", "elkd.conf: no [node NAME] section: the fleet needs at least one Redis node");
    expect_error(NODE1,
                 "elkd.conf: no [resource NAME] or [semaphore NAME] section: nothing to lock");
    expect_error(
        "[fleet]\nmode=single\n" NODE1 "[node b]\nhost=h\n" RES1,
        "elkd.conf: [fleet] mode = single takes exactly one [node], found 2 (use mode = redlock)");
    expect_error("[fleet]\nmode=redlock\n" NODE1 "[node b]\nhost=h\n" RES1,
                 "elkd.conf: [fleet] mode = redlock needs at least 3 independent nodes, found 2");
    expect_error("[fleet]\nkey_prefix = a{b\n" MIN,
                 "elkd.conf:2: key 'key_prefix' in [fleet]: 'a{b' must not contain braces, spaces "
                 "or control "
                 "bytes (the key is <prefix>{<resource>})");
    expect_error("[fleet]\nmode = single\nkey_prefix = \"a b\"\n" MIN,
                 "elkd.conf:3: key 'key_prefix' in [fleet]: 'a b' must not contain braces, spaces "
                 "or control "
                 "bytes (the key is <prefix>{<resource>})");
    expect_error("[node a]\nhost = redis 1.local\n" RES1,
                 "elkd.conf:2: key 'host' in [node a]: 'redis 1.local' is not a host name or "
                 "numeric address "
                 "(letters, digits and . - _ : %; no spaces or control bytes)");
    expect_error("[node a]\nport = 1\nhost = r\x01x\n" RES1,
                 "elkd.conf:3: key 'host' in [node a]: 'r?x' is not a host name or numeric address "
                 "(letters, digits and . - _ : %; no spaces or control bytes)");
    expect_error(
        "[node a]\nhost = \"10.0.0.1 \"\n" RES1,
        "elkd.conf:2: key 'host' in [node a]: '10.0.0.1 ' is not a host name or numeric address "
        "(letters, digits and . - _ : %; no spaces or control bytes)");
    expect_error("[node a]\nhost = a/b\n" RES1,
                 "elkd.conf:2: key 'host' in [node a]: 'a/b' is not a host name or numeric address "
                 "(letters, digits and . - _ : %; no spaces or control bytes)");
    expect_error("[node a]\nport=1\n" RES1, "elkd.conf:1: [node a]: key 'host' is required");
    expect_error(NODE1 "password = x\npassword_file = /p\n" RES1,
                 "elkd.conf:1: [node a]: set 'password' or 'password_file', not both");
    expect_error(NODE1 "tls = on\n" RES1,
                 "elkd.conf:1: [node a]: tls is on but no 'ca' is set (here or in [fleet])");
    expect_error(NODE1 "tls = on\nca = /ca\nserver_name = r1\ncert = /c\n" RES1,
                 "elkd.conf:1: [node a]: a client 'cert' needs its 'key' and the other way round");
    expect_error(
        NODE1 "[resource r]\nwait_min = 10ms\nttl = 1000ms\nstop_margin = 900ms\n",
        "elkd.conf:5: key 'ttl' in [resource r]: ttl 1000ms leaves no validity: drift 12ms + "
        "stop_margin 900ms + min_validity 200ms must be below it");
    expect_error(NODE1 "[resource r]\nfencing = on\nstop_margin = 9s\n",
                 "elkd.conf:5: key 'stop_margin' in [resource r]: ttl 10000ms leaves no validity: "
                 "drift 102ms + "
                 "stop_margin 9000ms + min_validity 2000ms must be below it");
    expect_error(NODE1 "[resource r]\nttl = 1s\nstop_margin=500ms\nrenew_fraction = 0.9\n",
                 "elkd.conf:3: [resource r]: renew_fraction makes renewal start after the local "
                 "deadline (488ms); lower it");
    expect_error(NODE1 "[resource r]\nrenew_fraction = 0.001\n",
                 "elkd.conf:3: [resource r]: renew_fraction must be between 1% and 90% of the ttl");
    expect_error(NODE1 "[resource r]\nwait_min = 2s\nwait_max = 1s\n",
                 "elkd.conf:3: [resource r]: wait_min 2000ms is above wait_max 1000ms");
    expect_error(NODE1 "[resource r]\nmax_hold = 5s\n",
                 "elkd.conf:3: [resource r]: max_hold 5000ms is shorter than ttl 10000ms");
    expect_error(MIN "[agent]\nsocket = \"\"\n", "elkd.conf: [agent] socket must not be empty");
}

static void test_too_many(void **state)
{
    (void)state;
    static char text[8192 + (ELKFW_MAX_RESOURCES + 1) * 24]; /* the build's limit, plus one */
    char msg[300];
    int i;
    size_t len;
    text[0] = '\0';
    for (i = 0; i <= CONFIG_ELK_MAX_NODES; i++) {
        char sec[64];
        snprintf(sec, sizeof sec, "[node n%d]\nhost = h\n", i);
        strcat(text, sec);
    }
    snprintf(msg, sizeof msg,
             "elkd.conf:%d: too many nodes: this build allows %d (CONFIG_ELK_MAX_NODES)",
             2 * CONFIG_ELK_MAX_NODES + 1, CONFIG_ELK_MAX_NODES);
    expect_error(text, msg);

    strcpy(text, NODE1);
    len = strlen(text);
    for (i = 0; i <= ELKFW_MAX_RESOURCES; i++) {
        len += (size_t)snprintf(text + len, sizeof text - len, "[resource r%d]\n", i);
    }
    snprintf(msg, sizeof msg, "elkd.conf:%d: too many resources: at most %d in this build (%s)",
             ELKFW_MAX_RESOURCES + 3, ELKFW_MAX_RESOURCES, ELKFW_MAX_RESOURCES_HINT);
    expect_error(text, msg);
}

static void test_resource_name_limit_follows_prefix(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX];
    char text[512];
    char name[200];
    elkfw_conf_free(&conf); /* the table an earlier test's parse left (defaults overwrite it) */
    elkfw_conf_defaults(&conf);
    size_t max = elkfw_resource_name_max(&conf);
    assert_int_equal(max < ELKFW_NAME_MAX - 1 ? max : ELKFW_NAME_MAX - 1, max);
    memset(name, 'n', max);
    name[max] = '\0';
    snprintf(text, sizeof text, NODE1 "[resource %s]\n", name);
    assert_int_equal(parse(text, err), ELK_OK);
    snprintf(text, sizeof text, NODE1 "[resource %sn]\n", name);
    assert_int_equal(parse(text, err), ELK_E_CONFIG);
    assert_non_null(strstr(err, "is not valid"));
}

/* In dir (a mkdtemp template): path = an elkd.conf whose node reads password file pw. */
static void write_conf_and_password(char *dir, char *path, char *pw)
{
    char text[512];
    FILE *f;
    assert_non_null(mkdtemp(dir));
    snprintf(path, 128, "%s/elkd.conf", dir);
    snprintf(pw, 128, "%s/pw", dir);
    f = fopen(pw, "w");
    fputs("s3cret\n", f);
    fclose(f);
    snprintf(text, sizeof text, "[node a]\nhost = h\npassword_file = %s\n" RES1, pw);
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_load_file_and_password_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/elk-conf-XXXXXX";
    char path[128], pw[128], err[ELKFW_ERR_MAX];
    FILE *f;
    mode_t old_mask = umask(077); /* secrets only elkd can read; the refusal is tested below */
    write_conf_and_password(dir, path, pw);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_OK);
    assert_string_equal(conf.nodes[0].password, "s3cret");

    /* unreadable password file: names file, line and key */
    unlink(pw);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    {
        char expect[400];
        snprintf(
            expect, sizeof expect,
            "%s:3: key 'password_file' in [node a]: cannot read '%s': No such file or directory",
            path, pw);
        assert_string_equal(err, expect);
    }
    /* password file with more than a password */
    f = fopen(pw, "w");
    for (int i = 0; i < 300; i++) {
        fputc('p', f);
    }
    fclose(f);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    {
        char expect[400];
        snprintf(expect, sizeof expect,
                 "%s:3: key 'password_file' in [node a]: '%s' holds more than 255 bytes", path, pw);
        assert_string_equal(err, expect);
    }
    f = fopen(pw, "w");
    fputs("two\nlines\n", f);
    fclose(f);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    assert_non_null(strstr(err, "must hold one non-empty line"));
    /* empty password file */
    f = fopen(pw, "w");
    fclose(f);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    assert_non_null(strstr(err, "must hold one non-empty line"));
    unlink(pw);
    unlink(path);
    umask(old_mask);
    /* missing config file */
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    {
        char expect[400];
        snprintf(expect, sizeof expect,
                 "%s: cannot read the configuration: No such file or directory", path);
        assert_string_equal(err, expect);
    }
    /* a huge file is refused before parsing */
    f = fopen(path, "w");
    for (int i = 0; i < ELKFW_CONF_MAX_BYTES + 1; i++) {
        fputc('#', f);
    }
    fclose(f);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    {
        char expect[80];
        snprintf(expect, sizeof expect, "file is larger than %d bytes", ELKFW_CONF_MAX_BYTES);
        assert_non_null(strstr(err, expect));
    }
    unlink(path);
    rmdir(dir);
}

/* The documented sample must stay a valid configuration. */
static void test_sample_config_parses(void **state)
{
    (void)state;
    char path[1024], err[ELKFW_ERR_MAX];
    const char *slash = strrchr(__FILE__, '/');
    static char text[64 * 1024];
    size_t n;
    FILE *f;
    assert_non_null(slash);
    snprintf(path, sizeof path, "%.*s/../../firmware/elkd.conf.sample", (int)(slash - __FILE__),
             __FILE__);
    f = fopen(path, "rb");
    assert_non_null(f);
    n = fread(text, 1, sizeof text, f);
    fclose(f);
    if (elkfw_conf_parse(&conf, "elkd.conf.sample", text, n, err, sizeof err) != ELK_OK) {
        print_error("%s\n", err);
        fail();
    }
    assert_int_equal(conf.mode, ELKFW_MODE_REDLOCK);
    assert_int_equal(conf.n_nodes, 3);
    assert_int_equal(conf.n_resources, 2);
    assert_string_equal(conf.nodes[2].password_file, "/etc/elkd/redis.password");
}

static void test_small_error_buffer_is_terminated(void **state)
{
    (void)state;
    char err[16];
    memset(err, 'Z', sizeof err);
    assert_int_equal(elkfw_conf_parse(&conf, "elkd.conf", "[bogus]\n", 8, err, sizeof err),
                     ELK_E_CONFIG);
    assert_int_equal(strlen(err), sizeof err - 1);
    assert_int_equal(elkfw_conf_parse(&conf, "elkd.conf", "[bogus]\n", 8, NULL, 0), ELK_E_CONFIG);
}

/* The safety rule at its boundary: drift + stop_margin + min_validity equal to the ttl
 * leaves no usable validity and is refused; one millisecond less is accepted. */
static void test_safety_rule_boundary(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX];
    /* drift = 1% of 1000 + 2 = 12 ms */
    assert_int_equal(
        parse(NODE1 "[resource r]\nttl = 1000ms\nstop_margin = 300ms\nmin_validity = 688ms\n", err),
        ELK_E_CONFIG);
    assert_non_null(strstr(err, "leaves no validity"));
    assert_int_equal(
        parse(NODE1 "[resource r]\nttl = 1000ms\nstop_margin = 300ms\nmin_validity = 687ms\n", err),
        ELK_OK);
    /* Where rounding decides: 1% of 1001 ms is 10.01 ms, so the drift allowance is 11 + 2 =
     * 13 ms (rounded up, as the lease engine computes it), and 13 + 788 + 200 = 1001 leaves
     * nothing. A check that rounds down (12 ms) passed this file, and elkd then failed to
     * set up the lock it had just called valid. */
    assert_int_equal(parse(NODE1 "[resource r]\nttl = 1001ms\nstop_margin = 788ms\nmin_validity = "
                                 "200ms\nrenew_fraction = 10%\n",
                           err),
                     ELK_E_CONFIG);
    assert_non_null(strstr(err, "drift 13ms"));
    assert_int_equal(parse(NODE1 "[resource r]\nttl = 1001ms\nstop_margin = 787ms\nmin_validity = "
                                 "200ms\nrenew_fraction = 10%\n",
                           err),
                     ELK_OK);
    /* The first renewal would come after the deadline (1000 - 12 - 300 = 688 ms). */
    assert_int_equal(
        parse(NODE1 "[resource r]\nttl = 1000ms\nstop_margin = 300ms\nrenew_fraction = 69%\n", err),
        ELK_E_CONFIG);
    assert_non_null(strstr(err, "renewal start after the local deadline"));
}

/* Issue 18: secrets readable by every user are refused, with the chmod that fixes it. */
static void test_secrets_readable_by_others(void **state)
{
    (void)state;
    char dir[] = "/tmp/elk-conf-XXXXXX";
    char path[128], pw[128], err[ELKFW_ERR_MAX], expect[600];
    FILE *f;
    write_conf_and_password(dir, path, pw);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(chmod(pw, 0644), 0);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    snprintf(
        expect, sizeof expect,
        "%s:3: key 'password_file' in [node a]: '%s' is readable by every user: run chmod o-r '%s'",
        path, pw, pw);
    assert_string_equal(err, expect);
    assert_int_equal(chmod(pw, 0640), 0); /* group elkd may read it: fine */
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_OK);
    /* an inline password in a file everybody can read */
    f = fopen(path, "w");
    fputs("[node a]\nhost = h\npassword = s3cret\n" RES1, f);
    fclose(f);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    snprintf(expect, sizeof expect,
             "%s:1: [node a] has an inline 'password' and the file is readable by every user: run "
             "chmod o-r '%s', "
             "or move it to a 'password_file' only elkd can read",
             path, path);
    assert_string_equal(err, expect);
    assert_int_equal(chmod(path, 0640), 0);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_OK);
    unlink(pw);
    unlink(path);
    rmdir(dir);
}

/* Issue 18: TLS to an IP address needs the certificate's name, or every connect fails. */
static void test_tls_ip_needs_server_name(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX];
    expect_error(NODE1 "tls = on\nca = /ca\n" RES1,
                 "elkd.conf:1: [node a]: tls is on and host '127.0.0.1' is an IP address: set "
                 "'server_name' to the "
                 "name in the server's certificate");
    expect_error("[node a]\nhost = ::1\ntls = on\nca = /ca\n" RES1,
                 "elkd.conf:1: [node a]: tls is on and host '::1' is an IP address: set "
                 "'server_name' to the "
                 "name in the server's certificate");
    assert_int_equal(parse(NODE1 "tls = on\nca = /ca\nserver_name = redis1\n" RES1, err), ELK_OK);
    assert_int_equal(parse("[node a]\nhost = redis1.example\ntls = on\nca = /ca\n" RES1, err),
                     ELK_OK);
    assert_int_equal(parse(NODE1 RES1, err), ELK_OK); /* no TLS: an IP is fine */
}

/* Issue 18: socket access keys and allow lists. */
static void test_access_keys(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX];
    elkfw_allow_t allow[8]; /* the files below name at most a few resources */
    assert_int_equal(parse(NODE1 RES1, err), ELK_OK);
    assert_int_equal(conf.agent.socket_mode, 0660);
    assert_int_equal(conf.agent.max_clients_per_uid, 0);
    assert_int_equal(
        parse(NODE1 RES1
              "allow_users = root, 65534\nallow_groups = 0\n[agent]\nsocket_mode = 0600\n"
              "socket_group = root\nmax_clients_per_uid = 3\n",
              err),
        ELK_OK);
    assert_int_equal(conf.agent.socket_mode, 0600);
    assert_string_equal(conf.agent.socket_group, "root");
    assert_int_equal(conf.agent.max_clients_per_uid, 3);
    assert_int_equal(elkfw_access_resolve(&conf, allow, err, sizeof err), ELK_OK);
    assert_false(allow[0].open);
    assert_int_equal(allow[0].n_uids, 2);
    assert_int_equal(allow[0].uids[0], 0);
    assert_int_equal(allow[0].uids[1], 65534);
    assert_int_equal(allow[0].n_gids, 1);
    {
        elkfw_peer_t peer;
        memset(&peer, 0, sizeof peer);
        peer.uid = 1000;
        peer.gid = 1000;
        assert_false(elkfw_access_allowed(&allow[0], &peer));
        peer.groups[0] = 5;
        peer.groups[1] = 0; /* a supplementary group on the list */
        peer.n_groups = 2;
        assert_true(elkfw_access_allowed(&allow[0], &peer));
        peer.n_groups = 0;
        peer.uid = 65534;
        assert_true(elkfw_access_allowed(&allow[0], &peer));
    }
    expect_error(NODE1 RES1 "[agent]\nsocket_mode = 0668\n",
                 "elkd.conf:5: key 'socket_mode' in [agent]: '0668' is not an octal mode from 0 to "
                 "0777 (e.g. 0660)");
    expect_error(NODE1 RES1 "[agent]\nsocket_mode = 1777\n",
                 "elkd.conf:5: key 'socket_mode' in [agent]: '1777' is not an octal mode from 0 to "
                 "0777 (e.g. 0660)");
    expect_error(NODE1 RES1 "allow_users = bob;rm\n",
                 "elkd.conf:4: key 'allow_users' in [resource valve-1]: 'bob;rm' is not a "
                 "comma-separated list of "
                 "user or group names or numeric ids (letters, digits and . _ -)");
    assert_int_equal(parse(NODE1 RES1 "allow_users = no-such-user-elk18\n", err), ELK_OK);
    assert_int_equal(elkfw_access_resolve(&conf, allow, err, sizeof err), ELK_E_CONFIG);
    assert_string_equal(
        err,
        "elkd.conf:4: key 'allow_users' in [resource valve-1]: no user 'no-such-user-elk18' on "
        "this system (use a name from /etc/passwd or a numeric id)");
    assert_int_equal(parse(NODE1 RES1 "[agent]\nsocket_group = no-such-group-elk18\n", err),
                     ELK_OK);
    {
        gid_t g;
        assert_int_equal(elkfw_access_socket_group(&conf, &g, err, sizeof err), ELK_E_CONFIG);
        assert_string_equal(
            err,
            "elkd.conf:5: key 'socket_group' in [agent]: no group 'no-such-group-elk18' on this "
            "system");
    }
}

/* Issue 18: the ACL rule follows key_prefix and never prints a secret. */
static void test_acl_line(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX], line[600];
    assert_int_equal(parse("[fleet]\nkey_prefix = plant1:\n" NODE1
                           "user = locker\npassword = s3cret\n" RES1,
                           err),
                     ELK_OK);
    elkfw_acl_line(&conf, conf.nodes[0].user, line, sizeof line);
    assert_string_equal(
        line,
        "ACL SETUSER locker reset on >PASSWORD -@all +hello +auth +select +ping +eval +evalsha "
        "+script|load +set +get +exists +incr +pexpire +del +publish +time +subscribe "
        "+unsubscribe +info "
        "+zadd +zrem +zrank +zrange +zrangebyscore +zremrangebyscore +pexpireat "
        "~plant1:* &plant1:*");
    assert_null(strstr(line, "s3cret"));
}

/* Issue 20: lock_delay, keepalive, max_hold's finite default, vote_hygiene, quarantine. */
static void test_issue20_keys(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX];
    elk_lock_config_t lc;
    /* defaults: no lock-delay, no keepalive, max_hold capped, hygiene on, quarantine auto */
    assert_int_equal(parse(MIN, err), ELK_OK);
    assert_int_equal(conf.resources[0].lock_delay_ms, 0);
    assert_int_equal(conf.resources[0].keepalive_ms, 0);
    assert_int_equal(conf.resources[0].max_hold_ms, CONFIG_ELK_DEFAULT_MAX_HOLD_MS);
    assert_true(conf.vote_hygiene);
    assert_int_equal(conf.quarantine_ms, 0);
    elkfw_resource_lock_config(&conf, &conf.resources[0], &lc);
    assert_int_equal(lc.lock_delay_ms, 0);
    assert_int_equal(lc.keepalive_ms, 0);
    assert_int_equal(lc.max_hold_ms, CONFIG_ELK_DEFAULT_MAX_HOLD_MS);

    assert_int_equal(parse("[fleet]\nvote_hygiene = off\nquarantine = 30s\n" MIN
                           "lock_delay = 2500ms\nkeepalive = 3s\nmax_hold = 0\n",
                           err),
                     ELK_OK);
    assert_false(conf.vote_hygiene);
    assert_int_equal(conf.quarantine_ms, 30000);
    assert_int_equal(conf.resources[0].lock_delay_ms, 2500);
    assert_int_equal(conf.resources[0].keepalive_ms, 3000);
    assert_int_equal(conf.resources[0].max_hold_ms, 0);
    elkfw_resource_lock_config(&conf, &conf.resources[0], &lc);
    assert_int_equal(lc.lock_delay_ms, 2500);
    assert_int_equal(lc.keepalive_ms, 3000);
    assert_int_equal(lc.max_hold_ms, 0);

    /* a ttl beyond the default cap raises the default, never an explicit value */
    assert_int_equal(parse(MIN "ttl = 2h\n", err), ELK_OK);
    assert_int_equal(conf.resources[0].max_hold_ms, 7200000);

    expect_error(MIN "lock_delay = 5 s\n",
                 "elkd.conf:4: key 'lock_delay' in [resource valve-1]: '5 s' is not a duration "
                 "(use e.g. 500ms or 10s)");
    expect_error(MIN "lock_delay = 2d\n",
                 "elkd.conf:4: key 'lock_delay' in [resource valve-1]: '2d' is not a duration "
                 "(use e.g. 500ms or 10s)");
    expect_error(MIN "lock_delay = 25h\n",
                 "elkd.conf:4: key 'lock_delay' in [resource valve-1]: 25h is out of range (0ms "
                 "to 86400000ms)");
    expect_error(MIN "keepalive = -1\n",
                 "elkd.conf:4: key 'keepalive' in [resource valve-1]: '-1' is not a duration "
                 "(use e.g. 500ms or 10s)");
    expect_error("[fleet]\nvote_hygiene = maybe\n",
                 "elkd.conf:2: key 'vote_hygiene' in [fleet]: 'maybe' is not on or off (use "
                 "on/off, yes/no, true/false, 1/0)");
    expect_error("[fleet]\nquarantine = auto\n",
                 "elkd.conf:2: key 'quarantine' in [fleet]: 'auto' is not a duration (use e.g. "
                 "500ms or 10s)");
    expect_error("[fleet]\nquarantine = 2d\n",
                 "elkd.conf:2: key 'quarantine' in [fleet]: '2d' is not a duration (use e.g. "
                 "500ms or 10s)");
    /* a quarantine by hand must outlast ttl + drift + lock_delay (10s + 102ms + 1s here) */
    expect_error("[fleet]\nquarantine = 11s\n" MIN "lock_delay = 1s\n",
                 "elkd.conf: [fleet] quarantine 11000ms is shorter than ttl + drift + lock_delay "
                 "of [resource valve-1] (11102ms): a restarted node would vote while a lease it "
                 "lost may still be valid; raise it or use 0 (automatic)");
    assert_int_equal(parse("[fleet]\nquarantine = 11102ms\n" MIN "lock_delay = 1s\n", err), ELK_OK);
    expect_error(MIN "lock_delay = 1s\nlock_delay = 2s\n",
                 "elkd.conf:5: key 'lock_delay' in [resource valve-1] is set twice (first on "
                 "line 4)");
}

/* Valid but risky: max_hold = 0 and vote_hygiene = off are warned about, not refused. */
static void test_warnings(void **state)
{
    (void)state;
    char err[ELKFW_ERR_MAX], w[ELKFW_ERR_MAX];
    size_t pos = 0;
    assert_int_equal(parse(MIN, err), ELK_OK);
    assert_false(elkfw_conf_warning(&conf, &pos, w, sizeof w));

    assert_int_equal(parse(MIN "max_hold = 0\n[resource b]\n[resource c]\nmax_hold = 0\n", err),
                     ELK_OK);
    pos = 0;
    assert_true(elkfw_conf_warning(&conf, &pos, w, sizeof w));
    assert_string_equal(w,
                        "elkd.conf:4: warning: [resource valve-1] max_hold = 0: a hung holder "
                        "keeps the resource forever; set a cap (e.g. max_hold = 1h)");
    assert_true(elkfw_conf_warning(&conf, &pos, w, sizeof w));
    assert_string_equal(w,
                        "elkd.conf:7: warning: [resource c] max_hold = 0: a hung holder keeps "
                        "the resource forever; set a cap (e.g. max_hold = 1h)");
    assert_false(elkfw_conf_warning(&conf, &pos, w, sizeof w));
    assert_false(elkfw_conf_warning(&conf, &pos, w, sizeof w)); /* stays at the end */

    assert_int_equal(parse("[fleet]\nvote_hygiene = no\n" MIN, err), ELK_OK);
    pos = 0;
    assert_true(elkfw_conf_warning(&conf, &pos, w, sizeof w));
    assert_non_null(strstr(w, "elkd.conf:2: warning: [fleet] vote_hygiene = off: "));
    assert_false(elkfw_conf_warning(&conf, &pos, w, sizeof w));
}

/* ------------------------------------------------------------------ preflight */

/* A file in a fresh directory (dir: a mkdtemp template), with the given mode. */
static void put_file(const char *dir, const char *name, const char *text, mode_t mode, char *path,
                     size_t cap)
{
    FILE *f;
    snprintf(path, cap, "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* Two [node] sections reaching one server (after getaddrinfo) count one server's vote
 * twice: refused, both sections named with file:line. localhost and 127.0.0.1 on one port
 * are one server; so are 127.0.0.1 and its IPv4-mapped IPv6 form. */
static void test_preflight_duplicate_nodes(void **state)
{
    (void)state;
    char dir[] = "/tmp/elk-conf-XXXXXX";
    char path[128], err[ELKFW_ERR_MAX], expect[600];
    assert_non_null(mkdtemp(dir));
    put_file(dir, "elkd.conf",
             "[fleet]\nmode = redlock\n"
             "[node a]\nhost = 127.0.0.1\nport = 7001\n"
             "[node b]\nhost = 127.0.0.1\nport = 7002\n"
             "[node c]\nhost = localhost\nport = 7001\n" RES1,
             0600, path, sizeof path);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    snprintf(expect, sizeof expect,
             "%s:9: [node c] (localhost port 7001) is the same server as %s:3: [node a] "
             "(127.0.0.1 port 7001), both reach 127.0.0.1:7001: its one vote would count twice "
             "and one failure would take two; point one of them at another Redis server or "
             "remove it",
             path, path);
    assert_string_equal(err, expect);
    /* the same file with every node on its own port: fine */
    put_file(dir, "elkd.conf",
             "[fleet]\nmode = redlock\n"
             "[node a]\nhost = 127.0.0.1\nport = 7001\n"
             "[node b]\nhost = 127.0.0.1\nport = 7002\n"
             "[node c]\nhost = localhost\nport = 7003\n" RES1,
             0600, path, sizeof path);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_OK);
    /* an IPv4-mapped IPv6 address is the IPv4 one */
    put_file(dir, "elkd.conf",
             "[fleet]\nmode = redlock\n"
             "[node a]\nhost = 127.0.0.1\nport = 7001\n"
             "[node b]\nhost = ::ffff:127.0.0.1\nport = 7001\n"
             "[node c]\nhost = 127.0.0.1\nport = 7003\n" RES1,
             0600, path, sizeof path);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    assert_non_null(strstr(err, ":6: [node b] (::ffff:127.0.0.1 port 7001) is the same server as"));
    /* names that do not resolve are compared as names, case ignored */
    put_file(dir, "elkd.conf",
             "[fleet]\nmode = redlock\n"
             "[node a]\nhost = redis-a.invalid\n"
             "[node b]\nhost = REDIS-A.invalid\n"
             "[node c]\nhost = redis-c.invalid\n" RES1,
             0600, path, sizeof path);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    assert_non_null(strstr(err, ":5: [node b] (REDIS-A.invalid port 6379) is the same server as"));
    assert_non_null(strstr(err, "both reach the same name"));
    unlink(path);
    rmdir(dir);
}

/* Which key modes are too open: others never read it; a group only when it is the one
 * elkd runs as, and never group root. */
static void test_preflight_key_too_open(void **state)
{
    (void)state;
    assert_null(elkfw_preflight_key_too_open(S_IFREG | 0600, 5, 5));
    assert_null(elkfw_preflight_key_too_open(S_IFREG | 0400, 0, 0));
    assert_null(elkfw_preflight_key_too_open(S_IFREG | 0640, 5, 5)); /* root:elkd 0640 */
    assert_string_equal(elkfw_preflight_key_too_open(S_IFREG | 0640, 5, 6), "group");
    assert_string_equal(elkfw_preflight_key_too_open(S_IFREG | 0640, 0, 0), "group");
    assert_string_equal(elkfw_preflight_key_too_open(S_IFREG | 0644, 5, 5), "every user");
    assert_string_equal(elkfw_preflight_key_too_open(S_IFREG | 0604, 5, 5), "every user");
}

/* A client key other users can read is refused with its mode and the chmod that fixes it
 * (before its contents are looked at). */
static void test_preflight_key_mode_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/elk-conf-XXXXXX";
    char path[128], key[128], ca[128], text[600], err[ELKFW_ERR_MAX], expect[600];
    assert_non_null(mkdtemp(dir));
    put_file(dir, "ca.pem", "not parsed here\n", 0644, ca, sizeof ca);
    put_file(dir, "client.key", "not parsed here\n", 0644, key, sizeof key);
    snprintf(text, sizeof text,
             "[node a]\nhost = localhost\ntls = on\nca = %s\ncert = %s\nkey = %s\n" RES1, ca, ca,
             key);
    put_file(dir, "elkd.conf", text, 0600, path, sizeof path);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    snprintf(expect, sizeof expect,
             "%s:1: [node a]: the TLS client key '%s' has mode 0644 and is readable by every "
             "user: run chmod 600 '%s' (its owner must be the user elkd runs as)",
             path, key, key);
    assert_string_equal(err, expect);
    /* the same key in [fleet], inherited */
    snprintf(text, sizeof text,
             "[fleet]\ntls = on\nca = %s\ncert = %s\nkey = %s\n[node a]\nhost = localhost\n" RES1,
             ca, ca, key);
    put_file(dir, "elkd.conf", text, 0600, path, sizeof path);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
    assert_non_null(strstr(err, ":6: [node a]: the TLS client key"));
    if (getegid() == 0) { /* group root may read it: refused too */
        assert_int_equal(chmod(key, 0640), 0);
        assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_E_CONFIG);
        assert_non_null(strstr(err, "has mode 0640 and is readable by group '"));
    }
    assert_int_equal(chmod(key, 0600), 0);
    assert_int_equal(elkfw_conf_load(&conf, path, err, sizeof err), ELK_OK);
    unlink(key);
    unlink(ca);
    unlink(path);
    rmdir(dir);
}

/* CN=elk unit, valid 2030-01-01 00:00:00 to 2030-01-31 00:00:00 UTC (openssl req -x509 under
 * faketime); CN=elk unit later, 2030-02-01 00:00:00 to 2030-03-03 00:00:00 UTC. Public
 * certificates only: their keys were thrown away. */
static const char cert_jan[] = "-----BEGIN CERTIFICATE-----\n"
                               "MIIBezCCASGgAwIBAgIUeUhLXpVmxRGX5a/3yTKgdqVi0QEwCgYIKoZIzj0EAwIw\n"
                               "EzERMA8GA1UEAwwIZWxrIHVuaXQwHhcNMzAwMTAxMDAwMDAwWhcNMzAwMTMxMDAw\n"
                               "MDAwWjATMREwDwYDVQQDDAhlbGsgdW5pdDBZMBMGByqGSM49AgEGCCqGSM49AwEH\n"
                               "A0IABPg8CjavaXAtHyPT388hF3FMrFj6Tr9fyBsjlyx4xtyS3eecmMH4CP/iaw+n\n"
                               "KM1qGce58WAMe234mko2HScr5RqjUzBRMB0GA1UdDgQWBBQE/juM/pLWgJZkO+H2\n"
                               "UsoxRkGmSjAfBgNVHSMEGDAWgBQE/juM/pLWgJZkO+H2UsoxRkGmSjAPBgNVHRMB\n"
                               "Af8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIF8AA8I/ZAby1UJJBWDlNYj1t11E\n"
                               "PBSgqrEASs2eLNo8AiEA0bq5RB3Vm9H7jsYMrI/LLNQ0yfXyj4Fso7D4g94wu58=\n"
                               "-----END CERTIFICATE-----\n";
static const char cert_feb[] = "-----BEGIN CERTIFICATE-----\n"
                               "MIIBhzCCAS2gAwIBAgIUCI1qLxOcxSNtXJosU7unddLV8VswCgYIKoZIzj0EAwIw\n"
                               "GTEXMBUGA1UEAwwOZWxrIHVuaXQgbGF0ZXIwHhcNMzAwMjAxMDAwMDAwWhcNMzAw\n"
                               "MzAzMDAwMDAwWjAZMRcwFQYDVQQDDA5lbGsgdW5pdCBsYXRlcjBZMBMGByqGSM49\n"
                               "AgEGCCqGSM49AwEHA0IABLQ0xlod+q897/oyk7YCiMLeeFB4abw2ozxKFOtw8HGt\n"
                               "I5sC87r6bFx3j/JtfgIYcm18Y8o+Q02uilAsJ3wuN/KjUzBRMB0GA1UdDgQWBBSJ\n"
                               "1Rw9Hfk9CqAHH/3XCc2s2JlldzAfBgNVHSMEGDAWgBSJ1Rw9Hfk9CqAHH/3XCc2s\n"
                               "2JlldzAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQC3Qi/qvPRJ\n"
                               "w5IySRh1rbVwdsHuuetLHwwXJSmj5rxMuAIgBKqrNWlko716c6dBnHyoIbXpnPD9\n"
                               "fgZxWcstgYtHa+U=\n"
                               "-----END CERTIFICATE-----\n";

static time_t utc(int y, int mo, int d, int h, int mi, int s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return timegm(&tm);
}

/* Certificates outside their dates, against a given wall clock: the CA (refused when none
 * in its file is valid) and the client certificate, to the second at both ends. */
static void test_preflight_certificate_dates(void **state)
{
    (void)state;
#ifdef ELKFW_TLS
    char dir[] = "/tmp/elk-conf-XXXXXX";
    char ca[128], bundle[128], text[600], err[ELKFW_ERR_MAX], expect[700];
    char both[2048];
    assert_non_null(mkdtemp(dir));
    put_file(dir, "ca.pem", cert_jan, 0644, ca, sizeof ca);
    snprintf(both, sizeof both, "%s%s", cert_jan, cert_feb);
    put_file(dir, "bundle.pem", both, 0644, bundle, sizeof bundle);
    snprintf(text, sizeof text, "[node a]\nhost = localhost\ntls = on\nca = %s\n" RES1, ca);
    assert_int_equal(parse(text, err), ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2029, 12, 31, 23, 59, 59), err, sizeof err),
                     ELK_E_CONFIG);
    snprintf(expect, sizeof expect,
             "elkd.conf:1: [node a]: the CA certificate '%s' (CN=elk unit) is not valid before "
             "2030-01-01 00:00:00 UTC (valid from 2030-01-01 00:00:00 UTC to 2030-01-31 00:00:00 "
             "UTC; the clock says 2029-12-31 23:59:59 UTC): use a certificate that is valid now; "
             "if the clock is wrong, set it first (the TLS handshake checks the same dates)",
             ca);
    assert_string_equal(err, expect);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 1, 1, 0, 0, 0), err, sizeof err), ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 1, 31, 0, 0, 0), err, sizeof err),
                     ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 1, 31, 0, 0, 1), err, sizeof err),
                     ELK_E_CONFIG);
    assert_non_null(strstr(err, "(CN=elk unit) expired on 2030-01-31 00:00:00 UTC (valid from"));
    assert_non_null(strstr(err, "the clock says 2030-01-31 00:00:01 UTC): renew it;"));
    /* a bundle with one certificate still valid is fine; with none, refused */
    snprintf(text, sizeof text, "[node a]\nhost = localhost\ntls = on\nca = %s\n" RES1, bundle);
    assert_int_equal(parse(text, err), ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 1, 15, 0, 0, 0), err, sizeof err),
                     ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 2, 15, 0, 0, 0), err, sizeof err),
                     ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 3, 4, 0, 0, 0), err, sizeof err),
                     ELK_E_CONFIG);
    /* the client certificate: its own dates (the CA valid then) */
    snprintf(text, sizeof text,
             "[node a]\nhost = localhost\ntls = on\nca = %s\ncert = %s\nkey = %s/none.key\n" RES1,
             bundle, ca, dir);
    assert_int_equal(parse(text, err), ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 1, 15, 0, 0, 0), err, sizeof err),
                     ELK_OK);
    assert_int_equal(elkfw_preflight_tls(&conf, utc(2030, 2, 15, 0, 0, 0), err, sizeof err),
                     ELK_E_CONFIG);
    snprintf(expect, sizeof expect,
             "[node a]: the client certificate '%s' (CN=elk unit) expired on", ca);
    assert_non_null(strstr(err, expect));
    unlink(ca);
    unlink(bundle);
    rmdir(dir);
#endif
}

int main(void)
{
    return ELK_RUN_TESTS(test_minimal_defaults, test_full_file, test_durations, test_names,
                         test_error_messages_lines, test_error_messages_whole_file,
                         test_safety_rule_boundary, test_too_many,
                         test_resource_name_limit_follows_prefix, test_load_file_and_password_file,
                         test_secrets_readable_by_others, test_tls_ip_needs_server_name,
                         test_access_keys, test_acl_line, test_sample_config_parses,
                         test_small_error_buffer_is_terminated, test_issue20_keys, test_warnings,
                         test_preflight_duplicate_nodes, test_preflight_key_too_open,
                         test_preflight_key_mode_refused, test_preflight_certificate_dates);
}
