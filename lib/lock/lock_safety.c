/*
 * The server safety check: on every new connection, ask the node for the settings that
 * make locks unsafe (eviction, persistence) and refuse or warn about it per policy.
 */
#include "lock_internal.h"

/* CONFIG GET <name> reply: [name, value] (RESP2 array) or {name: value} (RESP3 map). */
static void lk_on_config(void *user, elk_node_t *node, int status, const elk_resp_reply_t *reply)
{
    elk_client_t *client = (elk_client_t *)user;
    size_t i = elk_lock__node_of(client, node);
    size_t idx = 0;
    const elk_resp_node_t *top;
    const elk_resp_node_t *name;
    const elk_resp_node_t *val;
    /* Each outcome picks its line; one log call below (each call costs flash). */
    const char *what;
    const char *after = ")";
    int level = ELK_LOG_WARN;
    bool refuse = false;
    if (i == SIZE_MAX || status != ELK_OK) {
        return;
    }
    top = elk_resp_reply_top(reply, &idx);
    if (top == NULL) {
        return;
    }
    if (elk_resp_is_error(top)) {
        what = "CONFIG GET refused, cannot check persistence/eviction settings: ";
        val = top;
        after = "";
    } else if ((top->type != ELK_RESP_ARRAY && top->type != ELK_RESP_MAP) || top->subtree < 2u ||
               idx + 2u >= reply->count) {
        return;
    } else {
        name = &reply->nodes[idx + 1u];
        val = &reply->nodes[idx + 2u];
        if (elk_resp_str_eq(name, "maxmemory-policy") && !elk_resp_str_eq(val, "noeviction")) {
            refuse = client->cfg.safety == ELK_SAFETY_REFUSE;
            level = refuse ? ELK_LOG_ERROR : ELK_LOG_WARN;
            what = refuse ? "refused: eviction can delete lock keys; set maxmemory-policy "
                            "noeviction (now "
                          : "unsafe: eviction can delete lock keys; set maxmemory-policy "
                            "noeviction, now ";
            after = refuse ? ")" : "";
        } else if (elk_resp_str_eq(name, "appendonly") && !elk_resp_str_eq(val, "yes")) {
            what = "no AOF persistence: a restart loses locks; delay restarts by one TTL "
                   "(appendonly ";
        } else if (elk_resp_str_eq(name, "appendfsync") && !elk_resp_str_eq(val, "always")) {
            what = "appendfsync is not always: a crash can lose recent locks; delay restarts by "
                   "one TTL (appendfsync ";
        } else {
            return;
        }
    }
    elk_lock__node_log(client, level, i, what, val, after);
    if (refuse) {
        client->node_unsafe[i] = 1;
    }
}

void elk_lock__safety_start(elk_client_t *client, size_t i, uint64_t now)
{
    static const char *const params[] = {"maxmemory-policy", "appendonly", "appendfsync"};
    elk_node_t *node = &client->fleet->nodes[i];
    elk_resp_arg_t argv[3];
    size_t k;
    if (client->cfg.safety == ELK_SAFETY_OFF) {
        return;
    }
    argv[0] = elk_resp_arg_cstr("CONFIG");
    argv[1] = elk_resp_arg_cstr("GET");
    for (k = 0; k < sizeof(params) / sizeof(params[0]); k++) {
        argv[2] = elk_resp_arg_cstr(params[k]);
        (void)elk_node_send(node, now, argv, 3, 0, lk_on_config, client);
    }
}
