/* The configuration key table (see config_keys.h) and the parser and printer of each
 * key type. Adding a key is a row here, a field in config.h and an entry in
 * keeppeek.conf(5); the lint suite checks the man page against this table. */
#include "config_keys.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define G(f) offsetof(struct kp_config, f)
#define C(f) offsetof(struct kp_camera_conf, f)
#define H(f) offsetof(struct kp_webhook_conf, f)
#define S(f) offsetof(struct kp_site_conf, f)

static const char *const record_values[] = {"continuous", "events", "off", NULL};
static const char *const transport_values[] = {"tcp", "udp", "auto", NULL}; /* enum kp_rtsp_transport */

const char *const kp_config_sections[] = {"keeppeek", "web", "rtc", "retention", "mqtt", "hub", "tier", NULL};

const struct kp_key kp_config_keys[] = {
    {"keeppeek", "data_dir", KP_KEY_STR, KP_KEY_NONEMPTY, KP_USER_SUPERVISOR | KP_USER_RECORDERD, G(data_dir), 0, 0, 0,
     NULL, "/var/lib/keeppeek", "the directory of the catalog and the recordings"},
    {"keeppeek", "run_dir", KP_KEY_STR, KP_KEY_NONEMPTY, KP_USER_SUPERVISOR, G(run_dir), 0, 0, 0, NULL, "/run/keeppeek",
     "the directory of the control socket and the pid file"},
    {"keeppeek", "user", KP_KEY_STR, KP_KEY_NONEMPTY, KP_USER_SUPERVISOR, G(user), 0, 0, 0, NULL, "keeppeek",
     "the unprivileged user the workers run as"},
    {"web", "listen", KP_KEY_LISTEN, 0, KP_USER_WEBD, G(listen), 0, 0, 0, NULL, "127.0.0.1:8080",
     "HOST:PORT addresses of the HTTP server, comma-separated"},
    {"web", "tls_cert", KP_KEY_STR, 0, KP_USER_WEBD, G(tls_cert), 0, 0, 0, NULL, NULL,
     "PEM certificate chain: HTTPS when set with tls_key"},
    {"web", "tls_key", KP_KEY_STR, 0, KP_USER_WEBD, G(tls_key), 0, 0, 0, NULL, NULL, "PEM private key of tls_cert"},
    {"rtc", "udp_ports", KP_KEY_PORT_RANGE, 0, KP_USER_RTCD, G(udp_port_min), G(udp_port_max), 1, 65535, NULL,
     "50000-50100", "UDP ports of WebRTC media, FIRST-LAST"},
    {"rtc", "stun_server", KP_KEY_HOSTPORT, 0, KP_USER_RTCD, G(stun_server), 0, 0, 0, NULL, NULL,
     "HOST:PORT of a STUN server"},
    {"rtc", "addresses", KP_KEY_ADDRESSES, 0, KP_USER_RTCD, G(rtc_addresses), 0, 0, 0, NULL, NULL,
     "IP literals offered as host candidates (at most 8)"},
    {"rtc", "max_transcodes", KP_KEY_UINT, 0, KP_USER_RTCD | KP_USER_TRANSCODER, G(max_transcodes), 0, 1, 64, NULL, "2",
     "H.265 to H.264 transcodes at once"},
    {"retention", "max_disk_gb", KP_KEY_GB, 0, KP_USER_RECORDERD, G(max_disk_mb), 0, 0, 1000000, NULL, "0",
     "disk quota of the recordings in GB (10^9 bytes); 0: none"},
    {"retention", "max_days", KP_KEY_UINT, 0, KP_USER_RECORDERD, G(max_days), 0, 1, 3650, NULL, "30",
     "days recordings are kept"},
    {"mqtt", "host", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_WEBD, G(mqtt_host), 0, 0, 0, NULL, NULL,
     "the MQTT broker's host name or address; unset: no MQTT"},
    {"mqtt", "port", KP_KEY_UINT, 0, KP_USER_WEBD, G(mqtt_port), 0, 1, 65535, NULL, "1883", "the broker's TCP port"},
    {"mqtt", "tls", KP_KEY_BOOL, 0, KP_USER_WEBD, G(mqtt_tls), 0, 0, 0, NULL, "no",
     "TLS to the broker, its certificate checked"},
    {"mqtt", "ca_file", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_WEBD, G(mqtt_ca_file), 0, 0, 0, NULL, NULL,
     "PEM CA certificates of the broker (unset: the system's)"},
    {"mqtt", "user", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_WEBD, G(mqtt_user), 0, 0, 0, NULL, NULL,
     "user name at the broker"},
    {"mqtt", "password", KP_KEY_STR, KP_KEY_OPTIONAL | KP_KEY_SECRET | KP_KEY_HIDDEN, KP_USER_WEBD, G(mqtt_password), 0,
     0, 0, NULL, NULL, "password at the broker (${ENV} or file:PATH)"},
    {"mqtt", "client_id", KP_KEY_STR, KP_KEY_NONEMPTY, KP_USER_WEBD, G(mqtt_client_id), 0, 0, 0, NULL, "keeppeek",
     "MQTT client identifier"},
    {"mqtt", "topic_prefix", KP_KEY_STR, KP_KEY_NONEMPTY, KP_USER_WEBD, G(mqtt_topic_prefix), 0, 0, 0, NULL, "keeppeek",
     "first level of every topic"},
    {"mqtt", "qos", KP_KEY_UINT, 0, KP_USER_WEBD, G(mqtt_qos), 0, 0, 2, NULL, "0", "QoS of every message"},
    {"mqtt", "discovery_prefix", KP_KEY_STR, 0, KP_USER_WEBD, G(mqtt_discovery_prefix), 0, 0, 0, NULL, "homeassistant",
     "Home Assistant discovery prefix; empty: no discovery"},
    {"mqtt", "active_secs", KP_KEY_UINT, 0, KP_USER_WEBD, G(mqtt_active_secs), 0, 1, 3600, NULL, "30",
     "seconds an event counts as active after its end"},
    {"webhook", "url", KP_KEY_STR, KP_KEY_REQUIRED | KP_KEY_SECRET, KP_USER_WEBD, H(url), 0, 0, 0, NULL, NULL,
     "http:// or https:// URL each event revision is POSTed to"},
    {"webhook", "cameras", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_WEBD, H(cameras), 0, 0, 0, NULL, NULL,
     "only events of these cameras, comma-separated"},
    {"webhook", "labels", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_WEBD, H(labels), 0, 0, 0, NULL, NULL,
     "only events with one of these labels, comma-separated"},
    {"webhook", "secret", KP_KEY_STR, KP_KEY_OPTIONAL | KP_KEY_SECRET | KP_KEY_HIDDEN, KP_USER_WEBD, H(secret), 0, 0, 0,
     NULL, NULL, "HMAC-SHA256 key of the X-KeepPeek-Signature header"},
    {"hub", "enabled", KP_KEY_BOOL, 0, KP_USER_WEBD, G(hub_enabled), 0, 0, 0, NULL, "no",
     "webd also shows the [site] sections' cameras, coverage and events"},
    {"hub", "timeout_ms", KP_KEY_UINT, 0, KP_USER_WEBD, G(hub_timeout_ms), 0, 100, 30000, NULL, "3000",
     "milliseconds a site has to answer one request of the hub"},
    {"tier", "endpoint", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_SUPERVISOR, G(tier_endpoint), 0, 0, 0, NULL, NULL,
     "http(s)://HOST[:PORT] of the S3-compatible store; unset: no tiering"},
    {"tier", "region", KP_KEY_STR, KP_KEY_NONEMPTY, KP_USER_SUPERVISOR, G(tier_region), 0, 0, 0, NULL, "us-east-1",
     "the store's region (SigV4)"},
    {"tier", "bucket", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_SUPERVISOR, G(tier_bucket), 0, 0, 0, NULL, NULL,
     "the bucket recordings are copied to (created when missing)"},
    {"tier", "access_key", KP_KEY_STR, KP_KEY_OPTIONAL | KP_KEY_SECRET | KP_KEY_HIDDEN, KP_USER_SUPERVISOR,
     G(tier_access_key), 0, 0, 0, NULL, NULL, "the store's access key (${ENV} or file:PATH)"},
    {"tier", "secret", KP_KEY_STR, KP_KEY_OPTIONAL | KP_KEY_SECRET | KP_KEY_HIDDEN, KP_USER_SUPERVISOR, G(tier_secret),
     0, 0, 0, NULL, NULL, "the store's secret key (${ENV} or file:PATH)"},
    {"tier", "after", KP_KEY_DURATION, 0, KP_USER_SUPERVISOR, G(tier_after_secs), 0, 1, 315360000, NULL, "30d",
     "closed recordings older than this are copied (NUMBER s, m, h or d)"},
    {"tier", "part_size", KP_KEY_UINT, 0, KP_USER_SUPERVISOR, G(tier_part_size_mib), 0, 5, 64, NULL, "16",
     "MiB of each part of a multipart upload"},
    {"tier", "timeout", KP_KEY_UINT, 0, KP_USER_SUPERVISOR, G(tier_timeout_secs), 0, 1, 600, NULL, "60",
     "seconds one request to the store may take"},
    {"tier", "keep_local", KP_KEY_DURATION, 0, KP_USER_SUPERVISOR, G(tier_keep_local_secs), 0, 0, 315360000, NULL, "0s",
     "how long a copied recording's samples stay on local disk too (NUMBER s, m, h or d)"},
    {"tier", "cache_size", KP_KEY_UINT, 0, KP_USER_SUPERVISOR, G(tier_cache_mib), 0, 16, 1048576, NULL, "1024",
     "MiB of local disk for samples read back from the store for playback"},
    {"site", "url", KP_KEY_STR, KP_KEY_REQUIRED, KP_USER_WEBD, S(url), 0, 0, 0, NULL, NULL,
     "http:// or https:// address of the site's web server"},
    {"site", "token", KP_KEY_STR, KP_KEY_REQUIRED | KP_KEY_SECRET | KP_KEY_HIDDEN, KP_USER_WEBD, S(token), 0, 0, 0,
     NULL, NULL, "a viewer API token of the site (${ENV} or file:PATH)"},
    {"site", "ca_file", KP_KEY_STR, KP_KEY_OPTIONAL, KP_USER_WEBD, S(ca_file), 0, 0, 0, NULL, NULL,
     "PEM CA certificates of an https site (unset: the system's)"},
    {"camera", "url", KP_KEY_CAMERA_URL, KP_KEY_REQUIRED | KP_KEY_SECRET, KP_USER_INGESTD, C(url), 0, 0, 0, NULL, NULL,
     "where and how to reach the camera"},
    {"camera", "sub_url", KP_KEY_RTSP_URL, KP_KEY_OPTIONAL | KP_KEY_SECRET, KP_USER_INGESTD, C(sub_url), 0, 0, 0, NULL,
     NULL, "RTSP cameras: the sub stream's URL"},
    {"camera", "labels", KP_KEY_LABELS, KP_KEY_OPTIONAL, KP_USER_SUPERVISOR, C(labels), 0, 0, 0, NULL, NULL,
     "words that name groups of cameras in plans (label:WORD)"},
    {"camera", "streams", KP_KEY_STREAMS, 0, KP_USER_INGESTD | KP_USER_RECORDERD, C(streams), 0, 0, 0, NULL,
     "main, sub", "the streams used: main, sub or both"},
    {"camera", "record", KP_KEY_ENUM, 0, KP_USER_RECORDERD, C(record), 0, 0, 0, record_values, "continuous",
     "continuous, events or off"},
    {"camera", "retention_days", KP_KEY_UINT, 0, KP_USER_RECORDERD, C(retention_days), 0, 0, 3650, NULL, "0",
     "days this camera's recordings are kept; 0: max_days"},
    {"camera", "motion_events", KP_KEY_BOOL, 0, KP_USER_INGESTD, C(motion_events), 0, 0, 0, NULL, "yes",
     "the camera's alarms become events"},
    {"camera", "audio", KP_KEY_BOOL, 0, KP_USER_INGESTD, C(audio), 0, 0, 0, NULL, "yes",
     "record the main stream's audio as a second track"},
    {"camera", "snapshot_interval", KP_KEY_UINT, 0, KP_USER_INGESTD, C(snapshot_interval), 0, 0, 86400, NULL, "0",
     "seconds between JPEG snapshots; 0: none"},
    {"camera", "transport", KP_KEY_ENUM, KP_KEY_RTSP_ONLY, KP_USER_INGESTD, C(transport), 0, 0, 0, transport_values,
     "tcp", "RTSP media over TCP, UDP, or UDP falling back to TCP (auto)"},
    {"camera", "rtp_ports", KP_KEY_RTP_PORTS, KP_KEY_RTSP_ONLY, KP_USER_INGESTD, C(rtp_port_min), C(rtp_port_max), 1024,
     65535, NULL, "40000-40999", "local UDP ports for RTP and RTCP over UDP, FIRST-LAST"},
    {"camera", "rollover_secs", KP_KEY_UINT, KP_KEY_OPTIONAL, KP_USER_RECORDERD, C(rollover_secs), 0, 1, 86400, NULL,
     NULL, "seconds per recording file (unset: recorderd's default)"},
};

