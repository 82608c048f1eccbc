/* A growable text buffer for recorderd's Prometheus text and its answers to keeppeekctl
 * (through the supervisor), bounded by a ceiling: past it (or out of memory) it stops
 * growing and remembers that it failed. recorderd writes no JSON for webd (its answers
 * there are records, reply.h); a JSON string for keeppeekctl is quoted by the common
 * writer (json_quote). */
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
/* A JSON string literal (quoted, escaped by the common writer). */
void jb_str(struct jbuf *b, const char *s);

#endif
