/* The MQTT connection of webd (docs/decisions/0018): libmosquitto without its thread,
 * driven by webd's loop (a uv_poll on its socket, a one-second timer for keepalive),
 * the broker's name resolved by uv_getaddrinfo so that nothing blocks the loop, TLS
 * through an SSL_CTX made here from the CA text the supervisor sent. A last will sets
 * PREFIX/available to "offline"; the connection is tried again after 1 s, doubling up
 * to 30 s.
 *
 * Two kinds of message wait here. Retained state (mqc_set, mqc_clear) is kept, one
 * value a topic, and published when it changes and again after each connection, so a
 * broker that lost it gets it back. Event messages (mqc_queue) wait in a queue of at
 * most MQC_QUEUE_ITEMS messages and MQC_QUEUE_BYTES bytes; a message that does not fit
 * drops the oldest ones, counted. At most MQC_INFLIGHT messages are handed to
 * libmosquitto at a time (its own queue is unbounded): nothing here waits for the
 * broker, and nothing that publishes waits for this file. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <mosquitto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "log.h"
#include "mqtt.h"

#define MQC_INFLIGHT    16
#define MQC_BACKOFF_MS  1000
#define MQC_BACKOFF_MAX 30000
#define MQC_KEEPALIVE_S 30
#define MQC_MISC_MS     1000
#define MQC_CONNECT_MS  10000 /* no CONNACK this long after connect(2): try again */
#define MQC_ADDRS       4     /* addresses of the broker's name tried before waiting */

struct slot {
	struct slot *next;
	char *topic;
	uint8_t *payload;
	size_t len;
	bool dirty;
	bool clear; /* an empty retained payload; forgotten once published */
};

struct qmsg {
	char *topic;
	uint8_t *payload;
	size_t len;
};

static struct {
	uv_loop_t *loop;
	struct mosquitto *m;
	SSL_CTX *ssl;
	struct mqc_conf conf;
	bool enabled;
	bool connected;  /* CONNACK accepted */
	bool connecting; /* resolving or waiting for CONNACK */
	bool stopping;
	bool refused;    /* the broker's CONNACK said no */
	uv_poll_t *poll; /* on the current socket; freed when closed */
	int poll_fd;
	uv_timer_t misc, retry;
	bool timers;
	uv_getaddrinfo_t *resolving; /* the request in flight (its callback frees it) */
	char addrs[MQC_ADDRS][64];   /* the broker's addresses, tried in order */
	unsigned naddrs, next_addr;
	uint64_t backoff_ms;
	uint64_t connect_started;
	struct slot *slots;
	size_t retained_bytes;
	unsigned dirty;
	struct qmsg q[MQC_QUEUE_ITEMS];
	unsigned qhead, qcount;
	size_t qbytes;
	unsigned inflight;
	uint64_t published, dropped, connects, failures, retain_refused;
	char tls_why[160]; /* why the broker's certificate was refused, this attempt */
} C;

static void schedule_retry(const char *why);
static void pump(void);
static void disconnect_client(void);
static void try_next(void);

static void poll_closed(uv_handle_t *h)
{
	free(h);
}

static void poll_stop(void)
{
	if (C.poll) {
		uv_close((uv_handle_t *)C.poll, poll_closed);
		C.poll = NULL;
	}
	C.poll_fd = -1;
}

/* The connection ended (rc from libmosquitto): what was handed over of QoS 0 is gone
 * with it (counted as dropped); QoS 1 and 2 messages libmosquitto sends again. */
