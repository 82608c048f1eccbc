/* Configuration loading: a line-counting reader in front of inih, one handler that knows
 * every section and key, ${ENV} and file: expansion, whole-file validation, and the
 * redacted rendering used by logs and `keeppeekctl config show`. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct parse_ctx {
	const char *name;
	FILE *file;
	const char *text;
	unsigned line;
	unsigned section_line; /* line of the latest [section] header */
	struct kp_config *cfg;
	struct kp_config_errors *errs;
	unsigned err_line; /* last line that already has an error */
	char seen[64][48]; /* "section\nkey" pairs already set, outside cameras */
	unsigned nseen;
	char cam_seen[16][24]; /* keys seen in the current camera section */
	unsigned ncam_seen;
	int cur_camera;
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
	snprintf(out->raw, sizeof out->raw, "%s", in);
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

static int parse_uint(struct parse_ctx *p, const char *section, const char *key, const char *v, unsigned min,
		      unsigned max, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (!isdigit((unsigned char)v[0]) || *end || errno || n < min || n > max) {
		add_error(p, p->line, "%s in [%s] must be an integer from %u to %u, not '%s'", key, section, min, max,
			  v);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

/* max_disk_gb: gigabytes (10^9 bytes) with up to three decimals, kept as megabytes. */
static int parse_gb(struct parse_ctx *p, const char *section, const char *key, const char *v, unsigned *out_mb)
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
	if (*s || !digits || !isdigit((unsigned char)v[0]) || mb > 1000000000ull) {
		add_error(p, p->line,
			  "%s in [%s] must be a number of gigabytes from 0 to 1000000 with at most three decimals, "
			  "not '%s'",
			  key, section, v);
		return -1;
	}
	*out_mb = (unsigned)mb;
	return 0;
}

static int parse_bool(struct parse_ctx *p, const char *key, const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		*out = false;
	else {
		add_error(p, p->line, "%s must be yes or no, not '%s'", key, v);
		return -1;
	}
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

/* [rtc] addresses: at most 8 IPv4/IPv6 literals separated by commas (the worker
 * message carries 512 bytes). */
static int check_addresses(struct parse_ctx *p, const char *v)
{
	char copy[KP_CONF_STR];
	snprintf(copy, sizeof copy, "%s", v);
	if (strlen(v) >= 512) {
		add_error(p, p->line, "addresses is longer than 511 characters");
		return -1;
	}
	char *save = NULL;
	unsigned n = 0;
	for (char *ip = strtok_r(copy, ", ", &save); ip; ip = strtok_r(NULL, ", ", &save)) {
		unsigned char buf[sizeof(struct in6_addr)];
		if (inet_pton(AF_INET, ip, buf) != 1 && inet_pton(AF_INET6, ip, buf) != 1) {
			add_error(p, p->line, "addresses: '%s' is not an IPv4 or IPv6 address", ip);
			return -1;
		}
		if (++n > 8) {
			add_error(p, p->line, "addresses: more than 8 addresses");
			return -1;
		}
	}
	return 0;
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

static int parse_listen(struct parse_ctx *p, const char *v)
{
	char bad[KP_CONF_STR + 64];
	if (kp_config_check_listen(v, bad, sizeof bad) < 0) {
		add_error(p, p->line, "%s", bad);
		return -1;
	}
	return 0;
}

static int parse_streams(struct parse_ctx *p, const char *v, unsigned *out)
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
			add_error(p, p->line, "unknown stream '%s' (main, sub)", tok);
			return -1;
		}
	}
	if (!bits) {
		add_error(p, p->line, "streams needs main, sub or both");
		return -1;
	}
	*out = bits;
	return 0;
}

