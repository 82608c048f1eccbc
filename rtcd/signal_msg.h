/* One signaling message (docs/rtc-signaling.md) read with the common JSON reader
 * (common/json.h): a JSON object whose top-level string, number, boolean and null
 * members are looked up by name; nested values are parsed and not looked into. */
#ifndef KP_RTC_SIGNAL_MSG_H
#define KP_RTC_SIGNAL_MSG_H

#include <stdbool.h>
#include <stddef.h>

#include "json.h"
#include "kp_limits.h"

#define RTC_JSON_MAX_FIELDS 24
#define RTC_JSON_MAX_KEY    32
#define RTC_JSON_MAX_TOKENS 1024

enum rtc_json_type { RTC_JSON_NULL, RTC_JSON_BOOL, RTC_JSON_NUMBER, RTC_JSON_STRING, RTC_JSON_NESTED, RTC_JSON_NUL };

struct rtc_json_field {
	char key[RTC_JSON_MAX_KEY];
	enum rtc_json_type type; /* RTC_JSON_NUL: a string holding "\u0000" (unusable as one) */
	const char *str;         /* RTC_JSON_STRING: unescaped, NUL-terminated */
	double num;
	bool b;
};

struct rtc_json {
	unsigned n;
	struct rtc_json_field f[RTC_JSON_MAX_FIELDS];
	struct json_doc doc;
	struct json_tok toks[RTC_JSON_MAX_TOKENS];
	char buf[KP_CONTROL_MESSAGE_MAX + 1]; /* unescaped strings */
};

/* Parses one object of at most KP_CONTROL_MESSAGE_MAX bytes. Returns 0, or -EBADMSG with
 * *ret_why saying what is wrong. Members past RTC_JSON_MAX_FIELDS and keys longer than
 * RTC_JSON_MAX_KEY - 1 are parsed and ignored. */
int rtc_json_parse(const char *in, size_t len, struct rtc_json *j, const char **ret_why);

/* A string member, or NULL when absent, of another type or holding "\u0000". */
const char *rtc_json_str(const struct rtc_json *j, const char *key);
/* A number member: true with *ret set, false when absent or of another type. */
bool rtc_json_num(const struct rtc_json *j, const char *key, double *ret);

#endif
