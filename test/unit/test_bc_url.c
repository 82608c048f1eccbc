/* baichuan:// and bcudp:// URL parsing, the BCUDP uid= and host-less forms included. */
#include <errno.h>
#include <string.h>

#include "bc_url.h"
#include "test.h"

static void test_good(void)
{
	struct bc_url u;
	const char *why = NULL;
	CHECK_EQ(bc_url_parse("baichuan://admin:s%40cret@cam.local:9001/?channel=2", &u, &why), 0);
	CHECK(!u.udp);
	CHECK(strcmp(u.user, "admin") == 0);
	CHECK(strcmp(u.password, "s@cret") == 0);
	CHECK(strcmp(u.host, "cam.local") == 0);
	CHECK_EQ(u.port, 9001);
	CHECK_EQ(u.channel, 2);
	CHECK_EQ(bc_url_parse("baichuan://admin:@10.0.0.1", &u, &why), 0);
	CHECK_EQ(u.port, 9000);
	CHECK_EQ(u.channel, 0);
	CHECK(strcmp(u.password, "") == 0);
	CHECK_EQ(bc_url_parse("bcudp://a:b@[::1]:2020/", &u, &why), 0);
	CHECK(u.udp);
	CHECK(strcmp(u.host, "::1") == 0);
	CHECK_EQ(u.port, 2020);
	CHECK(u.port_given);
	CHECK_EQ(bc_url_parse("bcudp://a:b@host", &u, &why), 0);
	CHECK_EQ(u.port, 2018);
	CHECK(!u.port_given); /* discovery then goes to 2015 and 2018 */
	CHECK(strcmp(u.uid, "") == 0);
	/* A battery camera by UID, with its address as a hint or alone (broadcast). */
	CHECK_EQ(bc_url_parse("bcudp://a:b@10.0.0.9/?uid=95270000YGAKNWKJ&channel=1", &u, &why), 0);
	CHECK(strcmp(u.uid, "95270000YGAKNWKJ") == 0);
	CHECK_EQ(u.channel, 1);
	CHECK_EQ(bc_url_parse("bcudp://a:b@/?uid=95270000YGAKNWKJ", &u, &why), 0);
	CHECK(strcmp(u.host, "") == 0);
	CHECK(strcmp(u.uid, "95270000YGAKNWKJ") == 0);
	/* The password may hold '@' and ':' when encoded, and the last '@' ends it. */
	CHECK_EQ(bc_url_parse("baichuan://a:p@ss@h", &u, &why), 0);
	CHECK(strcmp(u.password, "p@ss") == 0);
}

static void test_bad(void)
{
	struct bc_url u;
	const char *why = NULL;
	CHECK_EQ(bc_url_parse("rtsp://a:b@h", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://h:9000", &u, &why), -EINVAL);
	CHECK_STR_CONTAINS(why, "user");
	CHECK_EQ(bc_url_parse("baichuan://a:b@h:0", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b@h:65536", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b@h:9x", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b@h/?channel=256", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b@h/?chan=1", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b%4@h", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b%00@h", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b@", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b@[::1", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("bcudp://a:b@/", &u, &why), -EINVAL); /* neither host nor uid */
	CHECK_STR_CONTAINS(why, "uid");
	CHECK_EQ(bc_url_parse("bcudp://a:b@h/?uid=", &u, &why), -EINVAL);
	CHECK_EQ(bc_url_parse("bcudp://a:b@h/?uid=9527<x>", &u, &why), -EINVAL);
	CHECK_STR_CONTAINS(why, "uid");
	CHECK_EQ(bc_url_parse("bcudp://a:b@h/?uid=" /* 65 characters, one past 64 */
			      "12345678901234567890123456789012345678901234567890123456789012345",
			      &u, &why),
		 -EINVAL);
	CHECK_EQ(bc_url_parse("baichuan://a:b@h/?uid=95270000YGAKNWKJ", &u, &why), -EINVAL); /* TCP has no UID */
}

int main(void)
{
	RUN(test_good);
	RUN(test_bad);
	return TEST_EXIT();
}
