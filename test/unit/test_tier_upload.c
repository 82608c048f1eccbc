/* tierd's upload queue (tierd/upload.c) at its ceiling: while the thread is held in a
 * request to a store that accepts the connection and never answers (a loopback listener
 * that never accepts), TIER_QUEUE_MAX recordings wait and one more is refused with
 * -EBUSY, its descriptor left to the caller; cancelling (recorderd's link dropped) drops
 * the waiting ones, closes their descriptors, and the running one's report, which comes
 * when its request times out, is not delivered; a job queued after the cancel reports.
 * And the checks of a copy's descriptor (a regular file of exactly the size given) and
 * of a fetch (tierd/fetch.c: a regular file, 1 byte to TIER_FETCH_MAX, a range whose end
 * does not overflow), each refused before anything is queued. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fetch.h"
#include "upload.h"

static unsigned reports;
static uint64_t reported;

static void on_report(const kp_Envelope *env)
{
	reports++;
	if (env->which_msg == kp_Envelope_tier_failed_tag)
		reported = env->msg.tier_failed.recording;
}

static struct tier_job job_of(uint64_t id)
{
	struct tier_job j = {.recording = id, .size = 1000, .fd = open("/dev/null", O_RDONLY | O_CLOEXEC)};
	snprintf(j.key, sizeof j.key, "recordings/cam/main/%llu.mp4", (unsigned long long)id);
	return j;
}

/* A copy's descriptor must be a regular file of the size recorderd gave: its part count
 * and the last part's length are computed from that size. */
static void test_check_fd(void)
{
	char path[] = "/tmp/kp-tier-fd-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	static const char bytes[1000];
	CHECK_EQ(write(fd, bytes, sizeof bytes), (ssize_t)sizeof bytes);
	CHECK(tier_upload_check_fd(fd, 1000) == NULL);
	CHECK_STR_EQ(tier_upload_check_fd(fd, 999), "the file is not of the size given");
	CHECK_STR_EQ(tier_upload_check_fd(fd, 1001), "the file is not of the size given");
	close(fd);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_STR_EQ(tier_upload_check_fd(p[0], 0), "the descriptor is not a regular file");
	close(p[0]);
	close(p[1]);
	int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK_STR_EQ(tier_upload_check_fd(dir, 0), "the descriptor is not a regular file");
	close(dir);
	CHECK_STR_EQ(tier_upload_check_fd(dir, 0), "the descriptor cannot be examined");
}

static void test_queue_ceiling(void)
{
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	CHECK(ls >= 0);
	CHECK_EQ(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
	CHECK_EQ(listen(ls, 8), 0);
	CHECK_EQ(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	char ep[64];
	snprintf(ep, sizeof ep, "http://127.0.0.1:%u", ntohs(a.sin_port));
	struct s3_conf conf = {ep, "us-east-1", "keeppeek", "AK", "SECRET", 2000, 3000, 0, 0};
	struct s3_client *c;
	CHECK_EQ(s3_client_new(&conf, &c), 0);
	uv_loop_t *loop = uv_default_loop();
	CHECK_EQ(tier_lanes_init(loop, on_report), 0);
	CHECK_EQ(tier_upload_start(c, S3_PART_MIN), 0);

	struct tier_job first = job_of(1);
	CHECK_EQ(tier_upload_push(&first), 0);
	/* The thread holds the first job once its connection waits in the listener. */
	struct pollfd p = {.fd = ls, .events = POLLIN};
	CHECK_EQ(poll(&p, 1, 5000), 1);
	for (unsigned i = 0; i < TIER_QUEUE_MAX; i++) {
		struct tier_job j = job_of(2 + i);
		CHECK_EQ(tier_upload_push(&j), 0);
	}
	CHECK_EQ(tier_upload_pending(), TIER_QUEUE_MAX + 1);
	struct tier_job past = job_of(100);
	CHECK_EQ(tier_upload_push(&past), -EBUSY);
	CHECK(fcntl(past.fd, F_GETFD) >= 0); /* still the caller's */
	close(past.fd);

	tier_upload_cancel_all();
	CHECK_EQ(tier_upload_pending(), 1); /* the one in its request */
	/* A job after the cancel: the first one's failure (its request times out) is not
	 * reported, this one's is. */
	struct tier_job after = job_of(200);
	CHECK_EQ(tier_upload_push(&after), 0);
	for (int i = 0; i < 1500 && !reports; i++) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	CHECK_EQ(reports, 1u);
	CHECK_EQ(reported, 200);
	tier_upload_stop();
	tier_lanes_done();
	close(ls);
}

/* A fetch is refused before it is queued (the fetch lane is not even started here): each
 * refusal says why and leaves the descriptor to the caller. */
static void test_fetch_checks(void)
{
	char path[] = "/tmp/kp-tier-fetch-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	struct tier_job j = {.kind = TIER_JOB_FETCH, .recording = 1, .fd = fd, .offset = 700, .length = 1000};
	int err = 0;
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "no object key");
	CHECK_EQ(err, EINVAL);
	snprintf(j.key, sizeof j.key, "recordings/cam/main/1.mp4");
	j.length = 0;
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "a fetch is 1 byte to 64 MiB");
	j.length = TIER_FETCH_MAX + 1;
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "a fetch is 1 byte to 64 MiB");
	j.length = TIER_FETCH_MAX;
	j.offset = UINT64_MAX - 10;
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "the range ends past any file");
	j.offset = (uint64_t)INT64_MAX - TIER_FETCH_MAX + 1;
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "the range ends past any file");
	j.offset = 0;
	snprintf(j.etag, sizeof j.etag, "0123456789ABCDEF0123456789abcdef");
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "an ETag is checked on a whole object, as 32 lower-case hex digits");
	snprintf(j.etag, sizeof j.etag, "0123456789abcdef0123456789abcde");
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "an ETag is checked on a whole object, as 32 lower-case hex digits");
	snprintf(j.etag, sizeof j.etag, "0123456789abcdef0123456789abcdef");
	j.offset = 1;
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "an ETag is checked on a whole object, as 32 lower-case hex digits");
	j.offset = 0;
	/* Every check passed: the lane, not started, refuses. */
	CHECK(tier_fetch_push(&j, &err) != NULL);
	CHECK_EQ(err, ENOTCONN);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	j.fd = p[0];
	CHECK_STR_EQ(tier_fetch_push(&j, &err), "the descriptor is not a regular file");
	CHECK(fcntl(fd, F_GETFD) >= 0);
	close(p[0]);
	close(p[1]);
	close(fd);
}

int main(void)
{
	RUN(test_check_fd);
	RUN(test_fetch_checks);
	RUN(test_queue_ceiling);
	return TEST_EXIT();
}
