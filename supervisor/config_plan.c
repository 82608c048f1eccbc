/* Configuration plans (see config_plan.h): targets resolved against the parsed file,
 * the candidate built with config_edit.c and validated by the loader, the difference
 * computed key by key from the key table, and the plan written and read back as text. */
#include "config_plan.h"

#include <errno.h>
#include <fnmatch.h>
#include <ini.h>
#include <stdarg.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"

#define PLAN_MAGIC       "keeppeek-plan 1"
#define KP_CONF_LINE_MAX (INI_MAX_LINE - 3) /* characters of a line, as the loader reads them */

static struct kp_config base_cfg, cand_cfg;
static struct kp_config_errors errs;

static int fail(char *why, size_t len, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return err;
}

void plan_digest(const char *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	if (!EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) || mdlen != sizeof md)
		memset(md, 0, sizeof md);
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < sizeof md; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

int plan_field_parse(const char *arg, struct plan_field *f, char *why, size_t whylen)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof f->key)
		return fail(why, whylen, -EINVAL, "'%s' is not KEY=VALUE", arg);
	snprintf(f->key, sizeof f->key, "%.*s", (int)(eq - arg), arg);
	if (strlen(eq + 1) >= sizeof f->value)
		return fail(why, whylen, -EINVAL, "the value of %s is longer than %d bytes", f->key, KP_CONF_STR - 1);
	snprintf(f->value, sizeof f->value, "%s", eq + 1);
	return 0;
}

/* A value the file can hold on one line as given, and no password written out. */
static int check_field(const struct plan_field *f, const struct kp_key **ret, char *why, size_t len)
{
	const struct kp_key *k = kp_config_key_find("camera", f->key);
	if (!k)
		return fail(why, len, -EINVAL, "%s is not a camera key (see keeppeekctl config keys)", f->key);
	for (const char *s = f->value; *s; s++) {
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return fail(why, len, -EINVAL, "the value of %s has a control character", f->key);
		if (*s == ';' && (s == f->value || s[-1] == ' ' || s[-1] == '\t'))
			return fail(why, len, -EINVAL, "the value of %s has ' ;', which starts a comment", f->key);
	}
	/* "key = value" must fit a line of the file (inih's INI_MAX_LINE, keeppeek.conf(5)). */
	if (strlen(f->key) + 3 + strlen(f->value) > KP_CONF_LINE_MAX)
		return fail(why, len, -EINVAL, "%s = VALUE would be longer than a line of the file (%d characters)",
			    f->key, KP_CONF_LINE_MAX);
	if (f->value[0] == ' ' || f->value[0] == '\t' || (f->value[0] && strchr(" \t", f->value[strlen(f->value) - 1])))
		return fail(why, len, -EINVAL, "the value of %s starts or ends with a blank", f->key);
	if ((k->flags & KP_KEY_SECRET) && !strstr(f->value, "${") && strncmp(f->value, "file:", 5)) {
		const char *a = strstr(f->value, "://");
		a = a ? a + 3 : f->value;
		const char *at = NULL, *end = a + strcspn(a, "/?#");
		for (const char *s = a; s < end; s++)
			if (*s == '@')
				at = s;
		if (at && memchr(a, ':', (size_t)(at - a)))
			return fail(why, len, -EINVAL,
				    "%s carries a password: write it as ${NAME} (set in keeppeekd's environment) or "
				    "file:PATH, so that plans, logs and the UI never hold it",
				    f->key);
	}
	*ret = k;
	return 0;
}

static bool has_label(const char *labels, const char *word)
{
	size_t n = strlen(word);
	for (const char *s = labels; *s;) {
		size_t w = strcspn(s, ", \t");
		if (w == n && !memcmp(s, word, n))
			return true;
		s += w;
		s += strspn(s, ", \t");
	}
	return false;
}

