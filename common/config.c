/* Configuration loading: a line-counting reader in front of inih, one handler that
 * looks every key up in the key table (config_keys.c), ${ENV} and file: expansion,
 * whole-file validation, and the redacted rendering used by logs and `keeppeekctl config
 * show`. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_keys.h"

struct parse_ctx {
	const char *name;
	FILE *file;
	const char *text;
	unsigned line;
	unsigned section_line; /* line of the latest [section] header */
	struct kp_config *cfg;
	struct kp_config_errors *errs;
	unsigned err_line; /* last line that already has an error */
	uint64_t seen;     /* keys set outside cameras, by index in kp_config_keys */
	uint64_t cam_seen; /* keys set in the current camera or webhook section */
	int cur_camera;
	int cur_webhook;
	int cur_site;
};

static void add_error(struct parse_ctx *p, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add_error(struct parse_ctx *p, unsigned line, const char *fmt, ...)
{
	struct kp_config_errors *e = p->errs;
	p->err_line = line;
	if (e->count >= KP_CONF_MAX_ERRORS)
		return;
	size_t used = strlen(e->text);
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (line)
		snprintf(e->text + used, sizeof e->text - used, "%s:%u: %s\n", p->name, line, msg);
	else
		snprintf(e->text + used, sizeof e->text - used, "%s: %s\n", p->name, msg);
	e->count++;
}

/* inih reads at most INI_MAX_LINE-1 characters a line; a longer line is an error here
 * instead of being split silently. */
static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *p = stream;
	char line[4096];
	size_t n = 0;
	int c;
	if (p->file) {
		while ((c = fgetc(p->file)) != EOF) {
			if (n < sizeof line - 1)
				line[n++] = (char)c;
			if (c == '\n')
				break;
		}
		if (n == 0)
			return NULL;
	} else {
		if (!*p->text)
			return NULL;
		while (*p->text) {
			c = *p->text++;
			if (n < sizeof line - 1)
				line[n++] = (char)c;
			if (c == '\n')
				break;
		}
	}
	line[n] = '\0';
	p->line++;
	const char *first = line + strspn(line, " \t");
	if (*first == '[')
		p->section_line = p->line;
	if (*first == '[' && !strchr(first, ']')) {
		add_error(p, p->line, "section header %.*s has no closing ']'", (int)strcspn(first, "\r\n"), first);
		p->err_line = p->line;
		str[0] = '\n';
		str[1] = '\0';
		return str;
	}
	if (n >= (size_t)num - 1 || (n == sizeof line - 1 && line[n - 1] != '\n')) {
		add_error(p, p->line, "line longer than %d characters", num - 3);
		str[0] = '\n';
		str[1] = '\0';
		return str;
	}
	memcpy(str, line, n + 1);
	return str;
}

static int expand(struct parse_ctx *p, const char *in, struct kp_conf_str *out)
{
	size_t in_len = strlen(in);
	if (in_len >= sizeof out->raw) {
		add_error(p, p->line, "value too long");
		return -1;
	}
	memcpy(out->raw, in, in_len + 1);
	out->secret_ref = false;
	if (strncmp(in, "file:", 5) == 0) {
		const char *path = in + 5;
		FILE *f = fopen(path, "re");
		if (!f) {
			add_error(p, p->line, "cannot read secret file '%s': %s", path, strerror(errno));
			return -1;
		}
		if (!fgets(out->val, sizeof out->val, f))
			out->val[0] = '\0';
		fclose(f);
		out->val[strcspn(out->val, "\r\n")] = '\0';
		out->secret_ref = true;
		return 0;
	}
	size_t o = 0;
	for (const char *s = in; *s;) {
		if (s[0] == '$' && s[1] == '{') {
			const char *end = strchr(s + 2, '}');
			if (!end) {
				add_error(p, p->line, "unterminated ${ in value");
				return -1;
			}
			char var[128];
			size_t vlen = (size_t)(end - (s + 2));
			if (vlen == 0 || vlen >= sizeof var) {
				add_error(p, p->line, "bad environment variable name in value");
				return -1;
			}
			memcpy(var, s + 2, vlen);
			var[vlen] = '\0';
			const char *v = getenv(var);
			if (!v) {
				add_error(p, p->line, "environment variable %s is not set", var);
				return -1;
			}
			size_t l = strlen(v);
			if (o + l >= sizeof out->val) {
				add_error(p, p->line, "value too long after expansion");
				return -1;
			}
			memcpy(out->val + o, v, l);
			o += l;
			out->secret_ref = true;
			s = end + 1;
		} else {
			if (o + 1 >= sizeof out->val) {
				add_error(p, p->line, "value too long");
				return -1;
			}
			out->val[o++] = *s++;
		}
	}
	out->val[o] = '\0';
	return 0;
}

