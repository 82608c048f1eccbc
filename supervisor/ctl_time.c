/* keeppeekctl's time parsing and formatting (see ctl_time.h). */
#include "ctl_time.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Exactly n decimal digits at *p; advances *p. */
static bool digits(const char **p, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		char c = (*p)[i];
		if (c < '0' || c > '9')
			return false;
		v = v * 10 + (c - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

static int parse_relative(const char *s, int64_t now_ms, int64_t *ret_ms)
{
	char *end;
	errno = 0;
	long long n = strtoll(s + 1, &end, 10);
	if (end == s + 1 || s[1] < '0' || s[1] > '9' || errno || end[0] == '\0' || end[1] != '\0' || n < 0)
		return -EINVAL;
	int64_t unit = end[0] == 's'   ? 1000
		       : end[0] == 'm' ? 60000
		       : end[0] == 'h' ? 3600000
		       : end[0] == 'd' ? 86400000
				       : 0;
	if (!unit || n > now_ms / unit)
		return -EINVAL;
	*ret_ms = now_ms - (int64_t)n * unit;
	return 0;
}

/* The zone suffix: 0 with *ret_offset_s (east of UTC) and *ret_local false, or with
 * *ret_local true when there is none. */
static int parse_zone(const char *p, bool *ret_local, int *ret_offset_s)
{
	int hh = 0, mm = 0;
	*ret_local = false;
	*ret_offset_s = 0;
	if (*p == '\0') {
		*ret_local = true;
		return 0;
	}
	if (!strcmp(p, "Z") || !strcmp(p, "z"))
		return 0;
	if (*p != '+' && *p != '-')
		return -EINVAL;
	int sign = *p++ == '-' ? -1 : 1;
	if (!digits(&p, 2, &hh))
		return -EINVAL;
	if (*p == ':')
		p++;
	if (*p && !digits(&p, 2, &mm))
		return -EINVAL;
	if (*p || hh > 23 || mm > 59)
		return -EINVAL;
	*ret_offset_s = sign * (hh * 3600 + mm * 60);
	return 0;
}

static int parse_iso(const char *s, int64_t *ret_ms)
{
	const char *p = s;
	int y, mo, d, h = 0, mi = 0, sec = 0, ms = 0;
	if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' || !digits(&p, 2, &d))
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!digits(&p, 2, &h) || *p++ != ':' || !digits(&p, 2, &mi))
			return -EINVAL;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &sec))
				return -EINVAL;
			if (*p == '.' || *p == ',') {
				p++;
				int n = 0, scale = 100;
				if (*p < '0' || *p > '9')
					return -EINVAL;
				for (; *p >= '0' && *p <= '9'; p++, n++)
					if (n < 3) {
						ms += (*p - '0') * scale;
						scale /= 10;
					}
			}
		}
	}
	bool local;
	int offset_s;
	if (parse_zone(p, &local, &offset_s) < 0 || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || sec > 59)
		return -EINVAL;
	struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = sec};
	tm.tm_isdst = -1;
	time_t t = local ? mktime(&tm) : timegm(&tm);
	if (t == (time_t)-1 || tm.tm_mday != d || tm.tm_mon != mo - 1) /* 31 April, 30 February */
		return -EINVAL;
	*ret_ms = ((int64_t)t - offset_s) * 1000 + ms;
	return 0;
}

int ctl_time_parse(const char *s, int64_t now_ms, int64_t *ret_ms)
{
	if (!strcmp(s, "now")) {
		*ret_ms = now_ms;
		return 0;
	}
	if (s[0] == '-')
		return parse_relative(s, now_ms, ret_ms);
	size_t n = strspn(s, "0123456789");
	if (n && !s[n]) {
		char *end;
		errno = 0;
		long long v = strtoll(s, &end, 10);
		if (errno)
			return -EINVAL;
		*ret_ms = v;
		return 0;
	}
	return parse_iso(s, ret_ms);
}

void ctl_time_format(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	char zone[8];
	if (!localtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm) == 0 ||
	    strftime(zone, sizeof zone, "%z", &tm) != 5) {
		snprintf(buf, cap, "%lld", (long long)ms);
		return;
	}
	size_t len = strlen(buf);
	snprintf(buf + len, cap - len, "%.3s:%.2s", zone, zone + 3);
}
