/* MQTT in webd (docs/decisions/0018): the connection and its queues (mqtt_client.c),
 * and what is published on it (mqtt_state.c): events, motion, label counts, snapshots,
 * stream states and Home Assistant discovery. */
#ifndef KP_WEBD_MQTT_H
#define KP_WEBD_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "keeppeek.pb.h"
#include "kp_limits.h"

struct mqc_conf {
	char host[256];
	unsigned port;
	bool tls;
	uint8_t ca_pem[16384];
	size_t ca_len;
	char user[128];
	char password[256];
	char client_id[65];
	unsigned qos;
	char will_topic[80]; /* PREFIX/available */
};

struct mqc_metrics {
	bool connected;
	uint64_t published, dropped, connects, failures, retain_refused;
	unsigned queued, inflight;
	size_t queue_bytes;
};

/* ---- the connection (mqtt_client.c) ---- */
#define MQC_QUEUE_ITEMS  256           /* event messages waiting for the broker */
#define MQC_QUEUE_BYTES  (8 * KP_MIB)  /* and their bytes */
#define MQC_RETAIN_BYTES (64 * KP_MIB) /* all retained values together (snapshots) */

void mqc_init(uv_loop_t *loop);
/* Connects (again) when c differs from the running configuration; no host: off. */
int mqc_configure(const struct mqc_conf *c);
bool mqc_enabled(void);
/* Retained state: the value of topic from now on (published when it changed and after
 * each connection); -ENOSPC when all retained values would pass their bound. */
int mqc_set(const char *topic, const void *payload, size_t len);
/* The retained value of topic removed at the broker (an empty retained message). */
void mqc_clear(const char *topic);
/* One event message, queued (oldest dropped when full). */
void mqc_queue(const char *topic, const void *payload, size_t len);
void mqc_stop(void);
void mqc_close(void);
void mqc_metrics(struct mqc_metrics *m);

/* ---- what is published (mqtt_state.c) ---- */
void webd_mqtt_init(uv_loop_t *loop);
void webd_mqtt_configure(const kp_WorkerConfig *cfg);
/* One committed event revision: its JSON (the one rendering of common/event_json.c) and
 * its JPEG, if any. */
void webd_mqtt_on_event(const kp_EventRecord *e, const char *json, size_t json_len, const uint8_t *jpeg,
			size_t jpeg_len);
/* Whether webd_mqtt_on_event does anything (MQTT configured): else the event's JSON need
 * not be rendered for it. */
bool webd_mqtt_wants_events(void);
void webd_mqtt_on_states(const kp_CameraStates *cs);
void webd_mqtt_close(void);
void webd_mqtt_metrics(char *buf, size_t len);

#endif