const size_t kp_config_nkeys = sizeof kp_config_keys / sizeof kp_config_keys[0];

const struct kp_key *kp_config_key_find(const char *section, const char *name)
{
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		if (k->name[0] == name[0] && !strcmp(k->name, name) && !strcmp(k->section, section))
			return k;
	}
	return NULL;
}

bool kp_config_key_is_string(const struct kp_key *k)
{
	switch (k->type) {
	case KP_KEY_STR:
	case KP_KEY_CAMERA_URL:
	case KP_KEY_RTSP_URL:
	case KP_KEY_LISTEN:
	case KP_KEY_HOSTPORT:
	case KP_KEY_ADDRESSES:
	case KP_KEY_LABELS:
		return true;
	default:
		return false;
	}
}

#define FIELD(base, off, type)  ((type *)(void *)((char *)(base) + (off)))
#define CFIELD(base, off, type) ((const type *)(const void *)((const char *)(base) + (off)))

static int parse_uint(const struct kp_key *k, const char *v, unsigned *out, char *why, size_t len)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (!isdigit((unsigned char)v[0]) || *end || errno || n < k->min || n > k->max) {
		snprintf(why, len, "%s in [%s] must be an integer from %u to %u, not '%s'", k->name, k->section, k->min,
			 k->max, v);
		return -EINVAL;
	}
	*out = (unsigned)n;
	return 0;
}

