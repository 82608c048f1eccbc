/* The one description of every configuration key: section, name, type, range,
 * default, whether it may hold a secret, which processes use it. The INI loader,
 * `keeppeekctl config check`, `config show`, `config keys` and the man page check
 * (scripts/check-conf-keys) all read this table. */
#ifndef KP_CONFIG_KEYS_H
#define KP_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

enum kp_key_type {
	KP_KEY_STR,        /* text; KP_KEY_NONEMPTY refuses "" */
	KP_KEY_UINT,       /* decimal integer from min to max */
	KP_KEY_BOOL,       /* yes/no (true/false, on/off, 1/0) */
	KP_KEY_ENUM,       /* one of values[], stored as its index */
	KP_KEY_GB,         /* gigabytes with up to three decimals, stored in MB */
	KP_KEY_PORT_RANGE, /* FIRST-LAST, stored in two unsigned fields */
	KP_KEY_STREAMS,    /* main, sub or both: enum kp_stream_bits */
	KP_KEY_CAMERA_URL, /* baichuan://, bcudp://, rtsp://, rtsps:// */
	KP_KEY_RTSP_URL,   /* rtsp://, rtsps:// */
	KP_KEY_LISTEN,     /* HOST:PORT[,HOST:PORT...] */
	KP_KEY_HOSTPORT,   /* HOST:PORT or "" */
	KP_KEY_ADDRESSES,  /* up to 8 IP literals, comma-separated, or "" */
	KP_KEY_LABELS,     /* up to 8 words of a-z, 0-9, '_' and '-', comma-separated, or "" */
	KP_KEY_RTP_PORTS,  /* a port range with an even FIRST and at least four ports */
	KP_KEY_DURATION,   /* a number with a unit (s, m, h, d), stored in seconds from min to max */
};

enum kp_key_flags {
	KP_KEY_NONEMPTY = 1,   /* a string that must not be empty */
	KP_KEY_REQUIRED = 2,   /* every section of its kind must set it */
	KP_KEY_OPTIONAL = 4,   /* unset is its own value (0 or ""), left out of `config show` */
	KP_KEY_SECRET = 8,     /* may carry a password: shown redacted, diffs say "changed" */
	KP_KEY_RTSP_ONLY = 16, /* rtsp:// cameras only: left out of `config show` for others */
	KP_KEY_HIDDEN = 32,    /* the whole value is a secret: shown as *** unless ${ENV} or file: */
};

/* Who reads a key: the processes that must reload when it changes. */
enum kp_key_users {
	KP_USER_SUPERVISOR = 1,
	KP_USER_INGESTD = 2,
	KP_USER_RECORDERD = 4,
	KP_USER_WEBD = 8,
	KP_USER_RTCD = 16,
	KP_USER_TRANSCODER = 32,
};

struct kp_key {
	const char *section; /* "keeppeek", "web", "rtc", "retention" or "camera" */
	const char *name;
	enum kp_key_type type;
	unsigned flags; /* enum kp_key_flags */
	unsigned users; /* enum kp_key_users */
	size_t offset;  /* in struct kp_config, or struct kp_camera_conf for "camera" */
	size_t offset2; /* KP_KEY_PORT_RANGE: the field of LAST */
	unsigned min, max;
	const char *const *values; /* KP_KEY_ENUM: NULL-terminated names, index = value */
	const char *def;           /* the default as the file would say it; NULL: none */
	const char *doc;           /* one line for `config keys` */
};

extern const struct kp_key kp_config_keys[];
extern const size_t kp_config_nkeys;
/* Sections other than [camera "NAME"], in the order `config show` writes them. */
extern const char *const kp_config_sections[];

/* The key, or NULL. */
const struct kp_key *kp_config_key_find(const char *section, const char *name);

/* Whether the key's field is a struct kp_conf_str (expanded from ${ENV} and file:). */
bool kp_config_key_is_string(const struct kp_key *k);

/* Parses v (already expanded) into the field of k inside base (a struct kp_config or a
 * struct kp_camera_conf). Returns 0, or -EINVAL with why filled. String fields are
 * filled by the caller (expansion); this only checks them. */
int kp_config_key_parse(const struct kp_key *k, void *base, const char *v, char *why, size_t whylen);

/* The value of k in base as the file would say it, secrets redacted. Returns 0, 1 when
 * the key is unset and optional (nothing to show), or -ENOSPC. */
int kp_config_key_format(const struct kp_key *k, const void *base, char *out, size_t len);

/* Whether k has the same value in a and b (as stored, ${ENV} and file: references
 * included). */
bool kp_config_key_equal(const struct kp_key *k, const void *a, const void *b);

/* The table as text, one key a line: section, name, type and range, default, users. */
int kp_config_keys_render(char *buf, size_t len);

#endif
