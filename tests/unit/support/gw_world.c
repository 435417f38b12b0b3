/* SPDX-License-Identifier: MIT */
/* Several gateways on the same in-memory Redis servers: gw_world.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gw_world.h"

gw_world_t GWW;

uint64_t gw_world_now(void)
{
    return GWW.h[0].clock.now;
}

void gw_world_setup(size_t n)
{
    elk_node_config_t nc;
    elk_client_config_t cc;
    assert_true(n >= 1u && n <= GW_WORLD_MAX);
    memset(&GWW, 0, sizeof GWW);
    GWW.n = n;
    elk_node_config_defaults(&nc);
    nc.endpoint.host = "127.0.0.1";
    nc.endpoint.port = 6379;
    for (size_t g = 0; g < n; g++) {
        node_harness_init(&GWW.h[g], GW_WORLD_NODES, &nc);
        fake_entropy_init(&GWW.h[g].entropy, 11u + g);
        elk_client_config_defaults(&cc);
        snprintf(GWW.id[g], sizeof GWW.id[g], "gw%u", (unsigned)g % 10u);
        cc.gateway_id = GWW.id[g];
        cc.key_prefix = "t:";
        assert_int_equal(elk_client_init(&GWW.client[g], &cc, &GWW.h[g].fleet, &GWW.h[g].entropy_if,
                                         &GWW.h[g].log_if),
                         ELK_OK);
    }
}

void gw_world_connect(void)
{
    for (size_t i = 0; i < GW_WORLD_NODES; i++) {
        lfr_init(&GWW.srv[i], &GWW.h[0].clock.now);
        for (size_t g = 0; g < GWW.n; g++) {
            lfr_attach(&GWW.srv[i], &GWW.h[g].ft[i]);
        }
    }
    gw_world_pump();
    for (size_t g = 0; g < GWW.n; g++) {
        assert_true(elk_client_ready(&GWW.client[g]));
    }
}

uint64_t gw_world_pump(void)
{
    uint64_t next = UINT64_MAX;
    for (int round = 0; round < 400; round++) {
        size_t moved = 0;
        next = UINT64_MAX;
        for (size_t g = 0; g < GWW.n; g++) {
            GWW.h[g].clock.now = gw_world_now();
            uint64_t w = elk_client_poll(&GWW.client[g], gw_world_now());
            next = w < next ? w : next;
            if (GWW.after_poll != NULL) {
                GWW.after_poll();
            }
        }
        for (size_t i = 0; i < GW_WORLD_NODES; i++) {
            moved += lfr_serve(&GWW.srv[i]);
        }
        for (size_t g = 0; g < GWW.n; g++) {
            for (size_t i = 0; i < GW_WORLD_NODES; i++) {
                moved += fake_transport_rx_pending(&GWW.h[g].ft[i]);
            }
        }
        if (moved == 0 && next > gw_world_now()) {
            return next;
        }
    }
    return next;
}

void gw_world_run_until(uint64_t t)
{
    fake_clock_run_until(&GWW.h[0].clock, t, gw_world_pump);
}

elk_lock_config_t gw_world_lock_cfg(void)
{
    elk_lock_config_t c;
    elk_lock_config_defaults(&c);
    c.ttl_ms = 1000;
    c.stop_margin_ms = 50;
    c.wait_min_ms = 50;
    c.wait_max_ms = 100;
    return c;
}
