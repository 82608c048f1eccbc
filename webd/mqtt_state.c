/* What webd publishes over MQTT (keeppeek-api(7), MQTT): PREFIX/events (every event
 * revision), and per camera, retained: PREFIX/CAMERA/motion ("ON" while an alarm of the
 * camera itself is active), PREFIX/CAMERA/LABEL (how many active events carry LABEL),
 * PREFIX/CAMERA/snapshot (the JPEG of its latest event that had one),
 * PREFIX/CAMERA/STREAM/state (the ingest state from the supervisor), and the Home
 * Assistant discovery documents of all of them, removed when the camera is.
 *
 * An event is active from its arrival until [mqtt] active_secs after its end (its start
 * when it has none); a newer revision replaces it. At most MQS_ACTIVE_MAX events are
 * tracked (the one that ends first goes), at most MQS_LABELS_MAX labels a camera. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "mqtt.h"

#define MQS_ACTIVE_MAX 1024
#define MQS_LABELS_MAX 16
#define MQS_EXPIRE_MS  1000
#define MQS_TOPIC_MAX  256
#define MQS_DOC_MAX    2048

struct active {
	bool used;
	bool motion; /* an alarm of the camera itself (source "camera") */
	char id[65];
	char camera[KP_CAMERA_NAME_MAX + 1];
	int64_t until_ms;
	unsigned nlabels;
	char labels[MQS_LABELS_MAX][33];
};

struct cam {
	bool used;
	char name[KP_CAMERA_NAME_MAX + 1];
	bool streams[2];
	char state[2][16];
	unsigned nlabels;
	char labels[MQS_LABELS_MAX][33];
	bool announced; /* discovery documents published */
};

static const char *const stream_names[2] = {"main", "sub"};

static struct {
	bool on;
	char prefix[65];
	char disc[65]; /* empty: no discovery */
	char node[65]; /* client id as a discovery node id */
	unsigned active_secs;
	uv_timer_t expire;
	bool timer;
	struct active act[MQS_ACTIVE_MAX];
	struct cam cams[KP_MAX_CAMERAS];
	uint64_t events, evicted, labels_refused;
} S;

static void topic(char *out, const char *cam, const char *a, const char *b)
{
	if (b)
		snprintf(out, MQS_TOPIC_MAX, "%s/%s/%s/%s", S.prefix, cam, a, b);
	else
		snprintf(out, MQS_TOPIC_MAX, "%s/%s/%s", S.prefix, cam, a);
}

/* A label as one topic level: no '/', '+', '#'; "motion" and "snapshot" are the
 * camera's own topics, so those labels have no count topic. */
static bool label_ok(const char *l)
{
	return l[0] && l[0] != '$' && strcspn(l, "/+#") == strlen(l) && strcmp(l, "motion") && strcmp(l, "snapshot");
}

static struct cam *cam_find(const char *name)
{
	for (unsigned i = 0; i < KP_MAX_CAMERAS; i++)
		if (S.cams[i].used && !strcmp(S.cams[i].name, name))
			return &S.cams[i];
	return NULL;
}

static void device(struct json_w *w, const struct cam *c)
{
	char id[160];
	snprintf(id, sizeof id, "%s_%s", S.node, c->name);
	jw_key(w, "availability_topic");
	char avail[MQS_TOPIC_MAX];
	snprintf(avail, sizeof avail, "%s/available", S.prefix);
	jw_str(w, avail);
	jw_key(w, "device");
	jw_obj(w);
	jw_key(w, "identifiers");
	jw_arr(w);
	jw_str(w, id);
	jw_arr_end(w);
	jw_key(w, "name");
	jw_str(w, c->name);
	jw_key(w, "manufacturer");
	jw_str(w, "KeepPeek");
	jw_key(w, "model");
	jw_str(w, "camera");
	jw_obj_end(w);
}

/* One discovery document: DISC/COMPONENT/NODE/OBJECT/config. state_key names the
 * topic key of the component ("state_topic", or "topic" for a camera). */