/* A duration: digits and one unit (s, m, h, d), kept in seconds from min to max. */
static int parse_duration(const struct kp_key *k, const char *v, unsigned *out, char *why, size_t len)
{
	static const struct {
		char unit;
		unsigned secs;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	unsigned long long secs = 0;
	int ok = isdigit((unsigned char)v[0]) && !errno && end[0] && !end[1] && n <= UINT32_MAX;
	for (size_t i = 0; ok && i < sizeof units / sizeof units[0]; i++)
		if (end[0] == units[i].unit)
			secs = (unsigned long long)n * units[i].secs;
	if (!ok || secs < k->min || secs > k->max) {
		snprintf(why, len, "%s in [%s] must be a number with a unit (s, m, h, d) from %us to %us, not '%s'",
			 k->name, k->section, k->min, k->max, v);
		return -EINVAL;
	}
	*out = (unsigned)secs;
	return 0;
}

/* Gigabytes (10^9 bytes) with up to three decimals, kept as megabytes. */
static int parse_gb(const struct kp_key *k, const char *v, unsigned *out_mb, char *why, size_t len)
{
	const char *s = v;
	unsigned long long mb = 0;
	int digits = 0, decimals = -1;
	for (; *s; s++) {
		if (*s == '.' && decimals < 0) {
			decimals = 0;
			continue;
		}
		if (!isdigit((unsigned char)*s) || decimals == 3 || mb > 1000000000ull)
			break;
		mb = mb * 10 + (unsigned)(*s - '0');
		digits++;
		if (decimals >= 0)
			decimals++;
	}
	for (int d = decimals < 0 ? 0 : decimals; d < 3; d++)
		mb *= 10;
	if (*s || !digits || !isdigit((unsigned char)v[0]) || mb > (unsigned long long)k->max * 1000u) {
		snprintf(why, len,
			 "%s in [%s] must be a number of gigabytes from %u to %u with at most three decimals, not '%s'",
			 k->name, k->section, k->min, k->max, v);
		return -EINVAL;
	}
	*out_mb = (unsigned)mb;
	return 0;
}

static int parse_bool(const struct kp_key *k, const char *v, bool *out, char *why, size_t len)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		*out = false;
	else {
		snprintf(why, len, "%s must be yes or no, not '%s'", k->name, v);
		return -EINVAL;
	}
	return 0;
}