/* The cameras the targets name, in file order, as indices into cfg->cameras. */
static int resolve(const struct kp_config *cfg, const char *targets, bool pick[KP_MAX_CAMERAS], unsigned *n, char *why,
		   size_t len)
{
	char copy[sizeof((struct plan_request *)0)->targets];
	snprintf(copy, sizeof copy, "%s", targets);
	memset(pick, 0, KP_MAX_CAMERAS * sizeof pick[0]);
	char *save = NULL;
	bool any = false;
	for (char *t = strtok_r(copy, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		bool matched = false;
		any = true;
		for (unsigned i = 0; i < cfg->ncameras; i++) {
			const struct kp_camera_conf *c = &cfg->cameras[i];
			bool m =
			    !strncmp(t, "label:", 6) ? has_label(c->labels.val, t + 6) : fnmatch(t, c->name, 0) == 0;
			if (m)
				pick[i] = matched = true;
		}
		if (!matched)
			return fail(why, len, -ENOENT, "no camera matches '%s'", t);
	}
	if (!any)
		return fail(why, len, -EINVAL, "no cameras named (names, globs or label:WORD, comma-separated)");
	*n = 0;
	for (unsigned i = 0; i < cfg->ncameras; i++)
		*n += pick[i];
	if (*n > KP_PLAN_MAX_CAMERAS)
		return fail(why, len, -E2BIG, "the targets name %u cameras; a plan changes at most %d", *n,
			    KP_PLAN_MAX_CAMERAS);
	return 0;
}

struct picked {
	const struct kp_config *base;
	const bool *pick;
	unsigned next; /* sections come in the file's order: look from the last match on */
};

static bool is_picked(const char *name, size_t len, void *arg)
{
	struct picked *p = arg;
	for (unsigned k = 0; k < p->base->ncameras; k++) {
		unsigned i = (p->next + k) % p->base->ncameras;
		const char *n = p->base->cameras[i].name;
		if (strlen(n) == len && !memcmp(n, name, len)) {
			p->next = i + 1;
			return p->pick[i];
		}
	}
	return false;
}

/* Every field of rq valid, none twice; *users gains the readers of each. */
static int check_fields(const struct plan_request *rq, unsigned *users, char *why, size_t len)
{
	if (rq->nfields > KP_PLAN_MAX_FIELDS)
		return fail(why, len, -E2BIG, "a plan sets at most %d fields", KP_PLAN_MAX_FIELDS);
	for (unsigned i = 0; i < rq->nfields; i++) {
		const struct kp_key *k = NULL;
		int r = check_field(&rq->fields[i], &k, why, len);
		if (r < 0)
			return r;
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(rq->fields[j].key, rq->fields[i].key))
				return fail(why, len, -EINVAL, "%s is set twice", rq->fields[i].key);
		*users |= k->users;
	}
	return 0;
}

/* The candidate text: base with rq applied to the picked cameras, checked by the
 * loader (into cand_cfg); *users collects who reads what changed. */
