/* Bounded text output for control answers: printf-style appends that stop at the
 * buffer's end, and JSON string escaping. */
#include <stdarg.h>
#include <stdio.h>

#include "supervisor.h"

void kp_out_put(struct kp_out *o, const char *fmt, ...)
{
	if (o->used + 1 >= o->len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->used += (size_t)n < o->len - o->used ? (size_t)n : o->len - o->used - 1;
}

void kp_out_json_string(struct kp_out *o, const char *s)
{
	kp_out_put(o, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			kp_out_put(o, "\\%c", c);
		else if (c < 0x20)
			kp_out_put(o, "\\u%04x", c);
		else
			kp_out_put(o, "%c", c);
	}
	kp_out_put(o, "\"");
}
