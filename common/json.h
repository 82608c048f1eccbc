/* KeepPeek's one JSON reader and writer (docs/decisions/0004-own-json.md), used by webd,
 * rtcd, recorderd and keeppeekctl.
 *
 * The reader (json_read.c) tokenizes one document into a caller-given token array: no
 * allocation, nesting bounded by JSON_MAX_DEPTH, strict RFC 8259 (UTF-8 validated,
 * surrogate escapes paired, duplicate keys refused, nothing after the value). Strings
 * stay in the document; json_get_str unescapes one into a caller-given buffer.
 *
 * "\u0000" is valid JSON and the parser accepts it, but a NUL cannot live in the C
 * strings every caller reads into: json_get_str refuses such a string with -EILSEQ
 * (nothing of it is returned, so it cannot be truncated at the NUL unnoticed). Callers
 * answer that as a bad value of that member, not as malformed JSON.
 *
 * The writer (json_write.c) appends into a caller-given buffer, escapes strings (", \,
 * the controls below U+0020; invalid UTF-8 is written as U+FFFD so the output always
 * parses), writes integers exactly and doubles with "%.6g" (non-finite: 0), and
 * remembers overflow instead of growing. */
#ifndef KP_JSON_H
#define KP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting limit of both the reader and the writer. */
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

/* The value of key in the object at token obj, or -1 (absent, or obj not an object).
 * Keys are compared unescaped, whatever their length. */
int json_obj_get(const struct json_doc *d, int obj, const char *key);
/* Element i of the array at token arr, or -1. */
int json_arr_get(const struct json_doc *d, int arr, unsigned i);

/* The string at token t, unescaped (UTF-8) into buf with a terminating NUL: its length,
 * -EINVAL when t is not a string, -EILSEQ when it holds "\u0000", -ENAMETOOLONG when
 * it needs more than cap-1 bytes. */
int json_get_str(const struct json_doc *d, int t, char *buf, size_t cap);
/* Integers: -EINVAL when not an integral number, -ERANGE out of range. */
int json_get_int(const struct json_doc *d, int t, int64_t *v);
int json_get_double(const struct json_doc *d, int t, double *v);
/* The raw span of a string token (escapes left as written). */
int json_get_raw(const struct json_doc *d, int t, const char **p, size_t *len);

/* Length of the well-formed UTF-8 sequence at s[0..n) that starts with a byte >= 0x80
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or 0. */
size_t json_utf8_len(const unsigned char *s, size_t n);

struct json_w {
	char *buf;
	size_t cap;
	size_t len;
	bool overflow;
	bool after_key;
	unsigned depth;
	uint32_t count[JSON_MAX_DEPTH + 1];
};

/* A writer over buf[0..cap): the text stays NUL-terminated as it grows. */
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
void jw_null(struct json_w *w);
/* A value already written as JSON elsewhere (by this writer), copied as is. */
void jw_json(struct json_w *w, const char *json, size_t n);
/* Forgets the text written so far (the caller has passed it on) and keeps the nesting
 * and separators, so that one document is written in bounded pieces. */
void jw_take(struct json_w *w);
/* The text (NUL-terminated) and its length, or -ENOBUFS on overflow or unbalanced. */
int jw_finish(struct json_w *w, size_t *len);

/* Writes s as one JSON string literal (quotes included) into buf[0..cap), NUL-terminated:
 * its length, or -ENOBUFS when it does not fit. For text that is not all JSON (a
 * Prometheus label, an answer built around one string). */
int json_quote(char *buf, size_t cap, const char *s);

#endif