static void announce(const struct cam *c, const char *component, const char *object, const char *name,
		     const char *state_key, const char *state_topic, const char *extra_key, const char *extra_val)
{
	char t[MQS_TOPIC_MAX], uid[200];
	snprintf(t, sizeof t, "%s/%s/%s/%s_%s/config", S.disc, component, S.node, c->name, object);
	snprintf(uid, sizeof uid, "%s_%s_%s", S.node, c->name, object);
	char doc[MQS_DOC_MAX];
	struct json_w w;
	jw_init(&w, doc, sizeof doc);
	jw_obj(&w);
	jw_key(&w, "name");
	jw_str(&w, name);
	jw_key(&w, "unique_id");
	jw_str(&w, uid);
	jw_key(&w, state_key);
	jw_str(&w, state_topic);
	if (extra_key) {
		jw_key(&w, extra_key);
		jw_str(&w, extra_val);
	}
	if (!strcmp(component, "binary_sensor")) {
		jw_key(&w, "payload_on");
		jw_str(&w, "ON");
		jw_key(&w, "payload_off");
		jw_str(&w, "OFF");
	}
	device(&w, c);
	jw_obj_end(&w);
	size_t len;
	if (jw_finish(&w, &len) < 0) {
		kp_err("mqtt: discovery document %s does not fit %zu bytes", t, sizeof doc);
		return;
	}
	mqc_set(t, doc, len);
}

static void unannounce(const struct cam *c, const char *component, const char *object)
{
	char t[MQS_TOPIC_MAX];
	snprintf(t, sizeof t, "%s/%s/%s/%s_%s/config", S.disc, component, S.node, c->name, object);
	mqc_clear(t);
}

static void announce_label(const struct cam *c, const char *label)
{
	if (!S.disc[0] || !label_ok(label))
		return;
	char t[MQS_TOPIC_MAX], name[64];
	topic(t, c->name, label, NULL);
	snprintf(name, sizeof name, "%s count", label);
	announce(c, "sensor", label, name, "state_topic", t, NULL, NULL);
}

static void announce_stream(const struct cam *c, unsigned k)
{
	if (!S.disc[0])
		return;
	char t[MQS_TOPIC_MAX], object[16], name[32];
	topic(t, c->name, stream_names[k], "state");
	snprintf(object, sizeof object, "%s_state", stream_names[k]);
	snprintf(name, sizeof name, "%s stream", stream_names[k]);
	announce(c, "sensor", object, name, "state_topic", t, NULL, NULL);
}

/* A stream no longer used (streams = changed): its state topic and sensor cleared. */
static void remove_stream(const struct cam *c, unsigned k)
{
	char t[MQS_TOPIC_MAX], object[16];
	if (S.disc[0]) {
		snprintf(object, sizeof object, "%s_state", stream_names[k]);
		unannounce(c, "sensor", object);
	}
	topic(t, c->name, stream_names[k], "state");
	mqc_clear(t);
}

static void announce_camera(struct cam *c)
{
	if (!S.disc[0])
		return;
	char t[MQS_TOPIC_MAX];
	topic(t, c->name, "motion", NULL);
	announce(c, "binary_sensor", "motion", "Motion", "state_topic", t, "device_class", "motion");
	topic(t, c->name, "snapshot", NULL);
	announce(c, "camera", "snapshot", "Snapshot", "topic", t, NULL, NULL);
	for (unsigned k = 0; k < 2; k++)
		if (c->streams[k])
			announce_stream(c, k);
	for (unsigned i = 0; i < c->nlabels; i++)
		announce_label(c, c->labels[i]);
	c->announced = true;
}

/* Every retained topic of a removed camera cleared, its discovery documents first. */
static void remove_camera(struct cam *c)
{
	char t[MQS_TOPIC_MAX];
	if (S.disc[0]) {
		unannounce(c, "binary_sensor", "motion");
		unannounce(c, "camera", "snapshot");
		for (unsigned k = 0; k < 2; k++) {
			char object[16];
			snprintf(object, sizeof object, "%s_state", stream_names[k]);
			unannounce(c, "sensor", object);
		}
		for (unsigned i = 0; i < c->nlabels; i++)
			if (label_ok(c->labels[i]))
				unannounce(c, "sensor", c->labels[i]);
	}
	topic(t, c->name, "motion", NULL);
	mqc_clear(t);
	topic(t, c->name, "snapshot", NULL);
	mqc_clear(t);
	for (unsigned k = 0; k < 2; k++) {
		topic(t, c->name, stream_names[k], "state");
		mqc_clear(t);
	}
	for (unsigned i = 0; i < c->nlabels; i++)
		if (label_ok(c->labels[i])) {
			topic(t, c->name, c->labels[i], NULL);
			mqc_clear(t);
		}
	memset(c, 0, sizeof *c);
}

