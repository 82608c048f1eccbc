/* [webhook "NAME"] delivery of event revisions (webhook.c). */
#ifndef KP_WEBD_WEBHOOK_H
#define KP_WEBD_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "keeppeek.pb.h"

void webd_webhooks_init(uv_loop_t *loop);
/* The webhooks of cfg; a changed or removed one loses what waited for it. */
void webd_webhooks_configure(const kp_WorkerConfig *cfg);
/* One committed revision and its JSON, queued for every webhook that wants it. */
void webd_webhooks_on_event(const kp_EventRecord *e, const char *json, size_t len);
/* Whether some webhook wants e: else its JSON need not be rendered for them. */
bool webd_webhooks_want(const kp_EventRecord *e);
void webd_webhooks_close(void);
/* Prometheus text, per webhook: up, delivered, failures, dropped, queue depth. */
void webd_webhooks_metrics(char *buf, size_t len);

#endif
