/* SPDX-License-Identifier: MIT */
/* Functions shared between the files of port/sim; not part of its public interface. */
#ifndef ELK_SIM_INTERNAL_H
#define ELK_SIM_INTERNAL_H

#include "elk/sim.h"

/* Delivers a PUBLISH to the node's subscribers (elk_sim_net_publish's shape). */
typedef int64_t (*elk_sim_publish_fn)(elk_sim_net_t *net, elk_sim_redis_t *node, const uint8_t *ch,
                                      size_t chlen, const uint8_t *msg, size_t msglen);

/* Execute one decoded command on conn's node; the reply goes into out. The net passes its
 * own publish, so that redis.c, below net.c, never calls up into it. */
void elk_sim_redis_exec(elk_sim_net_t *net, elk_sim_conn_t *conn, const elk_resp_reply_t *cmd,
                        elk_sim_reply_t *out, elk_sim_publish_fn publish);
/* Reset a node to an empty, running server. */
void elk_sim_redis_init(elk_sim_redis_t *node, uint8_t index, const uint64_t *true_now_us);
/* Queue bytes from the node towards the gateway; fails the connection if they do not fit. */
void elk_sim_net_send_down(elk_sim_net_t *net, elk_sim_conn_t *conn, const uint8_t *p, size_t len);

#endif /* ELK_SIM_INTERNAL_H */
