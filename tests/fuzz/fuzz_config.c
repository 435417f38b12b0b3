/* SPDX-License-Identifier: MIT */
/* libFuzzer: the elkd config parser must never crash, overrun or accept garbage
 * silently: on failure the message names the file; on success the result is sane. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elkfw/conf.h"
#include "fuzz_check.h"

static elkfw_conf_t conf;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[ELKFW_ERR_MAX];
    size_t i;
    int rc = elkfw_conf_parse(&conf, "fuzz.conf", (const char *)data, size, err, sizeof err);
    CHECK(strlen(err) < sizeof err);
    if (rc != ELK_OK) {
        CHECK(rc == ELK_E_CONFIG);
        CHECK(strncmp(err, "fuzz.conf:", 10) == 0);
        return 0;
    }
    CHECK(conf.n_nodes >= 1 && conf.n_nodes <= CONFIG_ELK_MAX_NODES);
    CHECK(conf.n_resources >= 1 && conf.n_resources <= ELKFW_MAX_RESOURCES);
    for (i = 0; i < conf.n_nodes; i++) {
        CHECK(conf.nodes[i].host[0] != '\0');
        CHECK(conf.nodes[i].port != 0);
    }
    for (i = 0; i < conf.n_resources; i++) {
        const elkfw_resource_conf_t *r = &conf.resources[i];
        CHECK(elkfw_name_valid(r->name, strlen(r->name), ELKFW_NAME_MAX - 1));
        CHECK(r->stop_margin_ms + r->min_validity_ms < r->ttl_ms);
        CHECK(r->wait_min_ms <= r->wait_max_ms);
    }
    return 0;
}