/* Whether keys of section live in a named section ([camera "NAME"], [webhook "NAME"]). */
static bool named_kind(const char *section)
{
	return !strcmp(section, "camera") || !strcmp(section, "webhook") || !strcmp(section, "site");
}

/* Every key of one kind ("camera", "webhook", or else the global sections) set to its
 * default. The defaults in the table are valid (test_config checks it). */
static void set_defaults(const char *kind, void *base)
{
	bool named = named_kind(kind);
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		if (!k->def || (named ? strcmp(k->section, kind) != 0 : named_kind(k->section)))
			continue;
		char why[256];
		if (kp_config_key_is_string(k)) {
			struct kp_conf_str *str = (struct kp_conf_str *)(void *)((char *)base + k->offset);
			snprintf(str->val, sizeof str->val, "%s", k->def);
			snprintf(str->raw, sizeof str->raw, "%s", k->def);
		} else {
			kp_config_key_parse(k, base, k->def, why, sizeof why);
		}
	}
}

/* Returns 1 if the key was already set in this scope (and records it otherwise): the
 * global sections together, or the current camera section. */
static int duplicate(struct parse_ctx *p, const struct kp_key *k)
{
	uint64_t bit = 1ull << (k - kp_config_keys);
	uint64_t *seen = p->cur_camera >= 0 || p->cur_webhook >= 0 || p->cur_site >= 0 ? &p->cam_seen : &p->seen;
	if (*seen & bit)
		return 1;
	*seen |= bit;
	return 0;
}

static int camera_section(struct parse_ctx *p, const char *section)
{
	struct kp_config *cfg = p->cfg;
	/* Every key line of a section after its first. */
	if (p->cur_camera >= 0 && cfg->cameras[p->cur_camera].line == p->section_line)
		return p->cur_camera;
	/* section is: camera "NAME" */
	const char *q = section + strlen("camera");
	while (*q == ' ' || *q == '\t')
		q++;
	size_t len = strlen(q);
	if (len < 3 || q[0] != '"' || q[len - 1] != '"') {
		add_error(p, p->line, "camera section must be [camera \"NAME\"]");
		return -1;
	}
	char name[KP_CAMERA_NAME_MAX + 2];
	size_t nlen = len - 2;
	if (nlen > KP_CAMERA_NAME_MAX) {
		add_error(p, p->line, "camera name longer than %d characters", KP_CAMERA_NAME_MAX);
		return -1;
	}
	memcpy(name, q + 1, nlen);
	name[nlen] = '\0';
	for (size_t i = 0; i < nlen; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '-' && name[i] != '_') {
			add_error(p, p->line, "camera name '%s' may use only letters, digits, - and _", name);
			return -1;
		}
	for (unsigned i = 0; i < cfg->ncameras; i++)
		if (!strcmp(cfg->cameras[i].name, name)) {
			if (p->err_line != p->section_line)
				add_error(p, p->section_line, "camera '%s' is defined twice (first at line %u)", name,
					  cfg->cameras[i].line);
			return -1;
		}
	if (cfg->ncameras >= KP_MAX_CAMERAS) {
		add_error(p, p->line, "more than %d cameras", KP_MAX_CAMERAS);
		return -1;
	}
	static struct kp_camera_conf fresh;
	static bool fresh_made;
	if (!fresh_made) {
		set_defaults("camera", &fresh);
		fresh_made = true;
	}
	struct kp_camera_conf *cam = &cfg->cameras[cfg->ncameras];
	*cam = fresh;
	memcpy(cam->name, name, nlen + 1);
	cam->line = p->section_line;
	p->cur_camera = (int)cfg->ncameras++;
	p->cam_seen = 0;
	return p->cur_camera;
}

/* The NAME of [KIND "NAME"] into name[0..max]: 0, or -1 (reported) when the header is
 * malformed, the name too long or not of letters, digits, - and _. */
