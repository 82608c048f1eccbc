/* The JSON of the signaling messages (docs/rtc-signaling.md): a bounded parser for one
 * flat object (string, number, boolean and null members; nested values are skipped) and
 * a growable-but-capped text builder that escapes strings for the answers. */
#ifndef KP_RTC_JSON_H
#define KP_RTC_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "kp_limits.h"

#define RTC_JSON_MAX_FIELDS 24
#define RTC_JSON_MAX_KEY    32
#define RTC_JSON_MAX_DEPTH  16

enum rtc_json_type { RTC_JSON_NULL, RTC_JSON_BOOL, RTC_JSON_NUMBER, RTC_JSON_STRING, RTC_JSON_NESTED };

struct rtc_json_field {
	char key[RTC_JSON_MAX_KEY];
	enum rtc_json_type type;
	const char *str; /* RTC_JSON_STRING: unescaped, NUL-terminated, no embedded NUL */
	double num;
	bool b;
};

struct rtc_json {
	unsigned n;
	struct rtc_json_field f[RTC_JSON_MAX_FIELDS];
	char buf[KP_CONTROL_MESSAGE_MAX + 1]; /* unescaped strings */
	size_t used;
};

/* Parses one object of at most KP_CONTROL_MESSAGE_MAX bytes. Returns 0, or -EBADMSG with
 * *ret_why saying what is wrong. Members past RTC_JSON_MAX_FIELDS and keys longer than
 * RTC_JSON_MAX_KEY - 1 are parsed and ignored. */
int rtc_json_parse(const char *in, size_t len, struct rtc_json *j, const char **ret_why);

/* A string member, or NULL when absent or of another type. */
const char *rtc_json_str(const struct rtc_json *j, const char *key);
/* A number member: true with *ret set, false when absent or of another type. */
bool rtc_json_num(const struct rtc_json *j, const char *key, double *ret);

/* Text built into a fixed buffer; overflow is sticky and reported by rtc_text_ok. */
struct rtc_text {
	char *p;
	size_t len, cap;
	bool overflow;
};

void rtc_text_init(struct rtc_text *t, char *buf, size_t cap);
void rtc_text_add(struct rtc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends src as a JSON string literal, quotes included. */
void rtc_text_json_str(struct rtc_text *t, const char *src);
bool rtc_text_ok(const struct rtc_text *t);

#endif
