/* A text builder over a fixed buffer for rtcd's SDP and Prometheus text: printf-style
 * appends, overflow sticky. (JSON is written with common/json.h.) */
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
bool rtc_text_ok(const struct rtc_text *t);

#endif
