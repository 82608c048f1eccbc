/* A text builder over a fixed buffer for rtcd's SDP, Prometheus and signaling answers:
 * printf-style appends, JSON string literals through the common writer (common/json.h),
 * overflow sticky. */
#ifndef KP_RTC_TEXT_H
#define KP_RTC_TEXT_H

#include <stdbool.h>
#include <stddef.h>

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
