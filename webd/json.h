/* A small bounded JSON reader and writer for webd's routes: the reader tokenizes a
 * document into a caller-given token array (no allocation, nesting depth bounded) and
 * reads strings into caller-given buffers; the writer appends to a caller-given buffer
 * and remembers overflow instead of growing. */
#ifndef KP_WEBD_JSON_H
#define KP_WEBD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 32

enum json_type { JSON_OBJECT = 1, JSON_ARRAY, JSON_STRING, JSON_NUMBER, JSON_TRUE, JSON_FALSE, JSON_NULL };

struct json_tok {
	uint8_t type;   /* enum json_type */
	uint32_t start; /* byte offsets: a string's span excludes its quotes */
	uint32_t end;
	uint32_t size; /* object: pairs; array: elements */
	uint32_t next; /* index of the first token after this value's subtree */
};

struct json_doc {
	const char *s;
	size_t len;
	struct json_tok *toks;
	unsigned ntoks;
	size_t err_at;       /* on failure: the offset where parsing stopped */
	const char *err_why; /* and why */
};

/* Parses s[0..len) (one value, whitespace around it). Returns 0, -EINVAL for bad
 * syntax, -E2BIG when more than cap tokens or JSON_MAX_DEPTH levels would be needed. */
int json_parse(struct json_doc *d, const char *s, size_t len, struct json_tok *toks, unsigned cap);

/* The value of key in the object at token obj, or -1 (absent, or obj not an object). */
int json_obj_get(const struct json_doc *d, int obj, const char *key);
/* Element i of the array at token arr, or -1. */
int json_arr_get(const struct json_doc *d, int arr, unsigned i);

/* The string at token t, unescaped (UTF-8) into buf with a terminating NUL: its length,
 * -EINVAL when t is not a string or holds a NUL or a bad escape, -ENAMETOOLONG when it
 * needs more than cap-1 bytes. */
int json_get_str(const struct json_doc *d, int t, char *buf, size_t cap);
/* Integers: -EINVAL when not an integral number, -ERANGE out of range. */
int json_get_int(const struct json_doc *d, int t, int64_t *v);
int json_get_double(const struct json_doc *d, int t, double *v);
/* The raw span of a string token (escapes left as written). */
int json_get_raw(const struct json_doc *d, int t, const char **p, size_t *len);

struct json_w {
	char *buf;
	size_t cap;
	size_t len;
	bool overflow;
	bool after_key;
	unsigned depth;
	uint32_t count[JSON_MAX_DEPTH + 1];
};

void jw_init(struct json_w *w, char *buf, size_t cap);
void jw_obj(struct json_w *w);
void jw_obj_end(struct json_w *w);
void jw_arr(struct json_w *w);
void jw_arr_end(struct json_w *w);
void jw_key(struct json_w *w, const char *key);
void jw_str(struct json_w *w, const char *s);
void jw_strn(struct json_w *w, const char *s, size_t n);
void jw_int(struct json_w *w, int64_t v);
void jw_double(struct json_w *w, double v);
void jw_bool(struct json_w *w, bool v);
/* The text (NUL-terminated) and its length, or -ENOBUFS on overflow or unbalanced. */
int jw_finish(struct json_w *w, size_t *len);

#endif