static void lost(int rc)
{
	bool was = C.connected;
	C.connected = false;
	C.connecting = false;
	poll_stop();
	if (C.conf.qos == 0) {
		C.dropped += C.inflight;
		C.inflight = 0;
	}
	if (was) {
		kp_warn("mqtt: connection to %s:%u lost: %s", C.conf.host, C.conf.port, mosquitto_strerror(rc));
	} else {
		/* Refused, reset, a TLS handshake or certificate check failed, no CONNACK. */
		kp_warn("mqtt: cannot connect to %s:%u (%s): %s%s%s", C.conf.host, C.conf.port,
			C.next_addr ? C.addrs[C.next_addr - 1] : "?",
			rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc),
			C.tls_why[0] ? " The broker's certificate was refused: " : "", C.tls_why);
		if (C.next_addr < C.naddrs) {
			try_next(); /* the name's next address, at once */
			return;
		}
		C.failures++; /* a connect fails once, when every address of the name has */
	}
	schedule_retry(mosquitto_strerror(rc));
}

static void poll_update(void);

static void poll_cb(uv_poll_t *h, int status, int events)
{
	(void)h;
	int rc = MOSQ_ERR_SUCCESS;
	if (status < 0)
		rc = MOSQ_ERR_CONN_LOST;
	if (rc == MOSQ_ERR_SUCCESS && (events & UV_READABLE))
		rc = mosquitto_loop_read(C.m, 1);
	if (rc == MOSQ_ERR_SUCCESS && (events & UV_WRITABLE))
		rc = mosquitto_loop_write(C.m, 1);
	if (rc == MOSQ_ERR_SUCCESS && C.refused) {
		C.refused = false;
		mosquitto_disconnect(C.m);
		rc = MOSQ_ERR_CONN_REFUSED;
	}
	if (rc != MOSQ_ERR_SUCCESS) {
		lost(rc);
		return;
	}
	pump();
	poll_update();
}

/* Watches the socket libmosquitto uses now: readable always, writable while it has
 * something to write. */
static void poll_update(void)
{
	int fd = C.m ? mosquitto_socket(C.m) : -1;
	if (fd < 0) {
		poll_stop();
		return;
	}
	if (C.poll && C.poll_fd != fd)
		poll_stop();
	if (!C.poll) {
		C.poll = malloc(sizeof *C.poll);
		if (!C.poll) {
			kp_err("mqtt: out of memory for the socket watcher");
			return;
		}
		int r = uv_poll_init_socket(C.loop, C.poll, fd);
		if (r < 0) {
			kp_err("mqtt: cannot watch socket %d: %s", fd, uv_strerror(r));
			free(C.poll);
			C.poll = NULL;
			return;
		}
		C.poll_fd = fd;
	}
	int ev = UV_READABLE | (mosquitto_want_write(C.m) ? UV_WRITABLE : 0);
	int r = uv_poll_start(C.poll, ev, poll_cb);
	if (r < 0)
		kp_err("mqtt: cannot watch socket %d: %s", fd, uv_strerror(r));
}

static void on_connect(struct mosquitto *m, void *arg, int rc)
{
	(void)m;
	(void)arg;
	C.connecting = false;
	if (rc != 0) {
		kp_warn("mqtt: %s:%u refused the connection: %s", C.conf.host, C.conf.port,
			mosquitto_connack_string(rc));
		C.refused = true; /* counted by lost() */
		return;
	}
	kp_info("mqtt: connected to %s:%u", C.conf.host, C.conf.port);
	C.connected = true;
	C.connects++;
	C.next_addr = C.naddrs; /* the next loss resolves the name again */
	C.backoff_ms = 0;
	C.inflight = 0; /* what the last connection left unconfirmed is not waited for */
	/* The broker may have lost what it retained: everything again. */
	C.dirty = 0;
	for (struct slot *s = C.slots; s; s = s->next) {
		s->dirty = true;
		C.dirty++;
	}
}

static void on_publish(struct mosquitto *m, void *arg, int mid)
{
	(void)m;
	(void)arg;
	(void)mid;
	if (C.inflight)
		C.inflight--;
	C.published++;
}