static int section_name(struct parse_ctx *p, const char *kind, const char *section, char *name, size_t max)
{
	const char *q = section + strlen(kind);
	while (*q == ' ' || *q == '\t')
		q++;
	size_t len = strlen(q);
	if (len < 3 || q[0] != '"' || q[len - 1] != '"') {
		add_error(p, p->line, "%s section must be [%s \"NAME\"]", kind, kind);
		return -1;
	}
	size_t nlen = len - 2;
	if (nlen > max) {
		add_error(p, p->line, "%s name longer than %zu characters", kind, max);
		return -1;
	}
	memcpy(name, q + 1, nlen);
	name[nlen] = '\0';
	for (size_t i = 0; i < nlen; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '-' && name[i] != '_') {
			add_error(p, p->line, "%s name '%s' may use only letters, digits, - and _", kind, name);
			return -1;
		}
	return 0;
}

/* [webhook "NAME"]: the index of its slot in cfg->webhooks, filled at its first key;
 * -1 (reported) for a bad name, a name used twice, or one section too many. */
static int webhook_section(struct parse_ctx *p, const char *section)
{
	struct kp_config *cfg = p->cfg;
	if (p->cur_webhook >= 0 && cfg->webhooks[p->cur_webhook].line == p->section_line)
		return p->cur_webhook;
	char name[KP_WEBHOOK_NAME_MAX + 1];
	if (section_name(p, "webhook", section, name, KP_WEBHOOK_NAME_MAX) < 0)
		return -1;
	for (unsigned i = 0; i < cfg->nwebhooks; i++)
		if (!strcmp(cfg->webhooks[i].name, name)) {
			if (p->err_line != p->section_line)
				add_error(p, p->section_line, "webhook '%s' is defined twice (first at line %u)", name,
					  cfg->webhooks[i].line);
			return -1;
		}
	if (cfg->nwebhooks >= KP_MAX_WEBHOOKS) {
		if (p->err_line != p->section_line)
			add_error(p, p->section_line, "more than %d webhooks", KP_MAX_WEBHOOKS);
		return -1;
	}
	struct kp_webhook_conf *h = &cfg->webhooks[cfg->nwebhooks];
	memset(h, 0, sizeof *h);
	set_defaults("webhook", h);
	snprintf(h->name, sizeof h->name, "%s", name);
	h->line = p->section_line;
	p->cur_webhook = (int)cfg->nwebhooks++;
	p->cam_seen = 0;
	return p->cur_webhook;
}

/* [site "NAME"] of a hub, as webhook_section. */
static int site_section(struct parse_ctx *p, const char *section)
{
	struct kp_config *cfg = p->cfg;
	if (p->cur_site >= 0 && cfg->sites[p->cur_site].line == p->section_line)
		return p->cur_site;
	char name[KP_SITE_NAME_MAX + 1];
	if (section_name(p, "site", section, name, KP_SITE_NAME_MAX) < 0)
		return -1;
	for (unsigned i = 0; i < cfg->nsites; i++)
		if (!strcmp(cfg->sites[i].name, name)) {
			if (p->err_line != p->section_line)
				add_error(p, p->section_line, "site '%s' is defined twice (first at line %u)", name,
					  cfg->sites[i].line);
			return -1;
		}
	if (cfg->nsites >= KP_MAX_SITES) {
		if (p->err_line != p->section_line)
			add_error(p, p->section_line, "more than %d sites", KP_MAX_SITES);
		return -1;
	}
	struct kp_site_conf *st = &cfg->sites[cfg->nsites];
	memset(st, 0, sizeof *st);
	set_defaults("site", st);
	snprintf(st->name, sizeof st->name, "%s", name);
	st->line = p->section_line;
	p->cur_site = (int)cfg->nsites++;
	p->cam_seen = 0;
	return p->cur_site;
}

/* One key of a section (base: the struct kp_config, or the camera's struct
 * kp_camera_conf): strings are expanded, then every value is checked by its type. */
