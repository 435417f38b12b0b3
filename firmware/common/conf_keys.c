/* SPDX-License-Identifier: MIT */
/* The configuration's keys, a table a section (conf_keys.h says what each column means). */
#include "conf_keys.h"

#include <stdbool.h>
#include <stddef.h>

#include "elk/platform.h"
#include "elkfw/conf.h"

/* Host names (letters, digits, '.', '-', '_'), IPv4, and IPv6 with an optional zone
 * ("fe80::1%eth0"). Anything else cannot resolve, so elkd would retry it forever. */
static bool host_valid(const char *v, size_t len)
{
    size_t i;
    if (len == 0) {
        return false;
    }
    for (i = 0; i < len; i++) {
        char ch = v[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '-' || ch == '_' || ch == ':' || ch == '%')) {
            return false;
        }
    }
    return true;
}

/* The prefix goes in front of "{<resource>}": a brace would move the hash tag, and a
 * space or control byte cannot appear in a key anyone could type. */
static bool prefix_valid(const char *v, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch <= 0x20 || ch == 0x7f || ch == '{' || ch == '}') {
            return false;
        }
    }
    return true;
}

static const char *const mode_choices[] = {"single", "redlock", NULL};
static const char *const log_choices[] = {"stderr", "syslog", NULL};
static const char *const level_choices[] = {"error", "warn", "info", "debug", NULL};
static const char *const safety_choices[] = {"warn", "refuse", "off", NULL};

#define FLEET(f) offsetof(elkfw_conf_t, f)
#define NODE(f) offsetof(elkfw_node_conf_t, f)
#define RES(f) offsetof(elkfw_resource_conf_t, f)
#define AGENT(f) offsetof(elkfw_agent_conf_t, f)
#define SZ(t, f) sizeof(((t *)0)->f)
/* line_at: where the line of a key that whole-file checks and later lookups name goes. */
#define LINE(t, f) (1u + offsetof(t, f))
#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

#define HOST_INVALID                                                                               \
    "is not a host name or numeric address (letters, digits and . - _ : %; no spaces or "          \
    "control bytes)"
#define PREFIX_INVALID                                                                             \
    "must not contain braces, spaces or control bytes (the key is <prefix>{<resource>})"

static const keydef_t fleet_keys[] = {
    {"mode", K_ENUM, FLEET(mode), .choices = mode_choices, .def = ELKFW_MODE_SINGLE},
    {"gateway_id", K_NAME_ID, FLEET(gateway_id), .size = SZ(elkfw_conf_t, gateway_id)},
    {"key_prefix", K_STR, FLEET(key_prefix), .size = SZ(elkfw_conf_t, key_prefix),
     .def_text = "elk:", .valid = prefix_valid, .invalid = PREFIX_INVALID},
    {"tls", K_TRI, FLEET(tls.on), .def = 0},
    {"ca", K_STR, FLEET(tls.ca), .size = SZ(elkfw_conf_t, tls.ca)},
    {"cert", K_STR, FLEET(tls.cert), .size = SZ(elkfw_conf_t, tls.cert)},
    {"key", K_STR, FLEET(tls.key), .size = SZ(elkfw_conf_t, tls.key)},
    {"connect_timeout", K_DUR, FLEET(connect_timeout_ms), .min = 1, .max = 600000, .def = 2000},
    {"request_timeout", K_DUR, FLEET(request_timeout_ms), .min = 1, .max = 600000, .def = 1000},
    {"drift_factor", K_FRAC, FLEET(drift_factor_ppm), .def = CONFIG_ELK_DRIFT_FACTOR_PPM},
    {"drift_fixed", K_DUR, FLEET(drift_fixed_ms), .max = 10000, .def = CONFIG_ELK_DRIFT_FIXED_MS},
    {"vote_hygiene", K_BOOL, FLEET(vote_hygiene), .def = true,
     .line_at = LINE(elkfw_conf_t, vote_hygiene_line)},
    {"quarantine", K_DUR, FLEET(quarantine_ms), .max = 86400000, .def = 0},
    {"batch_renewals", K_BOOL, FLEET(batch_renewals), .def = true},
};

/* A node's timeouts default to 0: the fleet's. */
static const keydef_t node_keys[] = {
    {"host", K_STR, NODE(host), .size = SZ(elkfw_node_conf_t, host), .valid = host_valid,
     .invalid = HOST_INVALID},
    {"port", K_PORT, NODE(port), .min = 1, .max = 65535, .def = 6379},
    {"tls", K_TRI, NODE(tls.on), .def = -1},
    {"ca", K_STR, NODE(tls.ca), .size = SZ(elkfw_node_conf_t, tls.ca)},
    {"cert", K_STR, NODE(tls.cert), .size = SZ(elkfw_node_conf_t, tls.cert)},
    {"key", K_STR, NODE(tls.key), .size = SZ(elkfw_node_conf_t, tls.key)},
    {"sni", K_STR, NODE(server_name), .size = SZ(elkfw_node_conf_t, server_name)},
    {"server_name", K_STR, NODE(server_name), .size = SZ(elkfw_node_conf_t, server_name)},
    {"user", K_STR, NODE(user), .size = SZ(elkfw_node_conf_t, user)},
    {"password", K_STR, NODE(password), .size = SZ(elkfw_node_conf_t, password)},
    {"password_file", K_STR, NODE(password_file), .size = SZ(elkfw_node_conf_t, password_file),
     .line_at = LINE(elkfw_node_conf_t, password_file_line)},
    {"db", K_U32, NODE(db), .max = 65535},
    {"connect_timeout", K_DUR, NODE(connect_timeout_ms), .min = 1, .max = 600000},
    {"request_timeout", K_DUR, NODE(request_timeout_ms), .min = 1, .max = 600000},
};