/* The next address of the broker's name, or the retry timer when none is left. */
static void try_next(void)
{
	while (C.next_addr < C.naddrs) {
		const char *addr = C.addrs[C.next_addr++];
		C.connect_started = uv_now(C.loop);
		C.tls_why[0] = '\0';
		C.connecting = true;
		int rc = mosquitto_connect_async(C.m, addr, (int)C.conf.port, MQC_KEEPALIVE_S);
		if (rc == MOSQ_ERR_SUCCESS) {
			poll_update();
			return;
		}
		C.connecting = false;
		kp_warn("mqtt: cannot connect to %s:%u (%s): %s", C.conf.host, C.conf.port, addr,
			rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc));
	}
	C.failures++;
	schedule_retry("no address answered");
}

static void resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	bool current = req == C.resolving;
	if (current)
		C.resolving = NULL;
	free(req);
	if (!current || !C.enabled || C.stopping) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0 || !res) {
		uv_freeaddrinfo(res);
		C.failures++;
		kp_warn("mqtt: cannot resolve %s: %s", C.conf.host, uv_strerror(status));
		schedule_retry("name not resolved");
		return;
	}
	C.naddrs = C.next_addr = 0;
	for (struct addrinfo *a = res; a && C.naddrs < MQC_ADDRS; a = a->ai_next)
		if (uv_ip_name(a->ai_addr, C.addrs[C.naddrs], sizeof C.addrs[0]) == 0)
			C.naddrs++;
	uv_freeaddrinfo(res);
	try_next();
}

static void connect_now(void)
{
	if (!C.enabled || C.stopping || C.resolving || C.connecting || C.connected)
		return;
	uv_getaddrinfo_t *req = malloc(sizeof *req);
	if (!req) {
		schedule_retry("out of memory");
		return;
	}
	char port[8];
	snprintf(port, sizeof port, "%u", C.conf.port);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	int r = uv_getaddrinfo(C.loop, req, resolved, C.conf.host, port, &hints);
	if (r < 0) {
		free(req);
		kp_warn("mqtt: cannot resolve %s: %s", C.conf.host, uv_strerror(r));
		schedule_retry("name not resolved");
		return;
	}
	C.resolving = req;
}

static void retry_cb(uv_timer_t *t)
{
	(void)t;
	connect_now();
}

static void schedule_retry(const char *why)
{
	if (!C.enabled || C.stopping)
		return;
	C.backoff_ms = C.backoff_ms ? C.backoff_ms * 2 : MQC_BACKOFF_MS;
	if (C.backoff_ms > MQC_BACKOFF_MAX)
		C.backoff_ms = MQC_BACKOFF_MAX;
	kp_debug("mqtt: next try in %" PRIu64 " ms (%s)", C.backoff_ms, why);
	int r = uv_timer_start(&C.retry, retry_cb, C.backoff_ms, 0);
	if (r < 0)
		kp_err("mqtt: cannot start the retry timer: %s", uv_strerror(r));
}

static void misc_cb(uv_timer_t *t)
{
	(void)t;
	if (!C.m || (!C.connected && !C.connecting))
		return;
	if (C.connecting && uv_now(C.loop) - C.connect_started > MQC_CONNECT_MS) {
		mosquitto_disconnect(C.m);
		lost(MOSQ_ERR_CONN_LOST);
		return;
	}
	int rc = mosquitto_loop_misc(C.m);
	if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_NO_CONN) {
		lost(rc);
		return;
	}
	pump();
	poll_update();
}

static struct slot *slot_find(const char *topic)
{
	for (struct slot *s = C.slots; s; s = s->next)
		if (!strcmp(s->topic, topic))
			return s;
	return NULL;
}

static void slot_free(struct slot *s)
{
	C.retained_bytes -= s->len;
	free(s->topic);
	free(s->payload);
	free(s);
}

static void slot_remove(struct slot *gone)
{
	for (struct slot **p = &C.slots; *p; p = &(*p)->next)
		if (*p == gone) {
			*p = gone->next;
			slot_free(gone);
			return;
		}
}

