/* The sidecar, the strip and the removal of a tiered recording's files, and the sidecars
 * of deleted event JPEGs retired to tier-deletes (tier_local.h). */
#include "tier_local.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmp4.h"
#include "kp_io.h"
#include "log.h"

#define SIDECAR_MAX 1024

static int sidecar_path(const char *path, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", path, REC_TIER_SIDECAR);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The directory of path (relative to data_dir), synced. */
static int sync_dir_of(int data_dirfd, const char *path)
{
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int fd = openat(data_dirfd, slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd < 0 || fsync(fd) < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	return r;
}

int rec_tier_sidecar_write(int data_dirfd, const char *path, const struct cat_tier *row)
{
	char side[CAT_PATH_MAX + 8], text[SIDECAR_MAX];
	int r = sidecar_path(path, side, sizeof side);
	if (r < 0)
		return r;
	int n = snprintf(text, sizeof text, "key=%s\nsize=%" PRIu64 "\netag=%s\n", row->key, row->size, row->etag);
	if (n < 0 || (size_t)n >= sizeof text)
		return -ENAMETOOLONG;
	/* Written beside and renamed over: a reader (a retirement on the commit thread) sees the
	 * old sidecar or the new one, never a part. */
	char tmp[CAT_PATH_MAX + 16];
	snprintf(tmp, sizeof tmp, "%s.new", side);
	int fd = openat(data_dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	r = kp_pwrite_all(fd, text, (size_t)n, 0);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && renameat(data_dirfd, tmp, data_dirfd, side) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(data_dirfd, tmp, 0);
	else
		r = sync_dir_of(data_dirfd, path);
	return r;
}

int rec_tier_sidecar_read(int data_dirfd, const char *path, struct cat_tier *row)
{
	char side[CAT_PATH_MAX + 8], text[SIDECAR_MAX];
	int r = sidecar_path(path, side, sizeof side);
	if (r < 0)
		return r;
	int fd = openat(data_dirfd, side, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, text, sizeof text - 1);
	r = n < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	text[n] = '\0';
	memset(row, 0, sizeof *row);
	row->state = CAT_TIER_REMOTE;
	int have = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (!next)
			return -EBADMSG; /* cut short */
		*next++ = '\0';
		char *end;
		if (!strncmp(line, "key=", 4) && strlen(line + 4) < sizeof row->key) {
			snprintf(row->key, sizeof row->key, "%s", line + 4);
			have |= 1;
		} else if (!strncmp(line, "size=", 5)) {
			errno = 0;
			unsigned long long v = strtoull(line + 5, &end, 10);
			if (errno || *end || line[5] < '0' || line[5] > '9')
				return -EBADMSG;
			row->size = v;
			have |= 2;
		} else if (!strncmp(line, "etag=", 5) && strlen(line + 5) < sizeof row->etag) {
			snprintf(row->etag, sizeof row->etag, "%s", line + 5);
			have |= 4;
		} else {
			return -EBADMSG;
		}
	}
	return have == 7 && row->key[0] ? 0 : -EBADMSG;
}

/* Copies the init segment and each fragment's header from src to dst. */
static int copy_headers(int src, int dst, const struct cat_fragment *frags, size_t n)
{
	static uint8_t buf[FMP4_FRAG_HEADER_MAX > FMP4_READ_INIT_MAX ? FMP4_FRAG_HEADER_MAX : FMP4_READ_INIT_MAX];
	uint64_t init_len = n ? frags[0].offset : 0;
	if (init_len > sizeof buf)
		return -EFBIG;
	int r = kp_pread_all(src, buf, (size_t)init_len, 0);
	if (r == 0)
		r = kp_pwrite_all(dst, buf, (size_t)init_len, 0);
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct cat_fragment *f = &frags[i];
		/* A header is a few hundred bytes: 4 KiB first, all it may be if that is short. */
		size_t most = f->length < FMP4_FRAG_HEADER_MAX ? (size_t)f->length : FMP4_FRAG_HEADER_MAX;
		size_t want = most < 4096 ? most : 4096;
		struct fmp4_frag fi;
		r = kp_pread_all(src, buf, want, f->offset);
		if (r == 0)
			r = fmp4_read_frag(NULL, buf, want, &fi);
		if (r == -EAGAIN && want < most) {
			want = most;
			r = kp_pread_all(src, buf, want, f->offset);
			if (r == 0)
				r = fmp4_read_frag(NULL, buf, want, &fi);
		}
		if (r == 0 && fi.header_len > want)
			r = -EBADMSG;
		if (r == 0)
			r = kp_pwrite_all(dst, buf, fi.header_len, f->offset);
	}
	return r;
}

int rec_tier_strip(int data_dirfd, struct cat *cat, const struct cat_recording *rec)
{
	struct cat_fragment *frags = NULL;
	size_t n = 0;
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	if (r == 0) {
		r = cat_fragments_of(t, rec->id, &frags, &n);
		cat_abort(t);
	}
	char tmp[64];
	snprintf(tmp, sizeof tmp, "%s/strip-%llu", REC_TIER_CACHE_DIR, (unsigned long long)rec->id);
	int src = r == 0 ? openat(data_dirfd, rec->path, O_RDONLY | O_CLOEXEC) : -1;
	if (r == 0 && src < 0)
		r = -errno;
	int dst = r == 0 ? openat(data_dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640) : -1;
	if (r == 0 && dst < 0)
		r = -errno;
	struct stat st;
	if (r == 0 && fstat(src, &st) < 0)
		r = -errno;
	if (r == 0 && n == 0)
		r = -ENODATA;
	if (r == 0)
		r = copy_headers(src, dst, frags, n);
	if (r == 0 && (ftruncate(dst, st.st_size) < 0 || fsync(dst) < 0))
		r = -errno;
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	if (r == 0 && renameat(data_dirfd, tmp, data_dirfd, rec->path) < 0)
		r = -errno;
	if (r == 0)
		r = sync_dir_of(data_dirfd, rec->path);
	else if (dst >= 0)
		unlinkat(data_dirfd, tmp, 0);
	free(frags);
	/* Retention (on the committer's thread) may have deleted the recording, and its file,
	 * while the copy was made: the rename then made the file again. */
	if (r == 0 && (r = cat_begin(cat, 0, &t)) == 0) {
		struct cat_recording now;
		r = cat_get_recording(t, rec->id, &now);
		cat_abort(t);
		if (r == -ENOENT)
			rec_recording_unlink(data_dirfd, rec->path);
	}
	return r;
}

int rec_recording_unlink(int data_dirfd, const char *path)
{
	char side[CAT_PATH_MAX + 8];
	if (sidecar_path(path, side, sizeof side) == 0)
		unlinkat(data_dirfd, side, 0); /* most recordings have none */
	return unlinkat(data_dirfd, path, 0) < 0 && errno != ENOENT ? -errno : 0;
}

/* The name in tier-deletes of the sidecar of key: the key with its slashes as '+' and
 * the sidecar's suffix, so that rec_tier_sidecar_read reads it (an
 * event's key has neither '+' nor a leading dot: event ids are [A-Za-z0-9._:-]). */
static int retired_name(const char *key, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s%s", REC_TIER_DELETES_DIR, key, REC_TIER_SIDECAR);
	if (n < 0 || (size_t)n >= len || !key[0] || key[0] == '.' || strchr(key, '+'))
		return -EINVAL;
	for (char *c = out + sizeof REC_TIER_DELETES_DIR; *c; c++)
		if (*c == '/')
			*c = '+';
	return 0;
}

int rec_tier_sidecar_retire(int data_dirfd, const char *path, const char *only_key)
{
	char side[CAT_PATH_MAX + 8], to[CAT_PATH_MAX + 32];
	struct cat_tier row;
	int r = sidecar_path(path, side, sizeof side);
	if (r == 0)
		r = rec_tier_sidecar_read(data_dirfd, path, &row);
	if (r == -ENOENT || (r == 0 && only_key && strcmp(row.key, only_key) != 0))
		return 0;
	if (r == 0)
		r = retired_name(row.key, to, sizeof to);
	if (r < 0) /* left where it is, for keeppeekctl check to report */
		return r;
	if (mkdirat(data_dirfd, REC_TIER_DELETES_DIR, 0750) == 0)
		r = sync_dir_of(data_dirfd, REC_TIER_DELETES_DIR); /* data_dir itself */
	else if (errno != EEXIST)
		r = -errno;
	if (r < 0)
		return r;
	if (renameat(data_dirfd, side, data_dirfd, to) < 0)
		return errno == ENOENT ? 0 : -errno;
	r = sync_dir_of(data_dirfd, to);
	return r == 0 ? sync_dir_of(data_dirfd, path) : r;
}

int rec_event_file_unlink(int data_dirfd, const char *path)
{
	int r = unlinkat(data_dirfd, path, 0) < 0 && errno != ENOENT ? -errno : 0;
	int e = rec_tier_sidecar_retire(data_dirfd, path, NULL);
	if (e < 0)
		kp_err("%s: keeping the sidecar of its object for the object's delete failed: %s", path, strerror(-e));
	return r;
}
