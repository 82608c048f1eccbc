/* libFuzzer harness for the sidecar of a remote recording (recorderd/tier_local.c), which a
 * rebuild reads from the data directory: whatever the file holds, the reader accepts only
 * a whole one (key, size, ETag, each once known, a key of at most CAT_PATH_MAX - 1
 * bytes) and never reads or writes past its buffers; what it accepts it writes back the
 * same. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tier_local.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int dirfd_ = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (dirfd_ < 0) {
		char dir[] = "/tmp/kp-fuzz-sidecar-XXXXXX";
		if (!mkdtemp(dir))
			abort();
		dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	int fd = openat(dirfd_, "r.mp4.tier", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
	struct cat_tier row, again;
	if (rec_tier_sidecar_read(dirfd_, "r.mp4", &row) != 0)
		return 0;
	if (!row.key[0] || row.state != CAT_TIER_REMOTE || strlen(row.key) >= sizeof row.key)
		__builtin_trap();
	if (rec_tier_sidecar_write(dirfd_, "w.mp4", &row) != 0 || rec_tier_sidecar_read(dirfd_, "w.mp4", &again) != 0 ||
	    strcmp(again.key, row.key) || strcmp(again.etag, row.etag) || again.size != row.size)
		__builtin_trap();
	return 0;
}
