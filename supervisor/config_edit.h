/* Edits of keeppeek.conf as text that keep everything else as written: comments, blank
 * lines, the order of sections and keys, the spelling of untouched values. Used by
 * configuration plans (config_plan.c). The text is in a caller-owned buffer. */
#ifndef KP_CONFIG_EDIT_H
#define KP_CONFIG_EDIT_H

#include <stdbool.h>
#include <stddef.h>

struct conf_text {
	char *p;
	size_t len, cap; /* cap: the most the text may grow to */
};

#define CONF_SET_MAX 8

/* Keys to set in the camera sections that pick() accepts (name not NUL-terminated). */
struct conf_set {
	const char *const *keys, *const *values;
	unsigned n; /* at most CONF_SET_MAX */
	bool (*pick)(const char *name, size_t len, void *arg);
	void *arg;
};

/* Writes in to out (which must not overlap it) with the keys set in every picked
 * camera section, in one pass: an existing line keeps its spacing and inline comment;
 * a missing key goes after the section's last key line. 0, -ENOSPC or -E2BIG. */
int conf_text_set_cameras(const struct conf_text *in, struct conf_text *out, const struct conf_set *set);

/* Appends [camera "NAME"] with its first key lines ("url = ...\n..."). -EEXIST, -ENOSPC. */
int conf_text_add_camera(struct conf_text *t, const char *name, const char *lines);

/* Removes [camera "NAME"] and its keys (comments after its last key stay: they usually
 * introduce what follows). -ENOENT. */
int conf_text_remove_camera(struct conf_text *t, const char *name);

#endif