static int valid_camera_url(const char *url)
{
	static const char *const schemes[] = {"baichuan://", "bcudp://", "rtsp://", "rtsps://"};
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
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

/* Returns 1 if the key was already set in this scope (and records it otherwise). */
static int duplicate(struct parse_ctx *p, const char *section, const char *key)
{
	char id[48];
	snprintf(id, sizeof id, "%s\n%s", section, key);
	if (p->cur_camera >= 0) {
		for (unsigned i = 0; i < p->ncam_seen; i++)
			if (!strcmp(p->cam_seen[i], key))
				return 1;
		if (p->ncam_seen < 16)
			snprintf(p->cam_seen[p->ncam_seen++], sizeof p->cam_seen[0], "%s", key);
		return 0;
	}
	for (unsigned i = 0; i < p->nseen; i++)
		if (!strcmp(p->seen[i], id))
			return 1;
	if (p->nseen < 64)
		snprintf(p->seen[p->nseen++], sizeof p->seen[0], "%s", id);
	return 0;
}

static int camera_section(struct parse_ctx *p, const char *section)
{
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
	struct kp_config *cfg = p->cfg;
	if (p->cur_camera >= 0 && !strcmp(cfg->cameras[p->cur_camera].name, name) &&
	    cfg->cameras[p->cur_camera].line == p->section_line)
		return p->cur_camera;
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
	struct kp_camera_conf *cam = &cfg->cameras[cfg->ncameras];
	memset(cam, 0, sizeof *cam);
	snprintf(cam->name, sizeof cam->name, "%s", name);
	cam->streams = KP_STREAM_MAIN | KP_STREAM_SUB;
	cam->record = KP_RECORD_CONTINUOUS;
	cam->motion_events = true;
	cam->audio = true;
	cam->line = p->section_line;
	p->cur_camera = (int)cfg->ncameras++;
	p->ncam_seen = 0;
	return p->cur_camera;
}

static int camera_key(struct parse_ctx *p, struct kp_camera_conf *cam, const char *key, const char *v)
{
	if (!strcmp(key, "url")) {
		if (expand(p, v, &cam->url) < 0)
			return -1;
		if (!valid_camera_url(cam->url.val)) {
			add_error(p, p->line,
				  "camera '%s': url must start with baichuan://, bcudp://, rtsp:// or rtsps://",
				  cam->name);
			return -1;
		}
		const char *why = url_authority_error(cam->url.val);
		if (why) {
			add_error(p, p->line, "camera '%s': url is not valid: %s", cam->name, why);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "sub_url")) {
		if (expand(p, v, &cam->sub_url) < 0)
			return -1;
		if (strncmp(cam->sub_url.val, "rtsp://", 7) && strncmp(cam->sub_url.val, "rtsps://", 8)) {
			add_error(p, p->line, "camera '%s': sub_url must start with rtsp:// or rtsps://", cam->name);
			return -1;
		}
		const char *why = url_authority_error(cam->sub_url.val);
		if (why) {
			add_error(p, p->line, "camera '%s': sub_url is not valid: %s", cam->name, why);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "streams"))
		return parse_streams(p, v, &cam->streams);
	if (!strcmp(key, "record")) {
		if (!strcmp(v, "continuous"))
			cam->record = KP_RECORD_CONTINUOUS;
		else if (!strcmp(v, "events"))
			cam->record = KP_RECORD_EVENTS;
		else if (!strcmp(v, "off"))
			cam->record = KP_RECORD_OFF;
		else {
			add_error(p, p->line, "record must be continuous, events or off, not '%s'", v);
			return -1;
		}
		return 0;
	}
	if (!strcmp(key, "retention_days"))
		return parse_uint(p, "camera", key, v, 0, 3650, &cam->retention_days);
	if (!strcmp(key, "motion_events"))
		return parse_bool(p, key, v, &cam->motion_events);
	if (!strcmp(key, "audio"))
		return parse_bool(p, key, v, &cam->audio);
	if (!strcmp(key, "snapshot_interval"))
		return parse_uint(p, "camera", key, v, 0, 86400, &cam->snapshot_interval);
	if (!strcmp(key, "rollover_secs"))
		return parse_uint(p, "camera", key, v, 1, 86400, &cam->rollover_secs);
	add_error(p, p->line, "unknown key '%s' in [camera \"%s\"]", key, cam->name);
	return -1;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct parse_ctx *p = user;
	struct kp_config *cfg = p->cfg;
	if (!strncmp(section, "camera", 6) && (section[6] == ' ' || section[6] == '"' || section[6] == '\0')) {
		int idx = camera_section(p, section);
		if (idx < 0)
			return 0;
		if (duplicate(p, section, key)) {
			add_error(p, p->line, "key '%s' set twice in [%s]", key, section);
			return 0;
		}
		return camera_key(p, &cfg->cameras[idx], key, value) == 0;
	}
	p->cur_camera = -1;
	struct {
		const char *section, *key;
		struct kp_conf_str *str;
	} strings[] = {
	    {"keeppeek", "data_dir", &cfg->data_dir},  {"keeppeek", "run_dir", &cfg->run_dir},
	    {"keeppeek", "user", &cfg->user},          {"web", "listen", &cfg->listen},
	    {"web", "tls_cert", &cfg->tls_cert},       {"web", "tls_key", &cfg->tls_key},
	    {"rtc", "stun_server", &cfg->stun_server}, {"rtc", "addresses", &cfg->rtc_addresses},
	};
	static const char *const sections[] = {"keeppeek", "web", "rtc", "retention"};
	int known_section = 0;
	for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
		known_section |= !strcmp(section, sections[i]);
	if (!known_section) {
		if (p->err_line != p->line)
			add_error(p, p->line, "unknown section [%s]", section);
		return 0;
	}
	if (duplicate(p, section, key)) {
		add_error(p, p->line, "key '%s' set twice in [%s]", key, section);
		return 0;
	}
	for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
		if (strcmp(section, strings[i].section) || strcmp(key, strings[i].key))
			continue;
		if (expand(p, value, strings[i].str) < 0)
			return 0;
		if (strings[i].str == &cfg->listen && parse_listen(p, cfg->listen.val) < 0)
			return 0;
		if (strings[i].str == &cfg->stun_server && cfg->stun_server.val[0] &&
		    !valid_hostport(cfg->stun_server.val)) {
			add_error(p, p->line, "stun_server must be HOST:PORT");
			return 0;
		}
		if (strings[i].str == &cfg->rtc_addresses && check_addresses(p, cfg->rtc_addresses.val) < 0)
			return 0;
		if (strings[i].str == &cfg->user && !cfg->user.val[0]) {
			add_error(p, p->line, "user must not be empty");
			return 0;
		}
		if ((strings[i].str == &cfg->data_dir || strings[i].str == &cfg->run_dir) && !strings[i].str->val[0]) {
			add_error(p, p->line, "%s must not be empty", key);
			return 0;
		}
		return 1;
	}
	if (!strcmp(section, "rtc") && !strcmp(key, "udp_ports")) {
		unsigned a, b;
		char extra;
		if (sscanf(value, "%u-%u%c", &a, &b, &extra) != 2 || a == 0 || b > 65535 || a > b) {
			add_error(p, p->line, "udp_ports must be FIRST-LAST within 1-65535, not '%s'", value);
			return 0;
		}
		cfg->udp_port_min = a;
		cfg->udp_port_max = b;
		return 1;
	}
	if (!strcmp(section, "retention") && !strcmp(key, "max_disk_gb"))
		return parse_gb(p, section, key, value, &cfg->max_disk_mb) == 0;
	if (!strcmp(section, "rtc") && !strcmp(key, "max_transcodes"))
		return parse_uint(p, section, key, value, 1, 64, &cfg->max_transcodes) == 0;
	if (!strcmp(section, "retention") && !strcmp(key, "max_days"))
		return parse_uint(p, section, key, value, 1, 3650, &cfg->max_days) == 0;
	add_error(p, p->line, "unknown key '%s' in [%s]", key, section);
	return 0;
}

