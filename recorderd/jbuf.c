/* Growable bounded text buffer (see jbuf.h). */
#include "jbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void jb_init(struct jbuf *b, size_t max)
{
	*b = (struct jbuf){.max = max};
}

void jb_free(struct jbuf *b)
{
	free(b->p);
	*b = (struct jbuf){0};
}

static int reserve(struct jbuf *b, size_t more)
{
	if (b->failed)
		return -1;
	if (b->len + more + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	if (cap > b->max + 1)
		cap = b->max + 1;
	if (b->len + more + 1 > cap) {
		b->failed = 1;
		return -1;
	}
	char *np = realloc(b->p, cap);
	if (!np) {
		b->failed = 1;
		return -1;
	}
	b->p = np;
	b->cap = cap;
	return 0;
}

void jb_printf(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || reserve(b, (size_t)n) < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void jb_str(struct jbuf *b, const char *s)
{
	size_t want = 6 * strlen(s) + 2;
	if (b->len + want > b->max)
		want = b->max > b->len ? b->max - b->len : 1;
	if (reserve(b, want) < 0)
		return;
	int n = json_quote(b->p + b->len, want + 1, s);
	if (n < 0)
		b->failed = 1;
	else
		b->len += (size_t)n;
}