static int set_key(struct parse_ctx *p, const char *kind, const char *section, void *base, const char *key,
		   const char *v)
{
	const struct kp_key *k = kp_config_key_find(kind, key);
	char named[KP_CAMERA_NAME_MAX + 16];
	if (!section && k) /* a camera's key set by a plan: its section named only for an error */
		section = "camera";
	else if (!section) {
		snprintf(named, sizeof named, "camera \"%s\"", ((struct kp_camera_conf *)base)->name);
		section = named;
	}
	if (!k) {
		add_error(p, p->line, "unknown key '%s' in [%s]", key, section);
		return -1;
	}
	if (duplicate(p, k)) {
		add_error(p, p->line, "key '%s' set twice in [%s]", key, section);
		return -1;
	}
	char why[KP_CONF_STR + 200];
	const char *checked = v;
	if (kp_config_key_is_string(k)) {
		struct kp_conf_str *str = (struct kp_conf_str *)(void *)((char *)base + k->offset);
		if (expand(p, v, str) < 0)
			return -1;
		checked = str->val;
	}
	if (kp_config_key_parse(k, base, checked, why, sizeof why) < 0) {
		/* A camera's key names its camera (URL checks already do). */
		if (!strcmp(kind, "camera") && strncmp(why, "camera '", 8))
			add_error(p, p->line, "camera '%s': %s", ((struct kp_camera_conf *)base)->name, why);
		else
			add_error(p, p->line, "%s", why);
		return -1;
	}
	return 0;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse_ctx *p = user;
	struct kp_config *cfg = p->cfg;
	if (!strncmp(section, "camera", 6) && (section[6] == ' ' || section[6] == '"' || section[6] == '\0')) {
		p->cur_webhook = -1;
		p->cur_site = -1;
		int idx = camera_section(p, section);
		if (idx < 0)
			return 0;
		return set_key(p, "camera", section, &cfg->cameras[idx], key, value) == 0;
	}
	p->cur_camera = -1;
	if (!strncmp(section, "site", 4) && (section[4] == ' ' || section[4] == '"' || section[4] == '\0')) {
		p->cur_webhook = -1;
		int idx = site_section(p, section);
		if (idx < 0)
			return 0;
		return set_key(p, "site", section, &cfg->sites[idx], key, value) == 0;
	}
	p->cur_site = -1;
	if (!strncmp(section, "webhook", 7) && (section[7] == ' ' || section[7] == '"' || section[7] == '\0')) {
		int idx = webhook_section(p, section);
		if (idx < 0)
			return 0;
		return set_key(p, "webhook", section, &cfg->webhooks[idx], key, value) == 0;
	}
	p->cur_webhook = -1;
	int known_section = 0;
	for (size_t i = 0; kp_config_sections[i]; i++)
		known_section |= !strcmp(section, kp_config_sections[i]);
	if (!known_section) {
		if (p->err_line != p->line)
			add_error(p, p->line, "unknown section [%s]", section);
		return 0;
	}
	return set_key(p, section, section, cfg, key, value) == 0;
}

/* Camera slots are filled as their sections come (camera_section). */
void kp_config_defaults(struct kp_config *cfg)
{
	memset(cfg, 0, offsetof(struct kp_config, cameras));
	set_defaults("global", cfg);
}

/* Whether a named section (a camera, a webhook) lacks a key every section of its kind
 * must set (reported). */
static bool missing_required(struct parse_ctx *p, const char *kind, const void *base, const char *name, unsigned line)
{
	bool missing = false;
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		if (!(k->flags & KP_KEY_REQUIRED) || strcmp(k->section, kind) || !kp_config_key_is_string(k))
			continue;
		const struct kp_conf_str *v =
		    (const struct kp_conf_str *)(const void *)((const char *)base + k->offset);
		if (!v->val[0]) {
			add_error(p, line, "%s '%s' has no %s", kind, name, k->name);
			missing = true;
		}
	}
	return missing;
}

/* A topic level of MQTT (the prefixes): no wildcard, no empty level, no NUL. */
static bool topic_ok(const char *t)
{
	if (!t[0] || t[0] == '/' || t[strlen(t) - 1] == '/' || strstr(t, "//"))
		return false;
	return strcspn(t, "+#") == strlen(t);
}

