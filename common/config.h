/* The configuration file (SPEC section 3): parsed with inih into a fixed-size struct,
 * every key validated, unknown keys and sections reported with FILE:LINE, secrets from
 * ${ENV} and file: expanded but never shown. */
#ifndef KP_CONFIG_H
#define KP_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "kp_limits.h"

#define KP_CONF_STR        1024
#define KP_CONFIG_FILE_MAX (1024 * 1024) /* bytes of keeppeek.conf */
#define KP_CONF_MAX_ERRORS 32

enum kp_record_mode { KP_RECORD_CONTINUOUS, KP_RECORD_EVENTS, KP_RECORD_OFF };

enum kp_stream_bits { KP_STREAM_MAIN = 1, KP_STREAM_SUB = 2 };

/* How an RTSP camera's media travels (keeppeek.conf(5), transport). */
enum kp_rtsp_transport { KP_RTSP_TCP, KP_RTSP_UDP, KP_RTSP_AUTO };

#define KP_RTP_PORT_MIN_DEFAULT 40000 /* rtp_ports: local UDP ports for RTP/RTCP */
#define KP_RTP_PORT_MAX_DEFAULT 40999

/* A string value: what it means (val) and what the file says (raw). A value that came
 * from ${ENV} or file: is shown only as raw. */
struct kp_conf_str {
	char val[KP_CONF_STR];
	char raw[KP_CONF_STR];
	bool secret_ref;
};

struct kp_camera_conf {
	char name[KP_CAMERA_NAME_MAX + 1];
	struct kp_conf_str url;
	struct kp_conf_str sub_url; /* RTSP cameras: the sub stream's own URL */
	struct kp_conf_str labels;  /* words that group cameras for plans ("garden, outdoor") */
	unsigned streams;
	unsigned record; /* enum kp_record_mode */
	unsigned retention_days;
	bool motion_events;
	bool audio; /* record the main stream's audio as a second track */
	unsigned snapshot_interval;
	unsigned rollover_secs; /* 0: recorderd's default (10 minutes) */
	unsigned transport;     /* enum kp_rtsp_transport; RTSP cameras only */
	unsigned rtp_port_min, rtp_port_max;
	unsigned line;
};

/* A [webhook "NAME"] section (webd/webhook.c). */
struct kp_webhook_conf {
	char name[KP_WEBHOOK_NAME_MAX + 1];
	struct kp_conf_str url;
	struct kp_conf_str cameras; /* comma-separated camera names; empty: all */
	struct kp_conf_str labels;  /* comma-separated event labels; empty: all */
	struct kp_conf_str secret;  /* HMAC-SHA256 key of the signature header */
	unsigned line;
};

/* A [site "NAME"] section: another KeepPeek server a hub shows (webd/hub*.c). */
struct kp_site_conf {
	char name[KP_SITE_NAME_MAX + 1];
	struct kp_conf_str url;     /* http(s)://HOST:PORT of the site's webd */
	struct kp_conf_str token;   /* a viewer API token of the site */
	struct kp_conf_str ca_file; /* PEM CA of an https site (empty: the system's) */
	unsigned line;
};

struct kp_config {
	struct kp_conf_str data_dir;
	struct kp_conf_str run_dir;
	struct kp_conf_str user;
	struct kp_conf_str listen;
	struct kp_conf_str tls_cert;
	struct kp_conf_str tls_key;
	unsigned udp_port_min, udp_port_max;
	struct kp_conf_str stun_server;
	struct kp_conf_str rtc_addresses; /* [rtc] addresses: IP literals; empty: every interface */
	unsigned max_transcodes;          /* [rtc] concurrent H.265 -> H.264 transcodes */
	unsigned max_disk_mb;             /* [retention] max_disk_gb, in MB (10^6 bytes); 0: no quota */
	unsigned max_days;
	/* [mqtt] (webd/mqtt.c); no host: no MQTT. */
	struct kp_conf_str mqtt_host;
	unsigned mqtt_port;
	bool mqtt_tls;
	struct kp_conf_str mqtt_ca_file;
	struct kp_conf_str mqtt_user;
	struct kp_conf_str mqtt_password;
	struct kp_conf_str mqtt_client_id;
	struct kp_conf_str mqtt_topic_prefix;
	unsigned mqtt_qos;
	struct kp_conf_str mqtt_discovery_prefix;
	unsigned mqtt_active_secs;
	unsigned nwebhooks;
	struct kp_webhook_conf webhooks[KP_MAX_WEBHOOKS];
	/* [hub] and its [site "NAME"] sections (docs/decisions/0033). */
	bool hub_enabled;
	unsigned hub_timeout_ms;
	unsigned nsites;
	struct kp_site_conf sites[KP_MAX_SITES];
	/* [tier] (docs/tier.md, decision 0035); no endpoint: no tiering, no tierd. */
	struct kp_conf_str tier_endpoint;
	struct kp_conf_str tier_region;
	struct kp_conf_str tier_bucket;
	struct kp_conf_str tier_access_key;
	struct kp_conf_str tier_secret;
	unsigned tier_after_secs;
	unsigned tier_part_size_mib;
	unsigned tier_timeout_secs;
	unsigned tier_keep_local_secs;
	unsigned tier_cache_mib;
	unsigned ncameras;
	struct kp_camera_conf cameras[KP_MAX_CAMERAS];
};

/* Error lines "FILE:LINE: message", newline-separated. */
struct kp_config_errors {
	char text[KP_CONF_MAX_ERRORS * 256];
	unsigned count;
};

void kp_config_defaults(struct kp_config *cfg);

/* 0 on success; -EINVAL with errors filled when the file is invalid; -errno when the
 * file cannot be read (also described in errors). */
int kp_config_load_file(const char *path, struct kp_config *cfg, struct kp_config_errors *errs);
int kp_config_load_string(const char *name, const char *text, struct kp_config *cfg, struct kp_config_errors *errs);

/* Typed edits, for configuration plans (supervisor/config_plan.c): a camera key set
 * as the file would set it (${NAME} and file: expanded, the value checked), a camera
 * added with its defaults (at cfg->cameras[cfg->ncameras - 1]; its name checked and
 * unique), and the checks of a whole configuration that involve several keys. Each
 * returns 0 or -EINVAL with errs filled. */
int kp_config_set_camera_key(struct kp_config *cfg, unsigned camera, const char *key, const char *value,
			     struct kp_config_errors *errs);
int kp_config_add_camera(struct kp_config *cfg, const char *name, struct kp_config_errors *errs);
int kp_config_validate(struct kp_config *cfg, struct kp_config_errors *errs);

/* The configuration as INI text with secrets redacted. Returns bytes written or -ENOSPC. */
int kp_config_render(const struct kp_config *cfg, char *buf, size_t len);

/* Checks a [web] listen value (HOST:PORT, comma-separated); on error describes it in bad. */
int kp_config_check_listen(const char *value, char *bad, size_t badlen);

/* url with the password of its userinfo replaced by "***". */
void kp_redact_url(const char *url, char *out, size_t len);

#endif