/* min_validity (0: a fifth of the ttl) and max_hold (0 when set so: no cap) get their
 * final values in the whole-file check, which knows the ttl. */
static const keydef_t resource_keys[] = {
    {"ttl", K_DUR, RES(ttl_ms), .min = 100, .max = 86400000, .def = CONFIG_ELK_DEFAULT_TTL_MS,
     .line_at = LINE(elkfw_resource_conf_t, ttl_line)},
    {"renew_fraction", K_FRAC, RES(renew_fraction_ppm),
     .def = (uint32_t)CONFIG_ELK_RENEW_FRACTION_PCT * 10000u},
    {"stop_margin", K_DUR, RES(stop_margin_ms), .max = 86400000, .def = 500,
     .line_at = LINE(elkfw_resource_conf_t, stop_margin_line)},
    {"min_validity", K_DUR, RES(min_validity_ms), .max = 86400000, .def = 0,
     .line_at = LINE(elkfw_resource_conf_t, min_validity_line)},
    {"max_hold", K_DUR, RES(max_hold_ms), .max = UINT32_MAX, .def = CONFIG_ELK_DEFAULT_MAX_HOLD_MS,
     .line_at = LINE(elkfw_resource_conf_t, max_hold_line)},
    {"max_renewals", K_U32, RES(max_renewals), .max = UINT32_MAX},
    {"fencing", K_BOOL, RES(fencing), .def = true},
    {"wait_min", K_DUR, RES(wait_min_ms), .min = 1, .max = 600000, .def = 50},
    {"wait_max", K_DUR, RES(wait_max_ms), .min = 1, .max = 600000, .def = 200},
    {"release_channel", K_BOOL, RES(release_channel), .def = false},
    {"lock_delay", K_DUR, RES(lock_delay_ms), .max = 86400000},
    {"keepalive", K_DUR, RES(keepalive_ms), .max = 86400000},
    {"allow_users", K_IDLIST, RES(allow_users), .size = SZ(elkfw_resource_conf_t, allow_users),
     .line_at = LINE(elkfw_resource_conf_t, allow_users_line)},
    {"allow_groups", K_IDLIST, RES(allow_groups), .size = SZ(elkfw_resource_conf_t, allow_groups),
     .line_at = LINE(elkfw_resource_conf_t, allow_groups_line)},
    {"fair", K_BOOL, RES(fair), .def = false, .line_at = LINE(elkfw_resource_conf_t, fair_line)},
    /* [semaphore] only (the last row: the resource table leaves it out); its range is
     * checked when the semaphore is expanded into permits, with a message naming it */
    {"permits", K_U32, RES(permits), .max = UINT32_MAX,
     .line_at = LINE(elkfw_resource_conf_t, permits_line)},
};

static const keydef_t agent_keys[] = {
    {"socket", K_STR, AGENT(socket_path), .size = SZ(elkfw_agent_conf_t, socket_path),
     .def_text = "/run/elkd/elkd.sock"},
    {"log", K_ENUM, AGENT(log_target), .choices = log_choices, .def = ELKFW_LOG_STDERR},
    {"log_level", K_ENUM, AGENT(log_level), .choices = level_choices, .def = ELK_LOG_INFO,
     .enum_base = ELK_LOG_ERROR}, /* error=1 ... debug=4, as in platform.h */
    {"safety_check", K_ENUM, AGENT(safety_check), .choices = safety_choices,
     .def = ELKFW_SAFETY_WARN},
    {"socket_mode", K_OCTAL, AGENT(socket_mode), .max = 0777, .def = 0660},
    {"socket_group", K_IDLIST, AGENT(socket_group), .size = SZ(elkfw_agent_conf_t, socket_group),
     .line_at = LINE(elkfw_agent_conf_t, socket_group_line)},
    {"max_clients_per_uid", K_U32, AGENT(max_clients_per_uid), .min = 1, .max = 1024},
    {"log_summary", K_DUR, AGENT(log_summary_ms), .min = 1000, .max = 86400000, .def = 60000},
    {"metrics_file", K_STR, AGENT(metrics_file), .size = SZ(elkfw_agent_conf_t, metrics_file)},
    {"metrics_interval", K_DUR, AGENT(metrics_interval_ms), .min = 1000, .max = 86400000,
     .def = 15000},
    {"events_file", K_STR, AGENT(events_file), .size = SZ(elkfw_agent_conf_t, events_file)},
    {"events_max", K_U32, AGENT(events_max), .min = 16, .max = 1048576,
     .def = 2048}, /* 1 MiB of 512-byte records */
    {"client_stall_timeout", K_DUR, AGENT(client_stall_timeout_ms), .min = 100, .max = 3600000,
     .def = 10000},
    {"client_idle_timeout", K_DUR, AGENT(client_idle_timeout_ms), .max = 86400000, .def = 60000},
};

const keytable_t elkfw_conf__fleet_keys = {fleet_keys, NKEYS(fleet_keys)};
const keytable_t elkfw_conf__node_keys = {node_keys, NKEYS(node_keys)};
const keytable_t elkfw_conf__resource_keys = {resource_keys, NKEYS(resource_keys) - 1u};
const keytable_t elkfw_conf__semaphore_keys = {resource_keys, NKEYS(resource_keys)};
const keytable_t elkfw_conf__agent_keys = {agent_keys, NKEYS(agent_keys)};
