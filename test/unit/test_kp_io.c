/* common/kp_io.c: whole writes and reads at offsets. A write lands at its offset (a hole
 * before it reads as zeros) and a read of exactly the bytes there succeeds; a read past
 * the end is -ENODATA, not a short count a caller could take for the whole; a pipe has no
 * offsets (-ESPIPE); a closed descriptor is -EBADF. */
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp_io.h"

static void test_at_offsets(void)
{
	char path[] = "/tmp/kp-io-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	static uint8_t big[3 * 1024 * 1024], back[sizeof big];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)(i * 31 + 7);
	CHECK_EQ(kp_pwrite_all(fd, big, sizeof big, 4096), 0);
	CHECK_EQ(lseek(fd, 0, SEEK_END), (off_t)(4096 + sizeof big));
	CHECK_EQ(kp_pread_all(fd, back, sizeof big, 4096), 0);
	CHECK(memcmp(back, big, sizeof big) == 0);
	uint8_t hole[16] = {1};
	CHECK_EQ(kp_pread_all(fd, hole, sizeof hole, 100), 0);
	for (size_t i = 0; i < sizeof hole; i++)
		CHECK_EQ(hole[i], 0);
	CHECK_EQ(kp_pread_all(fd, back, 2, 4096 + sizeof big - 1), -ENODATA); /* one byte past */
	CHECK_EQ(kp_pread_all(fd, back, 0, 1u << 30), 0);                     /* nothing asked */
	close(fd);
	CHECK_EQ(kp_pread_all(fd, back, 1, 0), -EBADF);
	CHECK_EQ(kp_pwrite_all(fd, back, 1, 0), -EBADF);
	int p[2];
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(kp_pwrite_all(p[1], big, 1, 0), -ESPIPE);
	CHECK_EQ(kp_pread_all(p[0], back, 1, 0), -ESPIPE);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	RUN(test_at_offsets);
	return TEST_EXIT();
}
