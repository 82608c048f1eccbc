/* The running program's own path and directory, from /proc/self/exe (see self_path.h). */
#include "self_path.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int kp_self_path(char *buf, size_t cap)
{
	if (cap < 2)
		return -ENAMETOOLONG;
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ENOENT;
	if ((size_t)n == cap - 1)
		return -ENAMETOOLONG; /* perhaps cut */
	buf[n] = '\0';
	return 0;
}

int kp_self_dir(char *buf, size_t cap)
{
	int r = kp_self_path(buf, cap);
	if (r < 0)
		return r;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	return 0;
}