static int parse_enum(const struct kp_key *k, const char *v, unsigned *out, char *why, size_t len)
{
	for (unsigned i = 0; k->values[i]; i++)
		if (!strcmp(v, k->values[i])) {
			*out = i;
			return 0;
		}
	size_t o = (size_t)snprintf(why, len, "%s must be ", k->name);
	for (unsigned i = 0; k->values[i] && o < len; i++)
		o += (size_t)snprintf(why + o, len - o, "%s%s", k->values[i],
				      !k->values[i + 1]   ? ""
				      : !k->values[i + 2] ? " or "
							  : ", ");
	if (o < len)
		snprintf(why + o, len - o, ", not '%s'", v);
	return -EINVAL;
}

static int parse_port_range(const struct kp_key *k, void *base, const char *v, char *why, size_t len)
{
	unsigned a, b;
	char extra;
	if (sscanf(v, "%u-%u%c", &a, &b, &extra) != 2 || a < k->min || b > k->max || a > b) {
		snprintf(why, len, "%s must be FIRST-LAST within %u-%u, not '%s'", k->name, k->min, k->max, v);
		return -EINVAL;
	}
	*FIELD(base, k->offset, unsigned) = a;
	*FIELD(base, k->offset2, unsigned) = b;
	return 0;
}

/* FIRST-LAST, even FIRST (RTP on even ports, RTCP on the next odd one: RFC 3550 11), at
 * least four ports (libavformat/rtsp.c picks a random start modulo half the range's
 * span, which must not be 0). */
