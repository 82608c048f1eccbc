/* Start-up recovery of recording files and their catalog rows (see recovery.h). */
#include "recovery.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_keys.h"
#include "fmp4.h"
#include "log.h"

static int64_t floor_div90(int64_t v)
{
	return v >= 0 ? v / 90 : -((-v + 89) / 90);
}

static int read_at(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *ret_n)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*ret_n = got;
	return 0;
}

int rec_index_file(struct cat_txn *t, int data_dirfd, const struct cat_recording *rec, int truncate,
		   unsigned *ret_fragments, int *ret_truncated)
{
	int fd = openat(data_dirfd, rec->path, (truncate ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	static uint8_t buf[FMP4_FRAG_HEADER_MAX];
	uint64_t off = rec->bytes;
	uint32_t seq = rec->fragments;
	unsigned indexed = 0;
	struct cat_fragment pending[64];
	unsigned npending = 0;
	while (r == 0 && off < (uint64_t)st.st_size) {
		size_t n;
		r = read_at(fd, buf, sizeof buf, off, &n);
		if (r < 0)
			break;
		static struct fmp4_frag fi;
		if (fmp4_read_frag(NULL, buf, n, &fi) < 0 || off + fi.total_len > (uint64_t)st.st_size ||
		    fi.seq != seq + 1)
			break; /* partial or foreign: cut here */
		int64_t run_at = (int64_t)(rec->anchor_offset + fi.base_time);
		pending[npending++] = (struct cat_fragment){
		    .recording_id = rec->id,
		    .seq = fi.seq,
		    .samples = fi.nsamples,
		    .start_ms = rec->anchor_ms + floor_div90(run_at),
		    .end_ms = rec->anchor_ms + floor_div90(run_at + (int64_t)fi.duration),
		    .base_time = fi.base_time,
		    .duration = fi.duration,
		    .offset = off,
		    .length = fi.total_len,
		    .keyframe_offset = fi.samples[0].keyframe ? off + fi.samples[0].offset : 0,
		    .keyframe_length = fi.samples[0].keyframe ? fi.samples[0].size : 0,
		};
		seq = fi.seq;
		off += fi.total_len;
		if (npending == sizeof pending / sizeof pending[0]) {
			/* Media before index: sync what this batch covers first. */
			r = fdatasync(fd) < 0 ? -errno : 0;
			for (unsigned i = 0; r == 0 && i < npending; i++)
				r = cat_add_fragment(t, rec, &pending[i]);
			indexed += npending;
			npending = 0;
		}
	}
	int truncated = 0;
	if (r == 0 && truncate && off < (uint64_t)st.st_size) {
		r = ftruncate(fd, (off_t)off) < 0 ? -errno : 0;
		truncated = 1;
	}
	if (r == 0)
		r = fdatasync(fd) < 0 ? -errno : 0;
	for (unsigned i = 0; r == 0 && i < npending; i++)
		r = cat_add_fragment(t, rec, &pending[i]);
	indexed += npending;
	close(fd);
	if (r < 0)
		return r;
	*ret_fragments = indexed;
	*ret_truncated = truncated;
	return 0;
}

int rec_recover_file(struct cat_txn *t, int data_dirfd, const struct cat_recording *rec, unsigned *ret_fragments,
		     int *ret_truncated)
{
	return rec_index_file(t, data_dirfd, rec, 1, ret_fragments, ret_truncated);
}

struct open_list {
	struct cat_recording *r;
	size_t n, cap;
};

static int collect_open(void *arg, const struct cat_recording *r)
{
	struct open_list *l = arg;
	if (!r->open)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct cat_recording *nr = realloc(l->r, cap * sizeof *nr);
		if (!nr)
			return -ENOMEM;
		l->r = nr;
		l->cap = cap;
	}
	l->r[l->n++] = *r;
	return 0;
}

static int recover_open(struct cat *cat, int data_dirfd, struct rec_recovery_result *res)
{
	struct cat_txn *t;
	int r = cat_begin(cat, 1, &t);
	if (r < 0)
		return r;
	struct open_list l = {0};
	r = cat_each_recording(t, collect_open, &l);
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		const struct cat_recording *rec = &l.r[i];
		unsigned frags;
		int truncated;
		res->files_checked++;
		r = rec_recover_file(t, data_dirfd, rec, &frags, &truncated);
		if (r == -ENOENT) { /* never a row without its file */
			kp_err("%s: recording file missing; removing it from the catalog", rec->path);
			r = cat_delete_recording(t, rec->id, NULL);
			res->rows_removed++;
			continue;
		}
		if (r < 0) {
			kp_err("%s: recovery failed: %s", rec->path, strerror(-r));
			break;
		}
		res->fragments_indexed += frags;
		res->files_truncated += truncated;
		r = cat_close_recording(t, rec->id);
	}
	free(l.r);
	if (r < 0) {
		cat_abort(t);
		return r;
	}
	return cat_commit(t);
}

static int path_match(void *arg, const struct cat_recording *r)
{
	return !strcmp(r->path, arg);
}

/* A file in recordings/<camera>/<stream>/ the catalog does not know: indexed when it is
 * newer than everything catalogued for its stream, else removed. */
