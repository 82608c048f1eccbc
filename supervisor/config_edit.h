/* Edits of keeppeek.conf as text that keep everything else as written: comments, blank
 * lines, the order of sections and keys, the spelling of untouched values. Used by
 * configuration plans (config_plan.c). The text is in a caller-owned buffer. */
#ifndef KP_CONFIG_EDIT_H
#define KP_CONFIG_EDIT_H

#include <stddef.h>

struct conf_text {
	char *p;
	size_t len, cap; /* cap: the most the text may grow to */
};

/* Sets key = value in the section whose header names it: "keeppeek", "web", ... or a
 * camera's name for [camera "NAME"]. An existing line keeps its spacing and inline
 * comment; a new one goes after the section's last key. Returns 0, -ENOENT (no such
 * section) or -ENOSPC (the text would exceed cap). */
int conf_text_set(struct conf_text *t, const char *section, const char *camera, const char *key, const char *value);

/* Appends [camera "NAME"] with its first key lines ("url = ...\n..."). -EEXIST, -ENOSPC. */
int conf_text_add_camera(struct conf_text *t, const char *name, const char *lines);

/* Removes [camera "NAME"] and its keys (comments after its last key stay: they usually
 * introduce what follows). -ENOENT. */
int conf_text_remove_camera(struct conf_text *t, const char *name);

#endif