static int publish(const char *topic, const void *payload, size_t len, bool retain)
{
	if (len > INT32_MAX)
		return -EMSGSIZE;
	/* Counted first: libmosquitto may write a QoS 0 message and call on_publish before
	 * mosquitto_publish returns. */
	C.inflight++;
	int rc = mosquitto_publish(C.m, NULL, topic, (int)len, payload, (int)C.conf.qos, retain);
	if (rc != MOSQ_ERR_SUCCESS) {
		if (C.inflight)
			C.inflight--;
		lost(rc);
		return -EIO;
	}
	return 0;
}

/* Hands over what may go now: changed retained state first, then queued events. */
static void pump(void)
{
	while (C.connected && C.inflight < MQC_INFLIGHT) {
		struct slot *s = NULL;
		if (C.dirty)
			for (s = C.slots; s && !s->dirty; s = s->next)
				;
		if (s) {
			s->dirty = false;
			C.dirty--;
			if (publish(s->topic, s->payload, s->len, true) < 0) {
				s->dirty = true;
				C.dirty++;
				return;
			}
			if (s->clear)
				slot_remove(s);
			continue;
		}
		if (!C.qcount)
			break;
		struct qmsg *m = &C.q[C.qhead];
		if (publish(m->topic, m->payload, m->len, false) < 0)
			return;
		C.qbytes -= m->len;
		free(m->topic);
		free(m->payload);
		C.qhead = (C.qhead + 1) % MQC_QUEUE_ITEMS;
		C.qcount--;
	}
	if (C.connected)
		poll_update();
}

int mqc_set(const char *topic, const void *payload, size_t len)
{
	if (!C.enabled)
		return 0;
	struct slot *s = slot_find(topic);
	if (s && !s->clear && s->len == len && (!len || !memcmp(s->payload, payload, len)))
		return 0;
	size_t others = C.retained_bytes - (s ? s->len : 0);
	if (others + len > MQC_RETAIN_BYTES) {
		C.retain_refused++;
		return -ENOSPC;
	}
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, payload, len);
	if (!s) {
		s = calloc(1, sizeof *s);
		char *t = strdup(topic);
		if (!s || !t) {
			free(s);
			free(t);
			free(copy);
			return -ENOMEM;
		}
		s->topic = t;
		s->next = C.slots;
		C.slots = s;
	}
	C.retained_bytes = others + len;
	free(s->payload);
	s->payload = copy;
	s->len = len;
	s->clear = false;
	if (!s->dirty) {
		s->dirty = true;
		C.dirty++;
	}
	pump();
	return 0;
}

void mqc_clear(const char *topic)
{
	if (!C.enabled)
		return;
	struct slot *s = slot_find(topic);
	if (!s) {
		/* Never set by this process (a camera removed while webd was down): the
		 * broker may still hold it. */
		if (mqc_set(topic, "", 0) < 0 || !(s = slot_find(topic)))
			return;
	}
	C.retained_bytes -= s->len;
	free(s->payload);
	s->payload = NULL;
	s->len = 0;
	s->clear = true;
	if (!s->dirty) {
		s->dirty = true;
		C.dirty++;
	}
	pump();
}

static void q_drop_oldest(void)
{
	struct qmsg *m = &C.q[C.qhead];
	C.qbytes -= m->len;
	free(m->topic);
	free(m->payload);
	C.qhead = (C.qhead + 1) % MQC_QUEUE_ITEMS;
	C.qcount--;
	C.dropped++;
}

