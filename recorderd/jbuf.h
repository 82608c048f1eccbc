/* A growable text buffer for JSON and Prometheus answers, bounded by a ceiling: past it
 * (or out of memory) it stops growing and remembers that it failed. JSON strings and
 * values are written by the common writer (common/json.h) into its room. */
#ifndef KP_REC_JBUF_H
#define KP_REC_JBUF_H

#include <stddef.h>

struct jbuf {
	char *p;
	size_t len, cap, max;
	int failed;
};

void jb_init(struct jbuf *b, size_t max);
void jb_free(struct jbuf *b);
void jb_printf(struct jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal (quoted, escaped). */
void jb_str(struct jbuf *b, const char *s);
/* Room for up to want more bytes (fewer near the ceiling, at least 1): its start, its
 * size in *ret_cap; NULL once failed. jb_wrote(b, n) then keeps n of them, or with
 * n < 0 (the writer overflowed) marks b failed. */
char *jb_room(struct jbuf *b, size_t want, size_t *ret_cap);
void jb_wrote(struct jbuf *b, long n);

#endif
