/* Events and camera states on their way out of KeepPeek (docs/decisions/0018): each
 * EventCommitted rendered once, with the one event renderer (common/event_json.c), for
 * MQTT (mqtt_state.c) and the webhooks (webhook.c); CameraStates from the supervisor
 * to MQTT; the configuration to both. */
#include <string.h>

#include "event_json.h"
#include "json.h"
#include "log.h"
#include "mqtt.h"
#include "webd.h"
#include "webhook.h"

void webd_integrations_init(uv_loop_t *loop)
{
	webd_mqtt_init(loop);
	webd_webhooks_init(loop);
}

void webd_integrations_configure(const kp_WorkerConfig *cfg)
{
	webd_mqtt_configure(cfg);
	webd_webhooks_configure(cfg);
}

void webd_integrations_on_event(struct kp_ipc_frame *f)
{
	const kp_EventCommitted *ec = &f->env->msg.event_committed;
	/* No JSON to render when neither MQTT nor a webhook takes this event. */
	if (!ec->has_event || (!webd_mqtt_wants_events() && !webd_webhooks_want(&ec->event)))
		return;
	static char json[KP_EVENT_JSON_MAX];
	struct json_w w;
	jw_init(&w, json, sizeof json);
	kp_event_json(&w, &ec->event, f->tail_len, ec->keyframes, ec->keyframes_count);
	size_t len;
	if (jw_finish(&w, &len) < 0) {
		kp_err("integrations: event %s: its JSON does not fit %zu bytes; not published", ec->event.event_id,
		       sizeof json);
		return;
	}
	webd_mqtt_on_event(&ec->event, json, len, f->tail, f->tail_len);
	webd_webhooks_on_event(&ec->event, json, len);
}

void webd_integrations_on_states(struct kp_ipc_frame *f)
{
	webd_mqtt_on_states(&f->env->msg.camera_states);
}

void webd_integrations_close(void)
{
	webd_mqtt_close();
	webd_webhooks_close();
}

void webd_integrations_metrics(char *buf, size_t len)
{
	webd_mqtt_metrics(buf, len);
	size_t used = strlen(buf);
	webd_webhooks_metrics(buf + used, len - used);
}