static bool has_label(const struct active *a, const char *l)
{
	for (unsigned i = 0; i < a->nlabels; i++)
		if (!strcmp(a->labels[i], l))
			return true;
	return false;
}

/* motion and the label counts of camera c from the active events. */
static void recount(struct cam *c)
{
	bool motion = false;
	unsigned counts[MQS_LABELS_MAX] = {0};
	for (unsigned i = 0; i < MQS_ACTIVE_MAX; i++) {
		const struct active *a = &S.act[i];
		if (!a->used || strcmp(a->camera, c->name))
			continue;
		motion |= a->motion;
		for (unsigned l = 0; l < c->nlabels; l++)
			counts[l] += has_label(a, c->labels[l]);
	}
	char t[MQS_TOPIC_MAX], v[16];
	topic(t, c->name, "motion", NULL);
	mqc_set(t, motion ? "ON" : "OFF", motion ? 2 : 3);
	for (unsigned l = 0; l < c->nlabels; l++) {
		if (!label_ok(c->labels[l]))
			continue;
		topic(t, c->name, c->labels[l], NULL);
		int n = snprintf(v, sizeof v, "%u", counts[l]);
		mqc_set(t, v, (size_t)n);
	}
}

static void learn_labels(struct cam *c, const kp_EventRecord *e)
{
	for (pb_size_t i = 0; i < e->labels_count; i++) {
		const char *l = e->labels[i].name;
		bool known = false;
		for (unsigned k = 0; k < c->nlabels && !known; k++)
			known = !strcmp(c->labels[k], l);
		if (known)
			continue;
		if (c->nlabels >= MQS_LABELS_MAX) {
			S.labels_refused++;
			continue;
		}
		snprintf(c->labels[c->nlabels++], sizeof c->labels[0], "%s", l);
		if (c->announced)
			announce_label(c, l);
	}
}

static struct active *active_slot(const char *id)
{
	struct active *free_slot = NULL, *soonest = NULL;
	for (unsigned i = 0; i < MQS_ACTIVE_MAX; i++) {
		struct active *a = &S.act[i];
		if (a->used && !strcmp(a->id, id))
			return a;
		if (!a->used && !free_slot)
			free_slot = a;
		if (a->used && (!soonest || a->until_ms < soonest->until_ms))
			soonest = a;
	}
	if (free_slot)
		return free_slot;
	S.evicted++;
	struct cam *c = cam_find(soonest->camera);
	soonest->used = false;
	if (c)
		recount(c);
	return soonest;
}

bool webd_mqtt_wants_events(void)
{
	return S.on;
}

void webd_mqtt_on_event(const kp_EventRecord *e, const char *json, size_t json_len, const uint8_t *jpeg,
			size_t jpeg_len)
{
	if (!S.on)
		return;
	S.events++;
	char t[MQS_TOPIC_MAX];
	snprintf(t, sizeof t, "%s/events", S.prefix);
	mqc_queue(t, json, json_len);
	struct cam *c = cam_find(e->camera);
	if (!c)
		return;
	if (jpeg_len) {
		topic(t, c->name, "snapshot", NULL);
		if (mqc_set(t, jpeg, jpeg_len) < 0)
			kp_warn("mqtt: %s: the snapshot of event %s (%zu bytes) is not kept: retained values are full",
				c->name, e->event_id, jpeg_len);
	}
	learn_labels(c, e);
	int64_t end = e->end_ms > e->start_ms ? e->end_ms : e->start_ms;
	int64_t until = end + (int64_t)S.active_secs * 1000;
	struct active *a = active_slot(e->event_id);
	struct cam *before = a->used && strcmp(a->camera, c->name) ? cam_find(a->camera) : NULL;
	memset(a, 0, sizeof *a);
	if (until > kp_wall_ms()) {
		a->used = true;
		a->motion = !strcmp(e->source, "camera");
		snprintf(a->id, sizeof a->id, "%s", e->event_id);
		snprintf(a->camera, sizeof a->camera, "%s", e->camera);
		a->until_ms = until;
		for (pb_size_t i = 0; i < e->labels_count && a->nlabels < MQS_LABELS_MAX; i++)
			snprintf(a->labels[a->nlabels++], sizeof a->labels[0], "%s", e->labels[i].name);
	}
	if (before)
		recount(before);
	recount(c);
}