static int parse_rtp_ports(const struct kp_key *k, void *base, const char *v, char *why, size_t len)
{
	unsigned a, b;
	char extra;
	if (sscanf(v, "%u-%u%c", &a, &b, &extra) != 2 || a < k->min || b > k->max || a % 2 || b < a + 3) {
		snprintf(why, len, "%s must be FIRST-LAST within %u-%u, FIRST even, at least four ports, not '%s'",
			 k->name, k->min, k->max, v);
		return -EINVAL;
	}
	*FIELD(base, k->offset, unsigned) = a;
	*FIELD(base, k->offset2, unsigned) = b;
	return 0;
}

static int parse_streams(const char *v, unsigned *out, char *why, size_t len)
{
	char copy[256];
	snprintf(copy, sizeof copy, "%s", v);
	unsigned bits = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		if (!strcmp(tok, "main"))
			bits |= KP_STREAM_MAIN;
		else if (!strcmp(tok, "sub"))
			bits |= KP_STREAM_SUB;
		else {
			snprintf(why, len, "unknown stream '%s' (main, sub)", tok);
			return -EINVAL;
		}
	}
	if (!bits) {
		snprintf(why, len, "streams needs main, sub or both");
		return -EINVAL;
	}
	*out = bits;
	return 0;
}

static int valid_hostport(const char *s)
{
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s)
		return 0;
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	return *end == '\0' && colon[1] && port > 0 && port < 65536;
}

int kp_config_check_listen(const char *v, char *bad, size_t badlen)
{
	char copy[KP_CONF_STR];
	snprintf(copy, sizeof copy, "%s", v);
	char *save = NULL;
	int n = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		char *e = tok + strlen(tok);
		while (e > tok && isspace((unsigned char)e[-1]))
			*--e = '\0';
		if (!valid_hostport(tok)) {
			snprintf(bad, badlen, "listen address '%s' is not HOST:PORT", tok);
			return -EINVAL;
		}
		n++;
	}
	if (n == 0) {
		snprintf(bad, badlen, "listen needs at least one HOST:PORT");
		return -EINVAL;
	}
	return 0;
}

/* At most 8 IPv4/IPv6 literals separated by commas (the worker message carries 512
 * bytes). */
static int check_addresses(const char *v, char *why, size_t len)
{
	char copy[KP_CONF_STR];
	snprintf(copy, sizeof copy, "%s", v);
	if (strlen(v) >= 512) {
		snprintf(why, len, "addresses is longer than 511 characters");
		return -EINVAL;
	}
	char *save = NULL;
	unsigned n = 0;
	for (char *ip = strtok_r(copy, ", ", &save); ip; ip = strtok_r(NULL, ", ", &save)) {
		unsigned char buf[sizeof(struct in6_addr)];
		if (inet_pton(AF_INET, ip, buf) != 1 && inet_pton(AF_INET6, ip, buf) != 1) {
			snprintf(why, len, "addresses: '%s' is not an IPv4 or IPv6 address", ip);
			return -EINVAL;
		}
		if (++n > 8) {
			snprintf(why, len, "addresses: more than 8 addresses");
			return -EINVAL;
		}
	}
	return 0;
}

/* Up to KP_CAMERA_LABELS_MAX words of 1 to 32 characters a-z, 0-9, '_', '-', separated by
 * commas and blanks. */