static int candidate(const char *base, size_t base_len, const struct plan_request *rq, const bool *pick,
		     struct conf_text *out, unsigned *users, char *why, size_t len)
{
	if (base_len > out->cap)
		return fail(why, len, -E2BIG, "the configuration is larger than %zu bytes", out->cap);
	memcpy(out->p, base, base_len);
	out->len = base_len;
	*users = 0;
	int fr = check_fields(rq, users, why, len);
	if (fr < 0)
		return fr;
	int r = 0;
	if (rq->kind == PLAN_ADD_CAMERA) {
		char lines[KP_PLAN_MAX_FIELDS * (KP_CONF_STR + 40)];
		size_t o = 0;
		for (unsigned i = 0; i < rq->nfields; i++)
			o += (size_t)snprintf(lines + o, sizeof lines - o, "%s = %s\n", rq->fields[i].key,
					      rq->fields[i].value);
		r = conf_text_add_camera(out, rq->camera, lines);
		if (r == -EEXIST)
			return fail(why, len, r, "camera '%s' already exists", rq->camera);
		*users |= KP_USER_SUPERVISOR | KP_USER_INGESTD | KP_USER_RECORDERD;
	} else if (rq->kind == PLAN_REMOVE_CAMERA) {
		r = conf_text_remove_camera(out, rq->camera);
		if (r == -ENOENT)
			return fail(why, len, r, "there is no camera '%s'", rq->camera);
		*users |= KP_USER_SUPERVISOR | KP_USER_INGESTD | KP_USER_RECORDERD;
	} else {
		const char *keys[KP_PLAN_MAX_FIELDS], *values[KP_PLAN_MAX_FIELDS];
		for (unsigned i = 0; i < rq->nfields; i++) {
			keys[i] = rq->fields[i].key;
			values[i] = rq->fields[i].value;
		}
		struct picked p = {.base = &base_cfg, .pick = pick};
		struct conf_set set = {.keys = keys, .values = values, .n = rq->nfields, .pick = is_picked, .arg = &p};
		struct conf_text in = {.p = (char *)base, .len = base_len, .cap = base_len};
		r = conf_text_set_cameras(&in, out, &set);
	}
	if (r < 0)
		return fail(why, len, r, "editing the configuration failed: %s", strerror(-r));
	out->p[out->len] = '\0';
	if (kp_config_load_string("the changed configuration", out->p, &cand_cfg, &errs) < 0)
		return fail(why, len, -EINVAL, "the plan would make the configuration invalid:\n%s", errs.text);
	return 0;
}

/* The index of the camera called name, looked for from hint on (an edit keeps the
 * order of cameras, so hint is usually it). */
static int find_camera(const struct kp_config *cfg, const char *name, unsigned hint)
{
	for (unsigned k = 0; k < cfg->ncameras; k++) {
		unsigned i = (hint + k) % cfg->ncameras;
		if (!strcmp(cfg->cameras[i].name, name))
			return (int)i;
	}
	return -1;
}

/* "# CAMERA: KEY: OLD -> NEW" for every key that differs; returns the count or -E2BIG. */
static int diff_camera(const struct kp_camera_conf *a, const struct kp_camera_conf *b, char *out, size_t cap, size_t *o)
{
	static char va[KP_CONF_STR], vb[KP_CONF_STR];
	int n = 0;
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		if (strcmp(k->section, "camera") || (a && b && kp_config_key_equal(k, a, b)))
			continue;
		int ra = a ? kp_config_key_format(k, a, va, sizeof va) : 1;
		int rb = b ? kp_config_key_format(k, b, vb, sizeof vb) : 1;
		if (ra == 1)
			memcpy(va, "(unset)", 8);
		if (rb == 1)
			memcpy(vb, "(unset)", 8);
		const struct kp_conf_str *sa = NULL, *sb = NULL;
		if (kp_config_key_is_string(k)) {
			sa = a ? (const struct kp_conf_str *)(const void *)((const char *)a + k->offset) : NULL;
			sb = b ? (const struct kp_conf_str *)(const void *)((const char *)b + k->offset) : NULL;
		}
		bool differ = strcmp(va, vb) || (sa && sb && strcmp(sa->val, sb->val));
		if (!differ)
			continue;
		bool secret = (k->flags & KP_KEY_SECRET) || (sa && sa->secret_ref) || (sb && sb->secret_ref);
		/* "# CAMERA: KEY: OLD -> NEW", "# CAMERA: KEY: NEW" (added) or "...: changed" */
		const char *parts[8] = {"# ", (a ? a : b)->name, ": ", k->name, ": "};
		unsigned np = 5;
		if (secret)
			parts[np++] = a ? "changed" : "set";
		else if (!a)
			parts[np++] = vb;
		else
			parts[np++] = va, parts[np++] = " -> ", parts[np++] = vb;
		for (unsigned i2 = 0; i2 <= np; i2++) {
			const char *t = i2 < np ? parts[i2] : "\n";
			size_t tl = strlen(t);
			if (tl >= cap - *o)
				return -E2BIG;
			memcpy(out + *o, t, tl);
			*o += tl;
		}
		out[*o] = '\0';
		n++;
	}
	return n;
}