void kp_config_defaults(struct kp_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
#define SET(f, v)                                                                                                      \
	do {                                                                                                           \
		snprintf(cfg->f.val, sizeof cfg->f.val, "%s", v);                                                      \
		snprintf(cfg->f.raw, sizeof cfg->f.raw, "%s", v);                                                      \
	} while (0)
	SET(data_dir, "/var/lib/keeppeek");
	SET(run_dir, "/run/keeppeek");
	SET(user, "keeppeek");
	SET(listen, "127.0.0.1:8080");
#undef SET
	cfg->udp_port_min = 50000;
	cfg->udp_port_max = 50100;
	cfg->max_transcodes = 2;
	cfg->max_days = 30;
}

static void validate(struct parse_ctx *p)
{
	struct kp_config *cfg = p->cfg;
	if (!cfg->tls_cert.val[0] != !cfg->tls_key.val[0])
		add_error(p, 0, "[web] tls_cert and tls_key must be set together");
	for (unsigned i = 0; i < cfg->ncameras; i++) {
		struct kp_camera_conf *c = &cfg->cameras[i];
		if (!c->url.val[0])
			add_error(p, c->line, "camera '%s' has no url", c->name);
		else if (c->sub_url.val[0] && strncmp(c->url.val, "rtsp", 4))
			add_error(p, c->line, "camera '%s': sub_url is for rtsp:// cameras only", c->name);
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

static const char *shown(const struct kp_conf_str *s, char *tmp, size_t len)
{
	if (s->secret_ref)
		return s->raw;
	kp_redact_url(s->val, tmp, len);
	return tmp;
}

int kp_config_render(const struct kp_config *cfg, char *buf, size_t len)
{
	static const char *const record_names[] = {"continuous", "events", "off"};
	static char t[7][KP_CONF_STR];
	size_t o = 0;
	int n = snprintf(buf, len,
			 "[keeppeek]\ndata_dir = %s\nrun_dir = %s\nuser = %s\n\n[web]\nlisten = %s\n"
			 "tls_cert = %s\ntls_key = %s\n\n[rtc]\nudp_ports = %u-%u\nstun_server = %s\n"
			 "addresses = %s\nmax_transcodes = %u\n\n"
			 "[retention]\nmax_disk_gb = %u.%03u\nmax_days = %u\n",
			 shown(&cfg->data_dir, t[0], sizeof t[0]), shown(&cfg->run_dir, t[1], sizeof t[1]),
			 shown(&cfg->user, t[2], sizeof t[2]), shown(&cfg->listen, t[3], sizeof t[3]),
			 shown(&cfg->tls_cert, t[4], sizeof t[4]), shown(&cfg->tls_key, t[5], sizeof t[5]),
			 cfg->udp_port_min, cfg->udp_port_max, shown(&cfg->stun_server, t[6], sizeof t[6]),
			 cfg->rtc_addresses.val, cfg->max_transcodes, cfg->max_disk_mb / 1000, cfg->max_disk_mb % 1000,
			 cfg->max_days);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	o = (size_t)n;
	for (unsigned i = 0; i < cfg->ncameras; i++) {
		const struct kp_camera_conf *c = &cfg->cameras[i];
		char rollover[40] = "";
		if (c->rollover_secs)
			snprintf(rollover, sizeof rollover, "rollover_secs = %u\n", c->rollover_secs);
		const char *streams = c->streams == (KP_STREAM_MAIN | KP_STREAM_SUB) ? "main, sub"
				      : c->streams == KP_STREAM_MAIN                 ? "main"
										     : "sub";
		n = snprintf(buf + o, len - o,
			     "\n[camera \"%s\"]\nurl = %s\n%s%s%sstreams = %s\nrecord = %s\nretention_days = %u\n"
			     "motion_events = %s\naudio = %s\nsnapshot_interval = %u\n%s",
			     c->name, shown(&c->url, t[0], sizeof t[0]), c->sub_url.val[0] ? "sub_url = " : "",
			     c->sub_url.val[0] ? shown(&c->sub_url, t[1], sizeof t[1]) : "",
			     c->sub_url.val[0] ? "\n" : "", streams, record_names[c->record], c->retention_days,
			     c->motion_events ? "yes" : "no", c->audio ? "yes" : "no", c->snapshot_interval, rollover);
		if (n < 0 || (size_t)n >= len - o)
			return -ENOSPC;
		o += (size_t)n;
	}
	return (int)o;
}
