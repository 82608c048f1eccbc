/* The sidecar of a remote recording (recorderd/tier_local.c, decision 0037): what
 * rec_tier_sidecar_write writes reads back the same; a sidecar cut short, with a line
 * it does not know, a size that is not a number, a key longer than a key may be, or a
 * field missing is refused (-EBADMSG), so that a rebuild never takes a damaged one for a
 * remote recording; none at all is -ENOENT; rec_recording_unlink removes both files.
 * An event JPEG's (step 8): rec_event_file_unlink removes the JPEG and retires its sidecar
 * to tier-deletes under a name made of its key (read back there the same); a file without
 * a sidecar is only removed; a sidecar of another key than the one asked for stays, and
 * so does one that does not parse or whose key cannot name a file there. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tier_local.h"

static int dirfd_;

static void put(const char *name, const char *text)
{
	int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void test_round_trip(void)
{
	struct cat_tier row = {.state = CAT_TIER_UPLOADED, .size = 2957068};
	snprintf(row.key, sizeof row.key, "recordings/cam/main/1796267961532.mp4");
	snprintf(row.etag, sizeof row.etag, "630230be695d245cc83e73540d1a79b7");
	put("a.mp4", "x");
	CHECK_EQ(rec_tier_sidecar_write(dirfd_, "a.mp4", &row), 0);
	struct cat_tier got;
	CHECK_EQ(rec_tier_sidecar_read(dirfd_, "a.mp4", &got), 0);
	CHECK_EQ(got.state, (uint32_t)CAT_TIER_REMOTE);
	CHECK_STR_EQ(got.key, row.key);
	CHECK_EQ(got.size, row.size);
	CHECK_STR_EQ(got.etag, row.etag);
	CHECK_EQ(rec_recording_unlink(dirfd_, "a.mp4"), 0);
	CHECK(faccessat(dirfd_, "a.mp4", F_OK, 0) < 0);
	CHECK(faccessat(dirfd_, "a.mp4.tier", F_OK, 0) < 0);
	CHECK_EQ(rec_recording_unlink(dirfd_, "a.mp4"), 0); /* gone already: success */
	CHECK_EQ(rec_tier_sidecar_read(dirfd_, "a.mp4", &got), -ENOENT);
}

static void test_refused(void)
{
	static char long_key[1200];
	memset(long_key, 'k', sizeof long_key - 1);
	char text[1400];
	snprintf(text, sizeof text, "key=%s\nsize=1\netag=e\n", long_key);
	const char *const bad[] = {
	    "key=k\nsize=1\netag=e",                      /* cut short */
	    "key=k\nsize=1\n",                            /* no ETag */
	    "size=1\netag=e\n",                           /* no key */
	    "key=\nsize=1\netag=e\n",                     /* an empty key */
	    "key=k\nsize=x1\netag=e\n",                   /* not a number */
	    "key=k\nsize=1x\netag=e\n",                   /* not only a number */
	    "key=k\nsize=\netag=e\n",                     /* none */
	    "key=k\nsize=-1\netag=e\n",                   /* negative (strtoull would take it) */
	    "key=k\nsize= 1\netag=e\n",                   /* a space */
	    "key=k\nsize=99999999999999999999\netag=e\n", /* past 64 bits */
	    "key=k\nsize=1\netag=e\nmore=1\n",            /* a line it does not know */
	    text,                                         /* a key too long (and a file past 1 KiB) */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put("b.mp4.tier", bad[i]);
		struct cat_tier got;
		CHECK_EQ(rec_tier_sidecar_read(dirfd_, "b.mp4", &got), -EBADMSG);
	}
}