static int put(char *out, size_t cap, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int put(char *out, size_t cap, size_t *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out + *o, cap - *o, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *o)
		return -E2BIG;
	*o += (size_t)n;
	return 0;
}

/* The candidate as a typed configuration (cand_cfg): base with rq applied to the picked
 * cameras, each value set and checked as the loader would, then the checks that involve
 * several keys. The text is edited only at apply, where the whole file is loaded again. */
static int typed_candidate(const struct kp_config *base, const struct plan_request *rq, const bool *pick,
			   unsigned *users, char *why, size_t len)
{
	*users = 0;
	int fr = check_fields(rq, users, why, len);
	if (fr < 0)
		return fr;
	/* The global part and the cameras in use, not the unused slots. */
	memcpy(&cand_cfg, base, offsetof(struct kp_config, cameras));
	memcpy(cand_cfg.cameras, base->cameras, base->ncameras * sizeof base->cameras[0]);
	int r = 0;
	if (rq->kind == PLAN_ADD_CAMERA) {
		for (unsigned i = 0; i < base->ncameras; i++)
			if (!strcmp(base->cameras[i].name, rq->camera))
				return fail(why, len, -EEXIST, "camera '%s' already exists", rq->camera);
		r = kp_config_add_camera(&cand_cfg, rq->camera, &errs);
		for (unsigned i = 0; r == 0 && i < rq->nfields; i++)
			r = kp_config_set_camera_key(&cand_cfg, cand_cfg.ncameras - 1, rq->fields[i].key,
						     rq->fields[i].value, &errs);
		*users |= KP_USER_SUPERVISOR | KP_USER_INGESTD | KP_USER_RECORDERD;
	} else if (rq->kind == PLAN_REMOVE_CAMERA) {
		unsigned i = 0;
		while (i < cand_cfg.ncameras && strcmp(cand_cfg.cameras[i].name, rq->camera))
			i++;
		if (i == cand_cfg.ncameras)
			return fail(why, len, -ENOENT, "there is no camera '%s'", rq->camera);
		memmove(&cand_cfg.cameras[i], &cand_cfg.cameras[i + 1],
			(cand_cfg.ncameras - i - 1) * sizeof cand_cfg.cameras[0]);
		cand_cfg.ncameras--;
		*users |= KP_USER_SUPERVISOR | KP_USER_INGESTD | KP_USER_RECORDERD;
	} else {
		for (unsigned c = 0; c < cand_cfg.ncameras && r == 0; c++)
			for (unsigned i = 0; pick[c] && i < rq->nfields && r == 0; i++)
				r = kp_config_set_camera_key(&cand_cfg, c, rq->fields[i].key, rq->fields[i].value,
							     &errs);
	}
	if (r == 0)
		r = kp_config_validate(&cand_cfg, &errs);
	if (r < 0)
		return fail(why, len, -EINVAL, "the plan would make the configuration invalid:\n%s", errs.text);
	return 0;
}

