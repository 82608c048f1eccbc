/* The fixed-buffer text builder of text.h. */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>

void rtc_text_init(struct rtc_text *t, char *buf, size_t cap)
{
	t->p = buf;
	t->len = 0;
	t->cap = cap;
	t->overflow = cap == 0;
	if (cap)
		buf[0] = '\0';
}

void rtc_text_add(struct rtc_text *t, const char *fmt, ...)
{
	if (t->overflow)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->cap - t->len) {
		t->overflow = true;
		t->p[t->len] = '\0';
		return;
	}
	t->len += (size_t)n;
}

bool rtc_text_ok(const struct rtc_text *t)
{
	return !t->overflow;
}
