/* The typed snapshot of the configuration (GET /api/v1/config, config_ask.c): the
 * global sections and the cameras from an offset, as the key table shows them (secrets
 * redacted), in pages of at most KP_PLAN_MAX_BYTES. */
#include "config_snapshot.h"

#include <string.h>

#include "config_keys.h"

/* {"KEY": "value as shown", ...} of one section; unset optional keys are left out. */
static void section_values(struct json_w *w, const char *section, const void *base)
{
	static char v[KP_CONF_STR];
	jw_obj(w);
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		if (strcmp(k->section, section))
			continue;
		if ((k->flags & KP_KEY_RTSP_ONLY) && strncmp(((const struct kp_camera_conf *)base)->url.val, "rtsp", 4))
			continue;
		if (kp_config_key_format(k, base, v, sizeof v) != 0)
			continue;
		jw_key(w, k->name);
		jw_str(w, v);
	}
	jw_obj_end(w);
}

/* Cameras from offset while the page stays within KP_PLAN_MAX_BYTES (64 KiB); the
 * global sections on every page. */
void config_snapshot_page(const struct kp_config *cfg, bool file, uint32_t offset, struct json_w *w)
{
	jw_obj(w);
	jw_key(w, "file");
	jw_bool(w, file);
	jw_key(w, "sections");
	jw_obj(w);
	for (size_t i = 0; kp_config_sections[i]; i++) {
		jw_key(w, kp_config_sections[i]);
		section_values(w, kp_config_sections[i], cfg);
	}
	jw_obj_end(w);
	jw_key(w, "total_cameras");
	jw_int(w, cfg->ncameras);
	jw_key(w, "offset");
	jw_int(w, offset);
	jw_key(w, "cameras");
	jw_arr(w);
	/* Room left for the closing of the page and "next_offset". */
	const size_t room = KP_PLAN_MAX_BYTES - 64;
	static char one[KP_PLAN_MAX_BYTES];
	uint32_t i = offset;
	for (; i < cfg->ncameras; i++) {
		const struct kp_camera_conf *c = &cfg->cameras[i];
		struct json_w cw;
		size_t n;
		jw_init(&cw, one, sizeof one);
		jw_obj(&cw);
		jw_key(&cw, "name");
		jw_str(&cw, c->name);
		jw_key(&cw, "values");
		section_values(&cw, "camera", c);
		jw_obj_end(&cw);
		if (jw_finish(&cw, &n) < 0 || w->len + n + 1 > room)
			break; /* this camera goes on the next page */
		jw_json(w, one, n);
	}
	jw_arr_end(w);
	jw_key(w, "next_offset");
	if (i < cfg->ncameras)
		jw_int(w, i);
	else
		jw_null(w);
	jw_obj_end(w);
}
