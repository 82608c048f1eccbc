/* Unit tests of keeppeekctl's times (supervisor/ctl_time.c): Unix ms, ISO 8601 with
 * and without a zone, relative times, what is refused, and the local form of a table
 * (run with TZ set to fixed zones so that the answers are known). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_time.h"
#include "test.h"

#define NOW 1796032800000ll /* 2026-11-30T10:00:00Z */

static int64_t parse(const char *s)
{
	int64_t ms = -1;
	CHECK_EQ(ctl_time_parse(s, NOW, &ms), 0);
	return ms;
}

static void refused(const char *s)
{
	int64_t ms = 42;
	CHECK_EQ(ctl_time_parse(s, NOW, &ms), -EINVAL);
	CHECK_EQ(ms, 42);
}

static void set_tz(const char *tz)
{
	setenv("TZ", tz, 1);
	tzset();
}

static void test_absolute(void)
{
	set_tz("UTC");
	CHECK_EQ(parse("1764470000000"), 1764470000000ll);
	CHECK_EQ(parse("0"), 0);
	CHECK_EQ(parse("now"), NOW);
	CHECK_EQ(parse("2026-11-30T10:00:00Z"), NOW);
	CHECK_EQ(parse("2026-11-30t10:00:00z"), NOW);
	CHECK_EQ(parse("2026-11-30T10:00:00.25Z"), NOW + 250);
	CHECK_EQ(parse("2026-11-30T10:00:00.123456Z"), NOW + 123);
	CHECK_EQ(parse("2026-11-30T10:00Z"), NOW);
	CHECK_EQ(parse("2026-11-30T11:00:00+01:00"), NOW);
	CHECK_EQ(parse("2026-11-30T05:30:00-0430"), NOW);
	CHECK_EQ(parse("2026-11-30T12:00:00+02"), NOW);
	CHECK_EQ(parse("2026-11-30 10:00:00Z"), NOW);
	CHECK_EQ(parse("2026-11-30"), NOW - 10 * 3600000ll);
	set_tz("CET-1CEST,M3.5.0,M10.5.0/3");
	CHECK_EQ(parse("2026-11-30T11:00:00"), NOW);             /* local, winter: UTC+1 */
	CHECK_EQ(parse("2026-07-01T12:00:00"), 1782900000000ll); /* summer: UTC+2 */
}

static void test_relative(void)
{
	CHECK_EQ(parse("-1h"), NOW - 3600000ll);
	CHECK_EQ(parse("-30m"), NOW - 1800000ll);
	CHECK_EQ(parse("-90s"), NOW - 90000ll);
	CHECK_EQ(parse("-7d"), NOW - 7 * 86400000ll);
	CHECK_EQ(parse("-0m"), NOW);
}

static void test_refused(void)
{
	const char *bad[] = {"",
			     "yesterday",
			     "-1",
			     "-h",
			     "-1w",
			     "-1hh",
			     "--1h",
			     "-99999999999999d",
			     "12ab",
			     "99999999999999999999999",
			     "2026-13-01T00:00:00Z",
			     "2026-02-30T00:00:00Z",
			     "2026-11-31",
			     "2026-11-30T24:00:00Z",
			     "2026-11-30T10:60:00Z",
			     "2026-11-30T10:00:61Z",
			     "2026-11-30T10:00:00.Z",
			     "2026-11-30T10:00:00+25:00",
			     "2026-11-30T10:00:00UTC",
			     "2026-11-30T10",
			     "1969-12-31T23:59:59Z",
			     "26-11-30"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		refused(bad[i]);
}

static void test_format(void)
{
	char buf[CTL_TIME_TEXT_MAX];
	set_tz("UTC");
	ctl_time_format(NOW + 999, buf, sizeof buf);
	CHECK(!strcmp(buf, "2026-11-30T10:00:00+00:00"));
	set_tz("CET-1CEST,M3.5.0,M10.5.0/3");
	ctl_time_format(NOW, buf, sizeof buf);
	CHECK(!strcmp(buf, "2026-11-30T11:00:00+01:00"));
	set_tz("<-0430>4:30");
	ctl_time_format(NOW, buf, sizeof buf);
	CHECK(!strcmp(buf, "2026-11-30T05:30:00-04:30"));
	int64_t back = 0;
	CHECK_EQ(ctl_time_parse(buf, NOW, &back), 0);
	CHECK_EQ(back, NOW);
}

int main(void)
{
	RUN(test_absolute);
	RUN(test_relative);
	RUN(test_refused);
	RUN(test_format);
	return TEST_EXIT();
}