static int check_labels(const char *v, char *why, size_t len)
{
	unsigned n = 0;
	for (const char *s = v; *s;) {
		size_t w = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-");
		size_t gap = strspn(s + w, ", \t");
		if (!w && !gap) {
			snprintf(why, len,
				 "labels: '%c' is not allowed (a-z, 0-9, _ and - in words separated by commas)", *s);
			return -EINVAL;
		}
		if (w > 32) {
			snprintf(why, len, "labels: a label is longer than 32 characters");
			return -EINVAL;
		}
		if (w && ++n > KP_CAMERA_LABELS_MAX) {
			snprintf(why, len, "labels: more than %d labels", KP_CAMERA_LABELS_MAX);
			return -EINVAL;
		}
		s += w + gap;
	}
	return 0;
}

static int has_scheme(const char *url, const char *const *schemes)
{
	for (size_t i = 0; schemes[i]; i++) {
		size_t l = strlen(schemes[i]);
		if (!strncmp(url, schemes[i], l) && url[l] && url[l] != '/')
			return 1;
	}
	return 0;
}

/* The authority of a camera URL (after "scheme://"): [user[:password]@]host[:port], host
 * a name, an IPv4 literal or a bracketed IPv6 literal, port 1 to 65535; a bcudp:// URL
 * with uid= in its query may have no host. NULL when it is well formed, else what is
 * wrong. */
static const char *url_authority_error(const char *url)
{
	const char *a = strstr(url, "://");
	if (!a)
		return "it has no scheme";
	a += 3;
	size_t alen = strcspn(a, "/?#");
	const char *host = a, *end = a + alen;
	for (const char *q = a; q < end; q++)
		if (*q == '@')
			host = q + 1; /* the last '@': a password may hold one */
	const char *port = NULL;
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));
		if (!close)
			return "its IPv6 address has no closing ']'";
		char lit[INET6_ADDRSTRLEN + 1];
		size_t n = (size_t)(close - host - 1);
		struct in6_addr a6;
		if (n >= sizeof lit)
			return "its IPv6 address is not valid";
		memcpy(lit, host + 1, n);
		lit[n] = '\0';
		if (inet_pton(AF_INET6, lit, &a6) != 1)
			return "its IPv6 address is not valid";
		if (close + 1 < end && close[1] != ':')
			return "something follows its IPv6 address other than :port";
		port = close + 1 < end ? close + 2 : NULL;
	} else {
		const char *colon = memchr(host, ':', (size_t)(end - host));
		/* A BCUDP camera may be given by its UID alone (found by broadcast). */
		if (host == end && !strncmp(url, "bcudp://", 8) && strstr(end, "uid="))
			return NULL;
		if ((colon ? colon : end) == host)
			return "it has no host";
		for (const char *q = host; q < (colon ? colon : end); q++)
			if (*q == '[' || *q == ']')
				return "its host has an unbalanced '[' or ']'";
		port = colon ? colon + 1 : NULL;
	}
	if (port) {
		unsigned long v = 0;
		if (port == end)
			return "its port is empty";
		for (const char *q = port; q < end; q++) {
			if (*q < '0' || *q > '9')
				return "its port is not a number";
			v = v * 10 + (unsigned long)(*q - '0');
			if (v > 65535)
				return "its port is above 65535";
		}
		if (v == 0)
			return "its port is 0";
	}
	return NULL;
}

static int check_url(const struct kp_key *k, const struct kp_camera_conf *cam, const char *v, char *why, size_t len)
{
	static const char *const camera_schemes[] = {"baichuan://", "bcudp://", "rtsp://", "rtsps://", NULL};
	static const char *const rtsp_schemes[] = {"rtsp://", "rtsps://", NULL};
	if (k->type == KP_KEY_CAMERA_URL && !has_scheme(v, camera_schemes)) {
		snprintf(why, len, "camera '%s': %s must start with baichuan://, bcudp://, rtsp:// or rtsps://",
			 cam->name, k->name);
		return -EINVAL;
	}
	if (k->type == KP_KEY_RTSP_URL && !has_scheme(v, rtsp_schemes)) {
		snprintf(why, len, "camera '%s': %s must start with rtsp:// or rtsps://", cam->name, k->name);
		return -EINVAL;
	}
	const char *bad = url_authority_error(v);
	if (bad) {
		snprintf(why, len, "camera '%s': %s is not valid: %s", cam->name, k->name, bad);
		return -EINVAL;
	}
	return 0;
}

