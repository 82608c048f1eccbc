/* Whole writes to a descriptor (see kp_io.h). */
#include "kp_io.h"

#include <errno.h>
#include <stdint.h>
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