static void validate_integrations(struct parse_ctx *p)
{
	struct kp_config *cfg = p->cfg;
	if (!topic_ok(cfg->mqtt_topic_prefix.val))
		add_error(p, 0, "[mqtt] topic_prefix '%s' must be topic levels without + or # or an empty level",
			  cfg->mqtt_topic_prefix.val);
	if (cfg->mqtt_discovery_prefix.val[0] && !topic_ok(cfg->mqtt_discovery_prefix.val))
		add_error(p, 0, "[mqtt] discovery_prefix '%s' must be topic levels without + or # or an empty level",
			  cfg->mqtt_discovery_prefix.val);
	if (cfg->mqtt_ca_file.val[0] && !cfg->mqtt_tls)
		add_error(p, 0, "[mqtt] ca_file is for tls = yes only");
	struct stat st;
	if (cfg->mqtt_ca_file.val[0] && cfg->mqtt_tls) {
		if (stat(cfg->mqtt_ca_file.val, &st) < 0)
			add_error(p, 0, "[mqtt] ca_file %s: %s", cfg->mqtt_ca_file.val, strerror(errno));
		else if (!S_ISREG(st.st_mode) || st.st_size > KP_MQTT_CA_MAX)
			add_error(p, 0, "[mqtt] ca_file %s: not a regular file of at most %d bytes",
				  cfg->mqtt_ca_file.val, KP_MQTT_CA_MAX);
	}
	for (unsigned i = 0; i < cfg->nwebhooks; i++) {
		const struct kp_webhook_conf *h = &cfg->webhooks[i];
		if (missing_required(p, "webhook", h, h->name, h->line))
			continue;
		if (strncmp(h->url.val, "http://", 7) && strncmp(h->url.val, "https://", 8))
			add_error(p, h->line, "webhook '%s': url must start with http:// or https://", h->name);
	}
}

/* [hub] and its sites: sites only with enabled = yes, at least one site then, URLs of
 * http or https, a CA file that the supervisor can read and send (KP_SITE_CA_MAX). */
static void validate_hub(struct parse_ctx *p)
{
	struct kp_config *cfg = p->cfg;
	if (cfg->nsites && !cfg->hub_enabled)
		add_error(p, cfg->sites[0].line, "[site] sections need [hub] enabled = yes");
	if (cfg->hub_enabled && !cfg->nsites)
		add_error(p, 0, "[hub] enabled = yes needs at least one [site \"NAME\"] section");
	for (unsigned i = 0; i < cfg->nsites; i++) {
		const struct kp_site_conf *st = &cfg->sites[i];
		if (missing_required(p, "site", st, st->name, st->line))
			continue;
		const char *u = st->url.val;
		bool tls = !strncmp(u, "https://", 8);
		if (strlen(u) > KP_SITE_URL_MAX)
			add_error(p, st->line, "site '%s': url longer than %d characters", st->name, KP_SITE_URL_MAX);
		else if (strncmp(u, "http://", 7) && !tls)
			add_error(p, st->line, "site '%s': url must start with http:// or https://", st->name);
		else if (strpbrk(u, " \t\"<>\\^`{|}") || strchr(u + (tls ? 8 : 7), '?') || strchr(u, '#'))
			add_error(p, st->line, "site '%s': url must be http(s)://HOST[:PORT][/PATH] without a query",
				  st->name);
		if (strlen(st->token.val) > KP_SITE_TOKEN_MAX)
			add_error(p, st->line, "site '%s': token longer than %d characters", st->name,
				  KP_SITE_TOKEN_MAX);
		else if (strpbrk(st->token.val, " \t\r\n"))
			add_error(p, st->line, "site '%s': token must not hold spaces or line breaks", st->name);
		if (st->ca_file.val[0] && !tls)
			add_error(p, st->line, "site '%s': ca_file is for https:// sites only", st->name);
		struct stat sb;
		if (st->ca_file.val[0] && tls) {
			if (stat(st->ca_file.val, &sb) < 0)
				add_error(p, st->line, "site '%s': ca_file %s: %s", st->name, st->ca_file.val,
					  strerror(errno));
			else if (!S_ISREG(sb.st_mode) || sb.st_size > KP_SITE_CA_MAX)
				add_error(p, st->line, "site '%s': ca_file %s: not a regular file of at most %d bytes",
					  st->name, st->ca_file.val, KP_SITE_CA_MAX);
		}
	}
}

/* [tier]: an endpoint needs a bucket and both keys, and is http(s)://HOST[:PORT] (the
 * S3 client's form: path-style requests, no path of its own). */
