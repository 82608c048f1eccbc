/* Signaling messages read with the common JSON reader (see signal_msg.h). */
#include "signal_msg.h"

#include <errno.h>
#include <string.h>

static void read_field(struct rtc_json *j, int v, struct rtc_json_field *f, size_t *used)
{
	const struct json_tok *t = &j->toks[v];
	switch (t->type) {
	case JSON_STRING: {
		int n = json_get_str(&j->doc, v, j->buf + *used, sizeof j->buf - *used);
		if (n < 0) {
			f->type = RTC_JSON_NUL; /* -EILSEQ: the unescaped form is never longer */
			return;
		}
		f->type = RTC_JSON_STRING;
		f->str = j->buf + *used;
		*used += (size_t)n + 1;
		return;
	}
	case JSON_NUMBER:
		f->type = json_get_double(&j->doc, v, &f->num) == 0 ? RTC_JSON_NUMBER : RTC_JSON_NESTED;
		return;
	case JSON_TRUE:
	case JSON_FALSE:
		f->type = RTC_JSON_BOOL;
		f->b = t->type == JSON_TRUE;
		return;
	case JSON_NULL:
		f->type = RTC_JSON_NULL;
		return;
	default:
		f->type = RTC_JSON_NESTED;
		return;
	}
}

int rtc_json_parse(const char *in, size_t len, struct rtc_json *j, const char **ret_why)
{
	const char *why = NULL;
	j->n = 0;
	if (len > KP_CONTROL_MESSAGE_MAX)
		why = "message larger than 64 KiB";
	else if (json_parse(&j->doc, in, len, j->toks, RTC_JSON_MAX_TOKENS) < 0)
		why = j->doc.err_why;
	else if (j->toks[0].type != JSON_OBJECT)
		why = "not a JSON object";
	if (why) {
		if (ret_why)
			*ret_why = why;
		return -EBADMSG;
	}
	size_t used = 0;
	int k = 1;
	for (uint32_t m = 0; m < j->toks[0].size; m++, k = (int)j->toks[k + 1].next) {
		if (j->n >= RTC_JSON_MAX_FIELDS)
			break;
		struct rtc_json_field *f = &j->f[j->n];
		if (json_get_str(&j->doc, k, f->key, sizeof f->key) < 0)
			continue;
		read_field(j, k + 1, f, &used);
		j->n++;
	}
	return 0;
}

static const struct rtc_json_field *find(const struct rtc_json *j, const char *key)
{
	for (unsigned i = 0; i < j->n; i++)
		if (strcmp(j->f[i].key, key) == 0)
			return &j->f[i];
	return NULL;
}

const char *rtc_json_str(const struct rtc_json *j, const char *key)
{
	const struct rtc_json_field *f = find(j, key);
	return f && f->type == RTC_JSON_STRING ? f->str : NULL;
}

bool rtc_json_num(const struct rtc_json *j, const char *key, double *ret)
{
	const struct rtc_json_field *f = find(j, key);
	if (!f || f->type != RTC_JSON_NUMBER)
		return false;
	*ret = f->num;
	return true;
}
