/* keeppeek.conf edited as lines (see config_edit.h). A line is a section header
 * ("[name]" after blanks), a comment (';' or '#' first), blank, or "key = value" with
 * an optional inline comment (';' after a blank), as inih reads them. */
#include "config_edit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct line {
	size_t start, end; /* [start, end) without the newline */
	size_t next;       /* start of the following line */
};

static bool next_line(const struct conf_text *t, size_t at, struct line *l)
{
	if (at >= t->len)
		return false;
	const char *nl = memchr(t->p + at, '\n', t->len - at);
	l->start = at;
	l->end = nl ? (size_t)(nl - t->p) : t->len;
	l->next = nl ? l->end + 1 : t->len;
	return true;
}

static const char *skip_blank(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\r'))
		s++;
	return s;
}

/* Whether the line is the header of the section (camera: its name, else section). */
static bool is_header(const struct conf_text *t, const struct line *l, const char *section, const char *camera)
{
	const char *s = skip_blank(t->p + l->start, t->p + l->end), *e = t->p + l->end;
	if (s == e || *s != '[')
		return false;
	const char *close = memchr(s, ']', (size_t)(e - s));
	if (!close)
		return false;
	char want[160];
	if (camera)
		snprintf(want, sizeof want, "camera \"%s\"", camera);
	else
		snprintf(want, sizeof want, "%s", section);
	size_t n = (size_t)(close - s - 1);
	return n == strlen(want) && !memcmp(s + 1, want, n);
}

static bool is_any_header(const struct conf_text *t, const struct line *l)
{
	const char *s = skip_blank(t->p + l->start, t->p + l->end);
	return s < t->p + l->end && *s == '[';
}

/* The key of a "key = value" line (length in *n), or NULL for other lines. */
static const char *key_of(const struct conf_text *t, const struct line *l, size_t *n)
{
	const char *s = skip_blank(t->p + l->start, t->p + l->end), *e = t->p + l->end;
	if (s == e || *s == ';' || *s == '#' || *s == '[')
		return NULL;
	const char *k = s;
	while (s < e && *s != '=' && *s != ':')
		s++;
	if (s == e)
		return NULL;
	const char *ke = s;
	while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
		ke--;
	*n = (size_t)(ke - k);
	return k;
}

/* Replaces [at, at + n) with repl. */
static int splice(struct conf_text *t, size_t at, size_t n, const char *repl, size_t rn)
{
	if (t->len - n + rn > t->cap)
		return -ENOSPC;
	memmove(t->p + at + rn, t->p + at + n, t->len - at - n);
	memcpy(t->p + at, repl, rn);
	t->len = t->len - n + rn;
	return 0;
}

/* The section's header line and the end of its last key line (where a new key goes). */
static int find_section(const struct conf_text *t, const char *section, const char *camera, struct line *hdr,
			size_t *body_end, size_t *section_end)
{
	struct line l;
	size_t at = 0;
	bool found = false;
	while (next_line(t, at, &l)) {
		at = l.next;
		if (!found) {
			if (is_header(t, &l, section, camera)) {
				found = true;
				*hdr = l;
				*body_end = l.next;
				*section_end = t->len;
			}
			continue;
		}
		if (is_any_header(t, &l)) {
			*section_end = l.start;
			break;
		}
		size_t kn;
		if (key_of(t, &l, &kn))
			*body_end = l.next;
	}
	return found ? 0 : -ENOENT;
}

/* The name of a [camera "NAME"] header line (length in *n), or NULL. */
static const char *camera_of(const struct conf_text *t, const struct line *l, size_t *n)
{
	const char *s = skip_blank(t->p + l->start, t->p + l->end), *e = t->p + l->end;
	if (e - s < 10 || memcmp(s, "[camera \"", 9))
		return NULL;
	const char *q = memchr(s + 9, '"', (size_t)(e - s - 9));
	if (!q || q + 1 >= e || q[1] != ']')
		return NULL;
	*n = (size_t)(q - s - 9);
	return s + 9;
}

static int put(struct conf_text *out, const char *p, size_t n)
{
	if (n > out->cap - out->len)
		return -ENOSPC;
	memcpy(out->p + out->len, p, n);
	out->len += n;
	return 0;
}

/* A key line with its value replaced: "key = " as written, the value, and an inline
 * comment with the blanks before it. */