int plan_make(const char *base, size_t base_len, const struct kp_config *parsed, const struct plan_request *rq,
	      char *plan, char *why, size_t whylen)
{
	static char base_copy[KP_CONFIG_FILE_MAX + 1];
	if (base_len > KP_CONFIG_FILE_MAX)
		return fail(why, whylen, -E2BIG, "the configuration is larger than %d bytes", KP_CONFIG_FILE_MAX);
	const struct kp_config *bc = parsed;
	if (!bc) {
		memcpy(base_copy, base, base_len);
		base_copy[base_len] = '\0';
		if (kp_config_load_string("the configuration file", base_copy, &base_cfg, &errs) < 0)
			return fail(why, whylen, -EINVAL, "the configuration file is invalid; fix it first:\n%s",
				    errs.text);
		bc = &base_cfg;
	}
	static bool pick[KP_MAX_CAMERAS];
	unsigned npick = 0;
	memset(pick, 0, sizeof pick);
	int r = 0;
	if (rq->kind == PLAN_EDIT) {
		if (!rq->nfields)
			return fail(why, whylen, -EINVAL, "nothing to set (give KEY=VALUE)");
		r = resolve(bc, rq->targets, pick, &npick, why, whylen);
	} else if (rq->kind == PLAN_ADD_CAMERA && bc->ncameras >= KP_MAX_CAMERAS) {
		r = fail(why, whylen, -E2BIG, "there are already %d cameras", KP_MAX_CAMERAS);
	}
	if (r < 0)
		return r;
	unsigned users;
	r = typed_candidate(bc, rq, pick, &users, why, whylen);
	if (r < 0)
		return r;

	char digest[65];
	plan_digest(base, base_len, digest);
	size_t o = 0;
	const size_t cap = KP_PLAN_MAX_BYTES;
	r = put(plan, cap, &o,
		"# KeepPeek configuration plan; apply it with: keeppeekctl config apply FILE\n%s\nbase sha256:%s\n",
		PLAN_MAGIC, digest);
	if (r == 0 && rq->kind == PLAN_EDIT) {
		r = put(plan, cap, &o, "cameras ");
		for (unsigned i = 0, k = 0; r == 0 && i < bc->ncameras; i++) {
			if (!pick[i])
				continue;
			size_t nl = strlen(bc->cameras[i].name);
			if (o + nl + 2 >= cap) {
				r = -E2BIG;
				break;
			}
			if (k++)
				plan[o++] = ',';
			memcpy(plan + o, bc->cameras[i].name, nl + 1);
			o += nl;
		}
		if (r == 0)
			r = put(plan, cap, &o, "\n");
	} else if (r == 0) {
		r = put(plan, cap, &o, "%s %s\n", rq->kind == PLAN_ADD_CAMERA ? "add" : "remove", rq->camera);
	}
	for (unsigned i = 0; r == 0 && i < rq->nfields; i++)
		r = put(plan, cap, &o, "set %s=%s\n", rq->fields[i].key, rq->fields[i].value);
	int changes = 0;
	for (unsigned i = 0; r == 0 && i < bc->ncameras; i++) {
		int j = find_camera(&cand_cfg, bc->cameras[i].name, i);
		if (j < 0) {
			r = put(plan, cap, &o, "# %s: removed\n", bc->cameras[i].name);
			changes++;
			continue;
		}
		int n = diff_camera(&bc->cameras[i], &cand_cfg.cameras[j], plan, cap, &o);
		r = n < 0 ? n : 0;
		changes += n > 0 ? n : 0;
	}
	for (unsigned j = 0; r == 0 && j < cand_cfg.ncameras; j++)
		if (find_camera(bc, cand_cfg.cameras[j].name, j) < 0) {
			r = put(plan, cap, &o, "# %s: added\n", cand_cfg.cameras[j].name);
			int n = r == 0 ? diff_camera(NULL, &cand_cfg.cameras[j], plan, cap, &o) : 0;
			r = n < 0 ? n : r;
			changes++;
		}
	if (r == 0)
		r = put(plan, cap, &o, "# %d change%s\n", changes, changes == 1 ? "" : "s");
	if (r < 0)
		return fail(why, whylen, -E2BIG, "the plan would be larger than %d bytes", KP_PLAN_MAX_BYTES);
	if (!changes)
		return fail(why, whylen, -EALREADY, "the plan changes nothing: the cameras already have these values");
	return (int)o;
}

/* The next line of the plan that is not a comment, without its newline. */
static bool plan_line(const char *plan, size_t len, size_t *at, char *line, size_t cap)
{
	while (*at < len) {
		const char *s = plan + *at, *nl = memchr(s, '\n', len - *at);
		size_t n = nl ? (size_t)(nl - s) : len - *at;
		*at += n + (nl ? 1 : 0);
		if (n == 0 || s[0] == '#')
			continue;
		if (n >= cap)
			n = cap - 1;
		memcpy(line, s, n);
		line[n] = '\0';
		return true;
	}
	return false;
}