static int recover_unknown(struct cat *cat, int data_dirfd, const char *camera, uint32_t stream, const char *name,
			   struct rec_recovery_result *res)
{
	char *end;
	long long start_ms = strtoll(name, &end, 10);
	if (end == name || strcmp(end, ".mp4"))
		return 0; /* not ours */
	struct cat_recording rec = {0};
	snprintf(rec.path, sizeof rec.path, "recordings/%s/%s/%s", camera, stream ? "sub" : "main", name);
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	if (r < 0)
		return r;
	uint32_t camera_id;
	r = cat_camera_lookup(t, camera, &camera_id, NULL);
	if (r == -ENOENT) {
		cat_abort(t);
		kp_warn("%s: camera not in the catalog; file left alone", rec.path);
		return 0;
	}
	rec.stream_id = cat_stream_id(camera_id, stream);
	uint64_t last_id = 0;
	struct cat_recording last = {.start_ms = INT64_MIN};
	if (r == 0)
		r = cat_stream_last_recording(t, rec.stream_id, &last_id);
	if (r == 0 && last_id && cat_get_recording(t, last_id, &last) < 0)
		last.start_ms = INT64_MIN; /* the newest is gone (retention) */
	/* A name may be its start plus up to 15 (clash avoidance in stream.c). */
	if (r == 0)
		r = cat_each_stream_recording(t, rec.stream_id, start_ms - 15, start_ms + 1, path_match, rec.path);
	cat_abort(t);
	if (r != 0)
		return r < 0 ? r : 0; /* known */
	if (start_ms <= last.start_ms) {
		if (unlinkat(data_dirfd, rec.path, 0) < 0)
			return -errno;
		kp_notice("%s: not in the catalog and older than the stream's newest recording; removed", rec.path);
		res->files_removed++;
		return 0;
	}
	res->files_checked++;
	int fd = openat(data_dirfd, rec.path, O_RDONLY | O_CLOEXEC);
	static uint8_t buf[FMP4_INIT_MAX + FMP4_FRAG_HEADER_MAX];
	size_t n = 0;
	r = fd < 0 ? -errno : read_at(fd, buf, sizeof buf, 0, &n);
	if (fd >= 0)
		close(fd);
	if (r < 0)
		return r;
	static struct fmp4_init init;
	static struct fmp4_frag fi;
	if (fmp4_read_init(buf, n, &init) < 0 || fmp4_read_frag(&init, buf + init.len, n - init.len, &fi) < 0) {
		if (unlinkat(data_dirfd, rec.path, 0) < 0)
			return -errno;
		kp_notice("%s: no complete fragment before the crash; removed", rec.path);
		res->files_removed++;
		return 0;
	}
	/* Its directory entry first: a row must never name a file that may vanish. */
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "recordings/%s/%s", camera, stream ? "sub" : "main");
	int dfd = openat(data_dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = dfd < 0 || fsync(dfd) < 0 ? -errno : 0;
	if (dfd >= 0)
		close(dfd);
	if (r == 0)
		r = cat_begin(cat, 1, &t);
	if (r < 0)
		return r;
	r = cat_next_recording_id(t, &rec.id);
	rec.codec = init.track.codec;
	rec.width = init.track.width;
	rec.height = init.track.height;
	rec.anchor_ms = fi.wall_us / 1000;
	rec.anchor_offset = 0;
	rec.start_ms = rec.anchor_ms;
	rec.bytes = init.len;
	unsigned frags = 0;
	int truncated = 0;
	if (r == 0)
		r = rec_recover_file(t, data_dirfd, &rec, &frags, &truncated);
	if (r == 0)
		r = cat_close_recording(t, rec.id);
	if (r < 0) {
		cat_abort(t);
		return r;
	}
	r = cat_commit(t);
	if (r == 0) {
		kp_notice("%s: indexed %u fragments of a file created just before the crash", rec.path, frags);
		res->fragments_indexed += frags;
		res->files_truncated += truncated;
	}
	return r;
}

static int walk_stream(struct cat *cat, int data_dirfd, const char *camera, uint32_t stream,
		       struct rec_recovery_result *res)
{
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "recordings/%s/%s", camera, stream ? "sub" : "main");
	int fd = openat(data_dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	/* Names first: recovery changes the directory it reads. */
	char(*names)[64] = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 64)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			char(*nn)[64] = realloc(names, cap * sizeof *names);
			if (!nn) {
				r = -ENOMEM;
				break;
			}
			names = nn;
		}
		snprintf(names[n++], 64, "%s", e->d_name);
	}
	closedir(d);
	for (size_t i = 0; r == 0 && i < n; i++)
		r = recover_unknown(cat, data_dirfd, camera, stream, names[i], res);
	free(names);
	return r;
}

int rec_recover(struct cat *cat, int data_dirfd, struct rec_recovery_result *ret)
{
	struct rec_recovery_result res = {0};
	int r = recover_open(cat, data_dirfd, &res);
	if (r < 0)
		return r;
	int fd = openat(data_dirfd, "recordings", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		*ret = res;
		return errno == ENOENT ? 0 : -errno;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) > 64)
			continue;
		for (uint32_t s = 0; r == 0 && s < 2; s++)
			r = walk_stream(cat, data_dirfd, e->d_name, s, &res);
	}
	closedir(d);
	*ret = res;
	return r;
}