static void expire_cb(uv_timer_t *t)
{
	(void)t;
	int64_t now = kp_wall_ms();
	for (unsigned i = 0; i < MQS_ACTIVE_MAX; i++) {
		struct active *a = &S.act[i];
		if (!a->used || a->until_ms > now)
			continue;
		a->used = false;
		struct cam *c = cam_find(a->camera);
		if (c)
			recount(c);
	}
}

static void publish_streams(struct cam *c)
{
	char t[MQS_TOPIC_MAX];
	for (unsigned k = 0; k < 2; k++) {
		if (!c->streams[k])
			continue;
		topic(t, c->name, stream_names[k], "state");
		mqc_set(t, c->state[k], strlen(c->state[k]));
	}
}

void webd_mqtt_on_states(const kp_CameraStates *cs)
{
	if (!S.on)
		return;
	bool seen[KP_MAX_CAMERAS] = {false};
	bool had[KP_MAX_CAMERAS][2];
	for (unsigned k = 0; k < KP_MAX_CAMERAS; k++)
		for (unsigned j = 0; j < 2; j++) {
			had[k][j] = S.cams[k].streams[j];
			S.cams[k].streams[j] = false;
		}
	for (pb_size_t i = 0; i < cs->streams_count; i++) {
		const kp_CameraStreamState *st = &cs->streams[i];
		if (st->stream > 1)
			continue;
		struct cam *c = cam_find(st->camera);
		if (!c)
			for (unsigned k = 0; k < KP_MAX_CAMERAS && !c; k++)
				if (!S.cams[k].used)
					c = &S.cams[k];
		if (!c)
			continue;
		if (!c->used) {
			c->used = true;
			snprintf(c->name, sizeof c->name, "%s", st->camera);
		}
		seen[c - S.cams] = true;
		c->streams[st->stream] = true;
		snprintf(c->state[st->stream], sizeof c->state[0], "%s", st->state);
	}
	for (unsigned k = 0; k < KP_MAX_CAMERAS; k++) {
		struct cam *c = &S.cams[k];
		if (!c->used)
			continue;
		if (!seen[k]) {
			kp_info("mqtt: camera %s removed: its topics and discovery documents cleared", c->name);
			remove_camera(c);
			continue;
		}
		for (unsigned j = 0; j < 2; j++)
			if (had[k][j] && !c->streams[j])
				remove_stream(c, j);
		if (!c->announced)
			announce_camera(c);
		else
			for (unsigned j = 0; j < 2; j++)
				if (!had[k][j] && c->streams[j])
					announce_stream(c, j);
		publish_streams(c);
		recount(c);
	}
}