void mqc_queue(const char *topic, const void *payload, size_t len)
{
	if (!C.enabled)
		return;
	if (len > MQC_QUEUE_BYTES) {
		C.dropped++;
		return;
	}
	while (C.qcount && (C.qcount >= MQC_QUEUE_ITEMS || C.qbytes + len > MQC_QUEUE_BYTES))
		q_drop_oldest();
	struct qmsg *m = &C.q[(C.qhead + C.qcount) % MQC_QUEUE_ITEMS];
	m->topic = strdup(topic);
	m->payload = malloc(len ? len : 1);
	if (!m->topic || !m->payload) {
		free(m->topic);
		free(m->payload);
		C.dropped++;
		kp_err("mqtt: out of memory for a message to %s; dropped", topic);
		return;
	}
	memcpy(m->payload, payload, len);
	m->len = len;
	C.qbytes += len;
	C.qcount++;
	pump();
}

/* OpenSSL's verdict on each certificate of the broker's chain: the first refusal is
 * kept for the log line of the failed connect (an unknown authority, an expired
 * certificate, a name that does not match). */
static int verify_cb(int ok, X509_STORE_CTX *st)
{
	if (!ok && !C.tls_why[0])
		snprintf(C.tls_why, sizeof C.tls_why, "%s (chain depth %d)",
			 X509_verify_cert_error_string(X509_STORE_CTX_get_error(st)),
			 X509_STORE_CTX_get_error_depth(st));
	return ok;
}

static SSL_CTX *make_ssl(const struct mqc_conf *c)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return NULL;
	bool ok = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1;
	if (ok && c->ca_len) {
		X509_STORE *store = SSL_CTX_get_cert_store(ctx);
		BIO *bio = BIO_new_mem_buf(c->ca_pem, (int)c->ca_len);
		unsigned n = 0;
		X509 *x;
		while (bio && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
			if (X509_STORE_add_cert(store, x) == 1)
				n++;
			X509_free(x);
		}
		ERR_clear_error();
		BIO_free(bio);
		ok = n > 0;
		if (!ok)
			kp_err("mqtt: ca_file holds no PEM certificate");
	} else if (ok) {
		ok = SSL_CTX_set_default_verify_paths(ctx) == 1;
	}
	X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
	unsigned char ip[16];
	bool literal = inet_pton(AF_INET, c->host, ip) == 1 || inet_pton(AF_INET6, c->host, ip) == 1;
	if (ok)
		ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, c->host) == 1
			     : X509_VERIFY_PARAM_set1_host(param, c->host, 0) == 1;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, verify_cb);
	if (!ok) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static void client_free(void)
{
	poll_stop();
	if (C.timers) {
		uv_timer_stop(&C.retry);
		uv_timer_stop(&C.misc);
	}
	C.resolving = NULL; /* its callback sees it is no longer current */
	if (C.m) {
		mosquitto_destroy(C.m);
		C.m = NULL;
	}
	if (C.ssl) {
		SSL_CTX_free(C.ssl);
		C.ssl = NULL;
	}
	C.connected = C.connecting = false;
	C.inflight = 0;
}

