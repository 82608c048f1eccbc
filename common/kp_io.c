/* Whole reads and writes of a descriptor (see kp_io.h). */
#include "kp_io.h"

#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

int kp_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int kp_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = pwrite(fd, b, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int kp_pread_all(int fd, void *p, size_t n, uint64_t off)
{
	uint8_t *b = p;
	while (n) {
		ssize_t r = pread(fd, b, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}
