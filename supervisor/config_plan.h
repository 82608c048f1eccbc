/* Configuration plans: a change asked for (fields set on cameras chosen by name, glob or
 * label; a camera added or removed) resolved against the configuration file as it is,
 * applied to a candidate copy, the whole candidate validated, and the semantic
 * difference written out with secrets shown only as "changed". The plan is text: the
 * SHA-256 of the file it was made on, the cameras it resolved to, the fields, and the
 * difference as comments. Applying it again checks the digest first, so a plan made on a
 * file that changed since is refused. keeppeekd makes and applies plans; keeppeekctl and
 * webd only ask (docs/decisions/0008-configuration-plans.md). */
#ifndef KP_CONFIG_PLAN_H
#define KP_CONFIG_PLAN_H

#include <stddef.h>

#include "config.h"
#include "config_edit.h"

enum plan_kind { PLAN_EDIT, PLAN_ADD_CAMERA, PLAN_REMOVE_CAMERA };

struct plan_field {
	char key[33];
	char value[KP_CONF_STR];
};

struct plan_request {
	enum plan_kind kind;
	char targets[1024];                  /* PLAN_EDIT: names, globs, label:WORD, comma-separated */
	char camera[KP_CAMERA_NAME_MAX + 1]; /* PLAN_ADD_CAMERA, PLAN_REMOVE_CAMERA */
	struct plan_field fields[KP_PLAN_MAX_FIELDS];
	unsigned nfields;
};

/* The SHA-256 of text[0..len) in hex, as plans name their base. */
void plan_digest(const char *text, size_t len, char out[65]);

/* Parses "key=value" into f (-EINVAL with why when it is not that). */
int plan_field_parse(const char *arg, struct plan_field *f, char *why, size_t whylen);

/* Makes the plan of rq against the file's text base[0..base_len) (parsed: that text
 * already loaded, e.g. the running configuration when the file has not changed since;
 * NULL: it is loaded here): the candidate is the typed configuration with rq applied
 * and checked as the loader would (the text is edited and loaded again at apply). Writes
 * the plan into plan
 * (at most KP_PLAN_MAX_BYTES) and returns its length, or a negative errno with why
 * filled: -EINVAL (a field, a value or the candidate is invalid), -ENOENT (a target
 * matches no camera), -E2BIG (more than KP_PLAN_MAX_CAMERAS cameras or fields, or the
 * plan would exceed KP_PLAN_MAX_BYTES), -EEXIST (the camera to add exists), -EALREADY
 * (it changes nothing). */
int plan_make(const char *base, size_t base_len, const struct kp_config *parsed, const struct plan_request *rq,
	      char *plan, char *why, size_t whylen);

/* Applies plan[0..plan_len) to base: on success the candidate text is in out (cap is
 * its limit), *users the processes that read a changed key (enum kp_key_users), and 0
 * is returned (out->p holds cap + 1 bytes: the text is NUL-terminated). -ESTALE when base is not the file the plan was
 * made on, -EINVAL when the plan is malformed or the candidate invalid (why says which field and why). */
int plan_apply(const char *base, size_t base_len, const char *plan, size_t plan_len, struct conf_text *out,
	       unsigned *users, char *why, size_t whylen);

#endif