static int client_new(const struct mqc_conf *c, const char *will_topic)
{
	C.m = mosquitto_new(c->client_id, true, NULL);
	if (!C.m) {
		kp_err("mqtt: cannot create a client: %s", strerror(errno));
		return -ENOMEM;
	}
	mosquitto_int_option(C.m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
	mosquitto_connect_callback_set(C.m, on_connect);
	mosquitto_publish_callback_set(C.m, on_publish);
	int rc = mosquitto_will_set(C.m, will_topic, 7, "offline", (int)c->qos, true);
	if (rc == MOSQ_ERR_SUCCESS && c->user[0])
		rc = mosquitto_username_pw_set(C.m, c->user, c->password[0] ? c->password : NULL);
	if (rc == MOSQ_ERR_SUCCESS && c->tls) {
		C.ssl = make_ssl(c);
		if (!C.ssl) {
			kp_err("mqtt: cannot set up TLS for %s", c->host);
			return -EINVAL;
		}
		rc = mosquitto_int_option(C.m, MOSQ_OPT_SSL_CTX_WITH_DEFAULTS, 0);
		if (rc == MOSQ_ERR_SUCCESS)
			rc = mosquitto_void_option(C.m, MOSQ_OPT_SSL_CTX, C.ssl);
	}
	if (rc != MOSQ_ERR_SUCCESS) {
		kp_err("mqtt: cannot set up the client: %s", mosquitto_strerror(rc));
		return -EINVAL;
	}
	return 0;
}

void mqc_init(uv_loop_t *loop)
{
	C.loop = loop;
	C.poll_fd = -1;
	mosquitto_lib_init();
	if (uv_timer_init(loop, &C.misc) < 0 || uv_timer_init(loop, &C.retry) < 0) {
		kp_err("mqtt: cannot create its timers");
		return;
	}
	C.timers = true;
}

static bool conf_equal(const struct mqc_conf *a, const struct mqc_conf *b)
{
	return !strcmp(a->host, b->host) && a->port == b->port && a->tls == b->tls && a->ca_len == b->ca_len &&
	       !memcmp(a->ca_pem, b->ca_pem, a->ca_len) && !strcmp(a->user, b->user) &&
	       !strcmp(a->password, b->password) && !strcmp(a->client_id, b->client_id) && a->qos == b->qos &&
	       !strcmp(a->will_topic, b->will_topic);
}

int mqc_configure(const struct mqc_conf *c)
{
	if (C.enabled && conf_equal(&C.conf, c))
		return 0;
	if (C.enabled)
		disconnect_client(); /* what waits stays, for the new connection */
	C.stopping = false;
	C.enabled = false;
	if (!c->host[0] || !C.timers)
		return 0;
	C.conf = *c;
	if (client_new(c, c->will_topic) < 0) {
		client_free();
		return -EINVAL;
	}
	C.enabled = true;
	C.backoff_ms = 0;
	C.dirty = 0;
	for (struct slot *s = C.slots; s; s = s->next) {
		s->dirty = true;
		C.dirty++;
	}
	kp_info("mqtt: publishing to %s:%u%s as %s", c->host, c->port, c->tls ? " (TLS)" : "", c->client_id);
	int r = uv_timer_start(&C.misc, misc_cb, MQC_MISC_MS, MQC_MISC_MS);
	if (r < 0)
		kp_err("mqtt: cannot start the keepalive timer: %s", uv_strerror(r));
	connect_now();
	return 0;
}

bool mqc_enabled(void)
{
	return C.enabled;
}

/* Orderly end of the connection: "offline" on the availability topic, then DISCONNECT
 * (which withholds the will), written as far as the socket takes them now. */
static void disconnect_client(void)
{
	if (C.connected && C.m) {
		mosquitto_publish(C.m, NULL, C.conf.will_topic, 7, "offline", (int)C.conf.qos, true);
		mosquitto_disconnect(C.m);
		for (int i = 0; i < 4 && mosquitto_want_write(C.m); i++)
			if (mosquitto_loop_write(C.m, 1) != MOSQ_ERR_SUCCESS)
				break;
	}
	client_free();
	C.enabled = false;
}

void mqc_stop(void)
{
	C.stopping = true;
	disconnect_client();
	while (C.qcount) {
		q_drop_oldest();
		C.dropped--; /* not dropped: no longer wanted */
	}
	while (C.slots)
		slot_remove(C.slots);
	C.dirty = 0;
}

void mqc_close(void)
{
	mqc_stop();
	if (C.timers) {
		uv_close((uv_handle_t *)&C.misc, NULL);
		uv_close((uv_handle_t *)&C.retry, NULL);
		C.timers = false;
	}
	mosquitto_lib_cleanup();
}

void mqc_metrics(struct mqc_metrics *m)
{
	m->connected = C.connected;
	m->published = C.published;
	m->dropped = C.dropped;
	m->queued = C.qcount + C.dirty;
	m->queue_bytes = C.qbytes;
	m->inflight = C.inflight;
	m->connects = C.connects;
	m->failures = C.failures;
	m->retain_refused = C.retain_refused;
}