static void validate_tier(struct parse_ctx *p)
{
	const struct kp_config *cfg = p->cfg;
	const char *e = cfg->tier_endpoint.val;
	if (!e[0])
		return;
	const char *host = !strncmp(e, "http://", 7) ? e + 7 : !strncmp(e, "https://", 8) ? e + 8 : NULL;
	if (!host || !host[0] || strcspn(host, "/?#@ ") != strlen(host))
		add_error(p, 0, "[tier] endpoint must be http://HOST[:PORT] or https://HOST[:PORT], not '%s'", e);
	const char *b = cfg->tier_bucket.val;
	if (!b[0] || !cfg->tier_access_key.val[0] || !cfg->tier_secret.val[0])
		add_error(p, 0, "[tier] endpoint needs bucket, access_key and secret");
	else if (strlen(b) < 3 || strlen(b) > 63 || strspn(b, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(b))
		add_error(p, 0, "[tier] bucket must be 3 to 63 of a-z, 0-9, '.' and '-', not '%s'", b);
}

static void validate(struct parse_ctx *p)
{
	struct kp_config *cfg = p->cfg;
	if (!cfg->tls_cert.val[0] != !cfg->tls_key.val[0])
		add_error(p, 0, "[web] tls_cert and tls_key must be set together");
	validate_integrations(p);
	validate_hub(p);
	validate_tier(p);
	for (unsigned i = 0; i < cfg->ncameras; i++) {
		struct kp_camera_conf *c = &cfg->cameras[i];
		if (missing_required(p, "camera", c, c->name, c->line))
			continue;
		if (c->sub_url.val[0] && strncmp(c->url.val, "rtsp", 4))
			add_error(p, c->line, "camera '%s': sub_url is for rtsp:// cameras only", c->name);
		else if (strncmp(c->url.val, "rtsp", 4) &&
			 (c->transport != KP_RTSP_TCP || c->rtp_port_min != KP_RTP_PORT_MIN_DEFAULT ||
			  c->rtp_port_max != KP_RTP_PORT_MAX_DEFAULT))
			add_error(p, c->line, "camera '%s': transport and rtp_ports are for rtsp:// cameras only",
				  c->name);
		else if (c->transport != KP_RTSP_TCP &&
			 (!strncmp(c->url.val, "rtsps://", 8) || !strncmp(c->sub_url.val, "rtsps://", 8)))
			/* libavformat/rtsp.c carries RTSPS media on its TLS connection only. */
			add_error(p, c->line, "camera '%s': transport must be tcp for rtsps:// URLs", c->name);
		else if (!strncmp(c->url.val, "rtsp", 4) && !c->sub_url.val[0]) {
			/* One RTSP URL is one stream: without sub_url there is no sub stream. */
			if (c->streams == KP_STREAM_SUB)
				add_error(p, c->line, "camera '%s': streams = sub needs sub_url", c->name);
			c->streams &= ~(unsigned)KP_STREAM_SUB;
		}
	}
}

static int parse(struct parse_ctx *p)
{
	p->cur_camera = -1;
	p->cur_webhook = -1;
	p->cur_site = -1;
	int r = ini_parse_stream(reader, p, handler, p);
	if (r > 0 && p->errs->count == 0)
		add_error(p, (unsigned)r, "syntax error (expected [section] or key = value)");
	else if (r > 0 && p->err_line != (unsigned)r) {
		/* inih reports only the first error line; ours are already recorded. */
	}
	if (r < 0)
		add_error(p, 0, "out of memory while parsing");
	validate(p);
	return p->errs->count ? -EINVAL : 0;
}

int kp_config_load_file(const char *path, struct kp_config *cfg, struct kp_config_errors *errs)
{
	memset(errs, 0, sizeof *errs);
	kp_config_defaults(cfg);
	struct parse_ctx p = {.name = path, .cfg = cfg, .errs = errs};
	p.file = fopen(path, "re");
	if (!p.file) {
		int err = errno;
		add_error(&p, 0, "cannot open: %s", strerror(err));
		return -err;
	}
	/* A directory reads as empty and a device (a link to /dev/zero) never ends. */
	struct stat st;
	int err = fstat(fileno(p.file), &st) < 0 ? errno : 0;
	if (err)
		add_error(&p, 0, "cannot read: %s", strerror(err));
	else if (S_ISDIR(st.st_mode))
		add_error(&p, 0, "is a directory, not a configuration file");
	else if (!S_ISREG(st.st_mode))
		add_error(&p, 0, "is not a regular file (a device, pipe or socket)");
	else if (st.st_size > KP_CONFIG_FILE_MAX)
		add_error(&p, 0, "is larger than %d bytes", KP_CONFIG_FILE_MAX);
	if (err || !S_ISREG(st.st_mode) || st.st_size > KP_CONFIG_FILE_MAX) {
		fclose(p.file);
		return err ? -err : S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	int r = parse(&p);
	fclose(p.file);
	return r;
}

int kp_config_load_string(const char *name, const char *text, struct kp_config *cfg, struct kp_config_errors *errs)
{
	memset(errs, 0, sizeof *errs);
	kp_config_defaults(cfg);
	struct parse_ctx p = {.name = name, .text = text, .cfg = cfg, .errs = errs};
	return parse(&p);
}

/* "key = value\n" for every key of one section; unset optional keys are left out. */
static int render_section(const char *section, const void *base, char *buf, size_t len, size_t *o)
{
	static char value[KP_CONF_STR];
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		if (strcmp(k->section, section))
			continue;
		if ((k->flags & KP_KEY_RTSP_ONLY) && strncmp(((const struct kp_camera_conf *)base)->url.val, "rtsp", 4))
			continue;
		int r = kp_config_key_format(k, base, value, sizeof value);
		if (r < 0)
			return r;
		if (r == 1)
			continue;
		int n = snprintf(buf + *o, len - *o, "%s = %s\n", k->name, value);
		if (n < 0 || (size_t)n >= len - *o)
			return -ENOSPC;
		*o += (size_t)n;
	}
	return 0;
}

int kp_config_render(const struct kp_config *cfg, char *buf, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; kp_config_sections[i]; i++) {
		int n = snprintf(buf + o, len - o, "%s[%s]\n", i ? "\n" : "", kp_config_sections[i]);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
		if (render_section(kp_config_sections[i], cfg, buf, len, &o) < 0)
			return -ENOSPC;
	}
	for (unsigned i = 0; i < cfg->ncameras; i++) {
		const struct kp_camera_conf *c = &cfg->cameras[i];
		int n = snprintf(buf + o, len - o, "\n[camera \"%s\"]\n", c->name);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
		if (render_section("camera", c, buf, len, &o) < 0)
			return -ENOSPC;
	}
	for (unsigned i = 0; i < cfg->nwebhooks; i++) {
		const struct kp_webhook_conf *h = &cfg->webhooks[i];
		int n = snprintf(buf + o, len - o, "\n[webhook \"%s\"]\n", h->name);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
		if (render_section("webhook", h, buf, len, &o) < 0)
			return -ENOSPC;
	}
	for (unsigned i = 0; i < cfg->nsites; i++) {
		const struct kp_site_conf *st = &cfg->sites[i];
		int n = snprintf(buf + o, len - o, "\n[site \"%s\"]\n", st->name);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
		if (render_section("site", st, buf, len, &o) < 0)
			return -ENOSPC;
	}
	return (int)o;
}