/* The client id as a discovery node id: [A-Za-z0-9_-] only. */
static void node_id(char *out, size_t len, const char *id)
{
	size_t i = 0;
	for (; id[i] && i + 1 < len; i++) {
		char ch = id[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-';
		out[i] = ok ? ch : '_';
	}
	out[i] = '\0';
}

void webd_mqtt_init(uv_loop_t *loop)
{
	mqc_init(loop);
	if (uv_timer_init(loop, &S.expire) < 0) {
		kp_err("mqtt: cannot create the expiry timer");
		return;
	}
	S.timer = true;
}

void webd_mqtt_configure(const kp_WorkerConfig *cfg)
{
	static struct mqc_conf c;
	memset(&c, 0, sizeof c);
	snprintf(c.host, sizeof c.host, "%s", cfg->mqtt_host);
	c.port = cfg->mqtt_port ? cfg->mqtt_port : 1883;
	c.tls = cfg->mqtt_tls;
	c.ca_len = cfg->mqtt_tls_ca_pem.size;
	memcpy(c.ca_pem, cfg->mqtt_tls_ca_pem.bytes, c.ca_len);
	snprintf(c.user, sizeof c.user, "%s", cfg->mqtt_user);
	snprintf(c.password, sizeof c.password, "%s", cfg->mqtt_password);
	snprintf(c.client_id, sizeof c.client_id, "%s", cfg->mqtt_client_id[0] ? cfg->mqtt_client_id : "keeppeek");
	c.qos = cfg->mqtt_qos <= 2 ? cfg->mqtt_qos : 0;
	const char *prefix = cfg->mqtt_topic_prefix[0] ? cfg->mqtt_topic_prefix : "keeppeek";
	snprintf(c.will_topic, sizeof c.will_topic, "%s/available", prefix);
	bool running = mqc_enabled();
	bool same = running && !strcmp(S.prefix, prefix) && !strcmp(S.disc, cfg->mqtt_discovery_prefix);
	S.active_secs = cfg->mqtt_active_secs ? cfg->mqtt_active_secs : 30;
	if (same) {
		/* Only the connection may have changed; what is kept stays. */
		mqc_configure(&c);
		return;
	}
	if (running)
		mqc_stop();
	S.on = false;
	memset(S.cams, 0, sizeof S.cams);
	memset(S.act, 0, sizeof S.act);
	if (S.timer)
		uv_timer_stop(&S.expire);
	if (!c.host[0] || mqc_configure(&c) < 0 || !mqc_enabled())
		return;
	snprintf(S.prefix, sizeof S.prefix, "%s", prefix);
	snprintf(S.disc, sizeof S.disc, "%s", cfg->mqtt_discovery_prefix);
	node_id(S.node, sizeof S.node, c.client_id);
	S.on = true;
	mqc_set(c.will_topic, "online", 6);
	if (S.timer && uv_timer_start(&S.expire, expire_cb, MQS_EXPIRE_MS, MQS_EXPIRE_MS) < 0)
		kp_err("mqtt: cannot start the expiry timer");
}

void webd_mqtt_close(void)
{
	mqc_close();
	if (S.timer) {
		uv_close((uv_handle_t *)&S.expire, NULL);
		S.timer = false;
	}
	S.on = false;
}

void webd_mqtt_metrics(char *buf, size_t len)
{
	struct mqc_metrics m;
	mqc_metrics(&m);
	snprintf(buf, len,
		 "# TYPE keeppeek_webd_mqtt_enabled gauge\nkeeppeek_webd_mqtt_enabled %d\n"
		 "# TYPE keeppeek_webd_mqtt_connected gauge\nkeeppeek_webd_mqtt_connected %d\n"
		 "# TYPE keeppeek_webd_mqtt_published_total counter\nkeeppeek_webd_mqtt_published_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mqtt_dropped_total counter\nkeeppeek_webd_mqtt_dropped_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mqtt_queue_depth gauge\nkeeppeek_webd_mqtt_queue_depth %u\n"
		 "# TYPE keeppeek_webd_mqtt_queue_bytes gauge\nkeeppeek_webd_mqtt_queue_bytes %zu\n"
		 "# TYPE keeppeek_webd_mqtt_inflight gauge\nkeeppeek_webd_mqtt_inflight %u\n"
		 "# TYPE keeppeek_webd_mqtt_connects_total counter\nkeeppeek_webd_mqtt_connects_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mqtt_connect_failures_total counter\n"
		 "keeppeek_webd_mqtt_connect_failures_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mqtt_retained_refused_total counter\n"
		 "keeppeek_webd_mqtt_retained_refused_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mqtt_events_total counter\nkeeppeek_webd_mqtt_events_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mqtt_active_evicted_total counter\n"
		 "keeppeek_webd_mqtt_active_evicted_total %" PRIu64 "\n"
		 "# TYPE keeppeek_webd_mqtt_labels_refused_total counter\n"
		 "keeppeek_webd_mqtt_labels_refused_total %" PRIu64 "\n",
		 S.on, m.connected, m.published, m.dropped, m.queued, m.queue_bytes, m.inflight, m.connects, m.failures,
		 m.retain_refused, S.events, S.evicted, S.labels_refused);
}