static int check_string(const struct kp_key *k, const void *base, const char *v, char *why, size_t len)
{
	if ((k->flags & KP_KEY_NONEMPTY) && !v[0]) {
		snprintf(why, len, "%s must not be empty", k->name);
		return -EINVAL;
	}
	switch (k->type) {
	case KP_KEY_LISTEN:
		return kp_config_check_listen(v, why, len);
	case KP_KEY_HOSTPORT:
		if (v[0] && !valid_hostport(v)) {
			snprintf(why, len, "%s must be HOST:PORT", k->name);
			return -EINVAL;
		}
		return 0;
	case KP_KEY_ADDRESSES:
		return check_addresses(v, why, len);
	case KP_KEY_LABELS:
		return check_labels(v, why, len);
	case KP_KEY_CAMERA_URL:
	case KP_KEY_RTSP_URL:
		return check_url(k, base, v, why, len);
	default:
		return 0;
	}
}

int kp_config_key_parse(const struct kp_key *k, void *base, const char *v, char *why, size_t len)
{
	switch (k->type) {
	case KP_KEY_UINT:
		return parse_uint(k, v, FIELD(base, k->offset, unsigned), why, len);
	case KP_KEY_BOOL:
		return parse_bool(k, v, FIELD(base, k->offset, bool), why, len);
	case KP_KEY_ENUM:
		return parse_enum(k, v, FIELD(base, k->offset, unsigned), why, len);
	case KP_KEY_GB:
		return parse_gb(k, v, FIELD(base, k->offset, unsigned), why, len);
	case KP_KEY_DURATION:
		return parse_duration(k, v, FIELD(base, k->offset, unsigned), why, len);
	case KP_KEY_PORT_RANGE:
		return parse_port_range(k, base, v, why, len);
	case KP_KEY_RTP_PORTS:
		return parse_rtp_ports(k, base, v, why, len);
	case KP_KEY_STREAMS:
		return parse_streams(v, FIELD(base, k->offset, unsigned), why, len);
	default:
		return check_string(k, base, v, why, len);
	}
}

void kp_redact_url(const char *url, char *out, size_t len)
{
	const char *scheme = strstr(url, "://");
	const char *start = scheme ? scheme + 3 : url;
	const char *slash = start + strcspn(start, "/?#");
	const char *at = NULL;
	for (const char *s = start; s < slash; s++)
		if (*s == '@')
			at = s;
	const char *colon = at ? memchr(start, ':', (size_t)(at - start)) : NULL;
	if (!colon) {
		snprintf(out, len, "%s", url);
		return;
	}
	snprintf(out, len, "%.*s:***%s", (int)(colon - url), url, at);
}

/* A string as `config show` prints it: what the file said for ${ENV} and file: values,
 * URLs with their password replaced by "***". */
static void shown(const struct kp_conf_str *s, char *out, size_t len)
{
	if (s->secret_ref)
		snprintf(out, len, "%s", s->raw);
	else
		kp_redact_url(s->val, out, len);
}

bool kp_config_key_equal(const struct kp_key *k, const void *a, const void *b)
{
	if (kp_config_key_is_string(k)) {
		const struct kp_conf_str *x = CFIELD(a, k->offset, struct kp_conf_str);
		const struct kp_conf_str *y = CFIELD(b, k->offset, struct kp_conf_str);
		return !strcmp(x->val, y->val) && !strcmp(x->raw, y->raw);
	}
	if (k->type == KP_KEY_BOOL)
		return *CFIELD(a, k->offset, bool) == *CFIELD(b, k->offset, bool);
	if ((k->type == KP_KEY_PORT_RANGE || k->type == KP_KEY_RTP_PORTS) &&
	    *CFIELD(a, k->offset2, unsigned) != *CFIELD(b, k->offset2, unsigned))
		return false;
	return *CFIELD(a, k->offset, unsigned) == *CFIELD(b, k->offset, unsigned);
}

/* Plans format hundreds of values: these two avoid printf. 0 or -ENOSPC. */
static int put_text(char *out, size_t len, const char *t)
{
	size_t n = strlen(t);
	if (n >= len)
		return -ENOSPC;
	memcpy(out, t, n + 1);
	return 0;
}

static int put_uint(char *out, size_t len, unsigned v)
{
	char tmp[12];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	if (n >= len)
		return -ENOSPC;
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return 0;
}