static void test_event_retire(void)
{
	CHECK_EQ(mkdirat(dirfd_, "events", 0750), 0);
	CHECK_EQ(mkdirat(dirfd_, "events/ab", 0750), 0);
	struct cat_tier row = {.size = 17153};
	snprintf(row.key, sizeof row.key, "events/ab/ev-1-1796280364985.jpg");
	snprintf(row.etag, sizeof row.etag, "630230be695d245cc83e73540d1a79b7");
	put("events/ab/ev-1.jpg", "x");
	CHECK_EQ(rec_tier_sidecar_write(dirfd_, "events/ab/ev-1.jpg", &row), 0);
	CHECK_EQ(rec_event_file_unlink(dirfd_, "events/ab/ev-1.jpg"), 0);
	CHECK(faccessat(dirfd_, "events/ab/ev-1.jpg", F_OK, 0) < 0);
	CHECK(faccessat(dirfd_, "events/ab/ev-1.jpg.tier", F_OK, 0) < 0);
	struct cat_tier got;
	CHECK_EQ(rec_tier_sidecar_read(dirfd_, "tier-deletes/events+ab+ev-1-1796280364985.jpg", &got), 0);
	CHECK_STR_EQ(got.key, row.key);
	CHECK_EQ(got.size, row.size);
	/* No sidecar (a thumbnail, a JPEG still local): removed, nothing retired. */
	put("events/ab/ev-2.thumb.jpg", "t");
	CHECK_EQ(rec_event_file_unlink(dirfd_, "events/ab/ev-2.thumb.jpg"), 0);
	CHECK(faccessat(dirfd_, "events/ab/ev-2.thumb.jpg", F_OK, 0) < 0);
	CHECK_EQ(rec_event_file_unlink(dirfd_, "events/ab/ev-2.thumb.jpg"), 0); /* gone already */
	/* Only the sidecar of the key asked for: another key's (a newer revision's at the same
	 * path) stays. An intent (no ETag yet) is retired like a whole one. */
	put("events/ab/ev-6.jpg.tier", "key=events/ab/ev-6-2.jpg\nsize=1\netag=\n");
	CHECK_EQ(rec_tier_sidecar_retire(dirfd_, "events/ab/ev-6.jpg", "events/ab/ev-6-1.jpg"), 0);
	CHECK(faccessat(dirfd_, "events/ab/ev-6.jpg.tier", F_OK, 0) == 0);
	CHECK_EQ(rec_tier_sidecar_retire(dirfd_, "events/ab/ev-6.jpg", "events/ab/ev-6-2.jpg"), 0);
	CHECK(faccessat(dirfd_, "events/ab/ev-6.jpg.tier", F_OK, 0) < 0);
	CHECK_EQ(rec_tier_sidecar_read(dirfd_, "tier-deletes/events+ab+ev-6-2.jpg", &got), 0);
	CHECK_STR_EQ(got.etag, "");
	/* A damaged sidecar, and keys that cannot name a file in tier-deletes: left where they
	 * are, for keeppeekctl check to report. */
	put("events/ab/ev-3.jpg.tier", "key=k\nsize=1\n");
	CHECK_EQ(rec_tier_sidecar_retire(dirfd_, "events/ab/ev-3.jpg", NULL), -EBADMSG);
	CHECK(faccessat(dirfd_, "events/ab/ev-3.jpg.tier", F_OK, 0) == 0);
	put("events/ab/ev-4.jpg.tier", "key=events/ab/a+b.jpg\nsize=1\netag=e\n");
	CHECK_EQ(rec_tier_sidecar_retire(dirfd_, "events/ab/ev-4.jpg", NULL), -EINVAL);
	CHECK(faccessat(dirfd_, "events/ab/ev-4.jpg.tier", F_OK, 0) == 0);
	put("events/ab/ev-5.jpg.tier", "key=.hidden\nsize=1\netag=e\n");
	CHECK_EQ(rec_tier_sidecar_retire(dirfd_, "events/ab/ev-5.jpg", NULL), -EINVAL);
	CHECK_EQ(rec_tier_sidecar_retire(dirfd_, "events/ab/none.jpg", NULL), 0);
	/* A sidecar is replaced whole (written beside, renamed over): no work file stays. */
	CHECK_EQ(rec_tier_sidecar_write(dirfd_, "events/ab/ev-5.jpg", &row), 0);
	CHECK_EQ(rec_tier_sidecar_read(dirfd_, "events/ab/ev-5.jpg", &got), 0);
	CHECK_STR_EQ(got.key, row.key);
	CHECK(faccessat(dirfd_, "events/ab/ev-5.jpg.tier.new", F_OK, 0) < 0);
}

int main(void)
{
	char dir[] = "/tmp/kp-tier-local-XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dirfd_ >= 0);
	RUN(test_round_trip);
	RUN(test_refused);
	RUN(test_event_retire);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	return TEST_EXIT();
}