int kp_config_set_camera_key(struct kp_config *cfg, unsigned camera, const char *key, const char *value,
			     struct kp_config_errors *errs)
{
	errs->count = 0; /* no 8 KiB clear per key: a plan sets hundreds */
	errs->text[0] = '\0';
	struct parse_ctx p = {.name = "the change",
			      .cfg = cfg,
			      .errs = errs,
			      .cur_camera = (int)camera,
			      .cur_webhook = -1,
			      .cur_site = -1};
	return set_key(&p, "camera", NULL, &cfg->cameras[camera], key, value) == 0 ? 0 : -EINVAL;
}

int kp_config_add_camera(struct kp_config *cfg, const char *name, struct kp_config_errors *errs)
{
	errs->count = 0;
	errs->text[0] = '\0';
	struct parse_ctx p = {
	    .name = "the change", .cfg = cfg, .errs = errs, .cur_camera = -1, .cur_webhook = -1, .cur_site = -1};
	char section[KP_CAMERA_NAME_MAX + 16];
	snprintf(section, sizeof section, "camera \"%s\"", name);
	p.section_line = UINT_MAX; /* no camera section is on that line: always a new one */
	return camera_section(&p, section) < 0 ? -EINVAL : 0;
}

int kp_config_validate(struct kp_config *cfg, struct kp_config_errors *errs)
{
	errs->count = 0;
	errs->text[0] = '\0';
	struct parse_ctx p = {.name = "the changed configuration",
			      .cfg = cfg,
			      .errs = errs,
			      .cur_camera = -1,
			      .cur_webhook = -1,
			      .cur_site = -1};
	validate(&p);
	return errs->count ? -EINVAL : 0;
}