int kp_config_key_format(const struct kp_key *k, const void *base, char *out, size_t len)
{
	int n = 0;
	bool numeric = k->type == KP_KEY_UINT || k->type == KP_KEY_ENUM || k->type == KP_KEY_GB ||
		       k->type == KP_KEY_PORT_RANGE || k->type == KP_KEY_RTP_PORTS || k->type == KP_KEY_STREAMS ||
		       k->type == KP_KEY_DURATION;
	unsigned u = numeric ? *CFIELD(base, k->offset, unsigned) : 0;
	switch (k->type) {
	case KP_KEY_UINT:
		if ((k->flags & KP_KEY_OPTIONAL) && !u)
			return 1;
		return put_uint(out, len, u);
	case KP_KEY_BOOL:
		return put_text(out, len, *CFIELD(base, k->offset, bool) ? "yes" : "no");
	case KP_KEY_ENUM:
		return put_text(out, len, k->values[u]);
	case KP_KEY_GB:
		n = snprintf(out, len, "%u.%03u", u / 1000, u % 1000);
		break;
	case KP_KEY_DURATION: /* the largest unit that says it exactly */
		n = snprintf(out, len, "%u%c",
			     u % 86400 == 0  ? u / 86400
			     : u % 3600 == 0 ? u / 3600
			     : u % 60 == 0   ? u / 60
					     : u,
			     u % 86400 == 0  ? 'd'
			     : u % 3600 == 0 ? 'h'
			     : u % 60 == 0   ? 'm'
					     : 's');
		break;
	case KP_KEY_PORT_RANGE:
	case KP_KEY_RTP_PORTS:
		n = snprintf(out, len, "%u-%u", u, *CFIELD(base, k->offset2, unsigned));
		break;
	case KP_KEY_STREAMS:
		n = snprintf(out, len, "%s",
			     u == (KP_STREAM_MAIN | KP_STREAM_SUB) ? "main, sub"
			     : u == KP_STREAM_MAIN                 ? "main"
								   : "sub");
		break;
	default: {
		const struct kp_conf_str *s = CFIELD(base, k->offset, struct kp_conf_str);
		if ((k->flags & KP_KEY_OPTIONAL) && !s->val[0])
			return 1;
		if (len < sizeof s->val)
			return -ENOSPC;
		if ((k->flags & KP_KEY_HIDDEN) && !s->secret_ref)
			return put_text(out, len, "***");
		shown(s, out, len);
		return 0;
	}
	}
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static const char *type_name(const struct kp_key *k, char *buf, size_t len)
{
	static const char *const names[] = {
	    [KP_KEY_STR] = "text",
	    [KP_KEY_BOOL] = "yes|no",
	    [KP_KEY_PORT_RANGE] = "FIRST-LAST",
	    [KP_KEY_RTP_PORTS] = "FIRST-LAST",
	    [KP_KEY_STREAMS] = "main|sub|main,sub",
	    [KP_KEY_CAMERA_URL] = "url",
	    [KP_KEY_RTSP_URL] = "rtsp-url",
	    [KP_KEY_LISTEN] = "HOST:PORT,...",
	    [KP_KEY_HOSTPORT] = "HOST:PORT",
	    [KP_KEY_ADDRESSES] = "IP,...",
	    [KP_KEY_LABELS] = "word,...",
	};
	size_t o = 0;
	switch (k->type) {
	case KP_KEY_UINT:
		snprintf(buf, len, "%u..%u", k->min, k->max);
		return buf;
	case KP_KEY_GB:
		snprintf(buf, len, "GB %u..%u", k->min, k->max);
		return buf;
	case KP_KEY_DURATION:
		snprintf(buf, len, "duration %us..%us", k->min, k->max);
		return buf;
	case KP_KEY_ENUM:
		buf[0] = '\0';
		for (unsigned i = 0; k->values[i] && o < len; i++)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "|" : "", k->values[i]);
		return buf;
	default:
		return k->type < sizeof names / sizeof names[0] && names[k->type] ? names[k->type] : "text";
	}
}

int kp_config_keys_render(char *buf, size_t len)
{
	static const char *const users[] = {"keeppeekd", "ingestd", "recorderd", "webd", "rtcd"};
	size_t o = 0;
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		char type[128], who[64] = "";
		size_t w = 0;
		for (unsigned b = 0; b < 5; b++)
			if (k->users & (1u << b))
				w += (size_t)snprintf(who + w, sizeof who - w, "%s%s", w ? "," : "", users[b]);
		int n = snprintf(buf + o, len - o, "%s\t%s\t%s\t%s\t%s%s\t%s\n", k->section, k->name,
				 type_name(k, type, sizeof type), k->def ? k->def : "-",
				 k->flags & KP_KEY_SECRET ? "secret," : "", who, k->doc);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	return (int)o;
}