static int put_replaced(struct conf_text *out, const struct conf_text *in, const struct line *l, const char *key_end,
			const char *value)
{
	const char *sep = key_end;
	while (*sep != '=' && *sep != ':')
		sep++;
	const char *v = skip_blank(sep + 1, in->p + l->end), *e = in->p + l->end;
	const char *c = v;
	while (c < e && !(*c == ';' && c > v && (c[-1] == ' ' || c[-1] == '\t')))
		c++;
	while (c > v && (c[-1] == ' ' || c[-1] == '\t' || c[-1] == '\r'))
		c--;
	int r = put(out, in->p + l->start, (size_t)(v - in->p) - l->start);
	if (r == 0)
		r = put(out, value, strlen(value));
	if (r == 0)
		r = put(out, c, (size_t)(in->p + l->next - c));
	return r;
}

/* Closes a section: the keys it lacked after its last key line, then the comments and
 * blank lines that followed that line. */
static int close_section(struct conf_text *out, const struct conf_text *in, bool picked, const bool *done,
			 const struct conf_set *set, size_t trailer, size_t at)
{
	int r = 0;
	for (unsigned i = 0; picked && i < set->n && r == 0; i++) {
		if (done[i])
			continue;
		if (out->len && out->p[out->len - 1] != '\n')
			r = put(out, "\n", 1);
		if (r == 0)
			r = put(out, set->keys[i], strlen(set->keys[i]));
		if (r == 0)
			r = put(out, " = ", 3);
		if (r == 0)
			r = put(out, set->values[i], strlen(set->values[i]));
		if (r == 0)
			r = put(out, "\n", 1);
	}
	return r == 0 ? put(out, in->p + trailer, at - trailer) : r;
}

int conf_text_set_cameras(const struct conf_text *in, struct conf_text *out, const struct conf_set *set)
{
	struct line l;
	bool picked = false, done[CONF_SET_MAX] = {false};
	size_t trailer = 0; /* start of the lines after the section's last key line */
	int r = 0;
	out->len = 0;
	if (set->n > CONF_SET_MAX)
		return -E2BIG;
	for (size_t at = 0; r == 0 && next_line(in, at, &l); at = l.next) {
		size_t n;
		const char *k;
		if (is_any_header(in, &l)) {
			r = close_section(out, in, picked, done, set, trailer, l.start);
			const char *name = camera_of(in, &l, &n);
			picked = name && set->pick(name, n, set->arg);
			memset(done, 0, sizeof done);
			if (r == 0)
				r = put(out, in->p + l.start, l.next - l.start);
			trailer = l.next;
		} else if ((k = key_of(in, &l, &n)) != NULL) {
			r = put(out, in->p + trailer, l.start - trailer);
			unsigned i = 0;
			while (picked && i < set->n && (strlen(set->keys[i]) != n || memcmp(set->keys[i], k, n)))
				i++;
			if (r == 0 && picked && i < set->n) {
				r = put_replaced(out, in, &l, k + n, set->values[i]);
				done[i] = true;
			} else if (r == 0) {
				r = put(out, in->p + l.start, l.next - l.start);
			}
			trailer = l.next;
		}
	}
	if (r == 0)
		r = close_section(out, in, picked, done, set, trailer, in->len);
	return r;
}

int conf_text_add_camera(struct conf_text *t, const char *name, const char *lines)
{
	struct line hdr;
	size_t b, e;
	if (find_section(t, "camera", name, &hdr, &b, &e) == 0)
		return -EEXIST;
	char head[160];
	int n =
	    snprintf(head, sizeof head, "%s\n[camera \"%s\"]\n", t->len && t->p[t->len - 1] != '\n' ? "\n" : "", name);
	if (n < 0 || (size_t)n >= sizeof head)
		return -ENOSPC;
	size_t need = (size_t)n + strlen(lines);
	if (t->len + need > t->cap)
		return -ENOSPC;
	splice(t, t->len, 0, head, (size_t)n);
	return splice(t, t->len, 0, lines, strlen(lines));
}

int conf_text_remove_camera(struct conf_text *t, const char *name)
{
	struct line hdr;
	size_t body_end, section_end;
	int r = find_section(t, "camera", name, &hdr, &body_end, &section_end);
	if (r < 0)
		return r;
	/* One blank line before the header goes too, so no gap is left behind. */
	size_t from = hdr.start;
	if (from >= 2 && t->p[from - 1] == '\n' && t->p[from - 2] == '\n')
		from--;
	return splice(t, from, body_end - from, "", 0);
}