int plan_apply(const char *base, size_t base_len, const char *plan, size_t plan_len, struct conf_text *out,
	       unsigned *users, char *why, size_t whylen)
{
	static char line[KP_CONF_STR + 64], base_copy[KP_CONFIG_FILE_MAX + 1];
	static struct plan_request rq;
	memset(&rq, 0, sizeof rq);
	if (plan_len > KP_PLAN_MAX_BYTES)
		return fail(why, whylen, -EINVAL, "a plan is at most %d bytes", KP_PLAN_MAX_BYTES);
	size_t at = 0;
	if (!plan_line(plan, plan_len, &at, line, sizeof line) || strcmp(line, PLAN_MAGIC))
		return fail(why, whylen, -EINVAL, "not a KeepPeek configuration plan (no '%s' line)", PLAN_MAGIC);
	char digest[65];
	plan_digest(base, base_len, digest);
	if (!plan_line(plan, plan_len, &at, line, sizeof line) || strncmp(line, "base sha256:", 12))
		return fail(why, whylen, -EINVAL, "the plan has no 'base sha256:' line");
	if (strcmp(line + 12, digest))
		return fail(why, whylen, -ESTALE,
			    "the configuration file changed since this plan was made (plan base %.12s, file now "
			    "%.12s): make the plan again",
			    line + 12, digest);
	if (!plan_line(plan, plan_len, &at, line, sizeof line))
		return fail(why, whylen, -EINVAL, "the plan names no change");
	if (!strncmp(line, "cameras ", 8)) {
		rq.kind = PLAN_EDIT;
		if (strlen(line + 8) >= sizeof rq.targets)
			return fail(why, whylen, -EINVAL, "the plan's camera list is too long");
		snprintf(rq.targets, sizeof rq.targets, "%s", line + 8);
	} else if (!strncmp(line, "add ", 4) || !strncmp(line, "remove ", 7)) {
		rq.kind = line[0] == 'a' ? PLAN_ADD_CAMERA : PLAN_REMOVE_CAMERA;
		const char *name = strchr(line, ' ') + 1;
		if (strlen(name) > KP_CAMERA_NAME_MAX)
			return fail(why, whylen, -EINVAL, "the plan's camera name is too long");
		snprintf(rq.camera, sizeof rq.camera, "%s", name);
	} else {
		return fail(why, whylen, -EINVAL, "the plan's change '%.40s' is not cameras, add or remove", line);
	}
	while (plan_line(plan, plan_len, &at, line, sizeof line)) {
		if (strncmp(line, "set ", 4))
			return fail(why, whylen, -EINVAL, "the plan line '%.40s' is not 'set KEY=VALUE'", line);
		if (rq.nfields == KP_PLAN_MAX_FIELDS)
			return fail(why, whylen, -E2BIG, "a plan sets at most %d fields", KP_PLAN_MAX_FIELDS);
		int r = plan_field_parse(line + 4, &rq.fields[rq.nfields++], why, whylen);
		if (r < 0)
			return r;
	}
	memcpy(base_copy, base, base_len);
	base_copy[base_len] = '\0';
	if (kp_config_load_string("the configuration file", base_copy, &base_cfg, &errs) < 0)
		return fail(why, whylen, -EINVAL, "the configuration file is invalid; fix it first:\n%s", errs.text);
	static bool pick[KP_MAX_CAMERAS];
	unsigned npick = 0;
	if (rq.kind == PLAN_EDIT) {
		int r = resolve(&base_cfg, rq.targets, pick, &npick, why, whylen);
		if (r < 0)
			return r;
	}
	return candidate(base, base_len, &rq, pick, out, users, why, whylen);
}
