/* The event log's writer and its readers over files (see event_log.h). */
#include "event_log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "jobs.h"
#include "kp_checked.h"
#include "log.h"

#define STAGE_MIN (64 * 1024)

struct rec_evlog {
	int dirfd;
	int fd;        /* the segment appended, -1: none (a new one at the next flush) */
	uint64_t seq;  /* its number */
	uint64_t size; /* its bytes on disk */
	uint64_t next; /* the number of the next new segment; 0: not looked up yet */
	int fresh;     /* its directory entry is not synced yet */
	uint8_t *buf;  /* staged items */
	size_t len, cap;
	unsigned nrec, ntomb; /* staged */
	struct rec_evlog_stats stats;
};

int rec_evlog_new(int data_dirfd, struct rec_evlog **ret)
{
	struct rec_evlog *l = calloc(1, sizeof *l);
	if (!l)
		return -ENOMEM;
	l->dirfd = data_dirfd;
	l->fd = -1;
	*ret = l;
	return 0;
}

void rec_evlog_free(struct rec_evlog *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	free(l->buf);
	free(l);
}

uint64_t rec_evlog_open_segment(const struct rec_evlog *l)
{
	return l->fd >= 0 ? l->seq : 0;
}

void rec_evlog_get_stats(const struct rec_evlog *l, struct rec_evlog_stats *ret)
{
	*ret = l->stats;
}

void rec_evlog_discard(struct rec_evlog *l)
{
	l->len = 0;
	l->nrec = l->ntomb = 0;
}

static void give_up(struct rec_evlog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	l->size = 0;
	rec_evlog_discard(l);
}

static int make_dir(int dirfd, const char *path, const char *parent)
{
	if (mkdirat(dirfd, path, 0750) < 0)
		return errno == EEXIST ? 0 : -errno;
	return rec_fsync_dir(dirfd, parent);
}

/* A new segment, numbered after every one on disk (and every one this writer made). */
static int open_segment(struct rec_evlog *l)
{
	int r = make_dir(l->dirfd, "events", ".");
	if (r == 0)
		r = make_dir(l->dirfd, REC_EVLOG_DIR, "events");
	if (r < 0)
		return r;
	if (!l->next) {
		uint64_t *seqs;
		size_t n;
		r = rec_evlog_list(l->dirfd, &seqs, &n);
		if (r < 0)
			return r;
		l->next = n ? seqs[n - 1] + 1 : 1;
		free(seqs);
	}
	char path[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(l->next, path, sizeof path);
	int fd = openat(l->dirfd, path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0) {
		r = -errno;
		if (r == -EEXIST) /* made by someone else meanwhile: look again next time */
			l->next = 0;
		kp_err("%s: creating the event log segment failed: %s", path, strerror(-r));
		return r;
	}
	l->fd = fd;
	l->seq = l->next++;
	l->size = 0;
	l->fresh = 1;
	l->stats.segments_made++;
	return 0;
}

static int write_all(int fd, struct iovec *iov, int n)
{
	while (n) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		while (n && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int rec_evlog_flush(struct rec_evlog *l)
{
	if (!l->len)
		return 0;
	int r = l->fd < 0 ? open_segment(l) : 0;
	uint8_t head[REC_EVLOG_HEADER];
	struct iovec iov[2];
	int n = 0;
	if (r == 0 && l->size == 0) {
		rec_evlog_header(l->seq, head);
		iov[n++] = (struct iovec){.iov_base = head, .iov_len = sizeof head};
	}
	iov[n++] = (struct iovec){.iov_base = l->buf, .iov_len = l->len};
	size_t total = (n == 2 ? sizeof head : 0) + l->len;
	char path[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(l->seq, path, sizeof path);
	if (r == 0 && (r = write_all(l->fd, iov, n)) < 0)
		kp_err("%s: appending %zu bytes of event records failed: %s", path, l->len, strerror(-r));
	if (r == 0 && fdatasync(l->fd) < 0) {
		r = -errno;
		kp_err("%s: fdatasync failed: %s", path, strerror(-r));
	}
	if (r == 0 && l->fresh && (r = rec_fsync_dir(l->dirfd, REC_EVLOG_DIR)) < 0)
		kp_err("%s: fsync failed: %s", REC_EVLOG_DIR, strerror(-r));
	if (r < 0) {
		give_up(l); /* what it holds past its last sound item is a torn tail */
		return r;
	}
	l->fresh = 0;
	l->size += total;
	l->stats.flushes++;
	l->stats.bytes += total;
	l->stats.records += l->nrec;
	l->stats.tombstones += l->ntomb;
	rec_evlog_discard(l);
	return 0;
}

/* Room for one more item of up to len bytes, sealing the segment first when it would
 * grow past the cap. */
static int room(struct rec_evlog *l, size_t len)
{
	uint64_t after = (l->size ? l->size : REC_EVLOG_HEADER) + l->len + len;
	if (after > REC_EVLOG_SEGMENT_CAP && (l->size || l->len)) {
		int r = rec_evlog_flush(l);
		if (r < 0)
			return r;
		if (l->fd >= 0)
			close(l->fd);
		l->fd = -1; /* sealed */
		l->size = 0;
	}
	size_t want;
	if (kp_add_size(l->len, len, &want) < 0)
		return -EOVERFLOW;
	if (want <= l->cap)
		return 0;
	size_t cap = l->cap ? l->cap : STAGE_MIN;
	while (cap < want)
		if (kp_mul_size(cap, 2, &cap) < 0)
			return -EOVERFLOW;
	uint8_t *p = realloc(l->buf, cap);
	if (!p)
		return -ENOMEM;
	l->buf = p;
	l->cap = cap;
	return 0;
}

int rec_evlog_add(struct rec_evlog *l, enum rec_evlog_kind kind, const kp_EventRecord *ev)
{
	int r = room(l, REC_EVLOG_ITEM_MAX);
	size_t n;
	if (r == 0)
		r = rec_evlog_encode(kind, ev, l->buf + l->len, l->cap - l->len, &n);
	if (r < 0)
		return r;
	l->len += n;
	if (kind == REC_EVLOG_RECORD)
		l->nrec++;
	else
		l->ntomb++;
	return 0;
}

int rec_evlog_add_pb(struct rec_evlog *l, enum rec_evlog_kind kind, const uint8_t *pb, size_t n)
{
	int r = room(l, REC_EVLOG_ITEM_MAX);
	size_t len;
	if (r == 0)
		r = rec_evlog_encode_pb(kind, pb, n, l->buf + l->len, l->cap - l->len, &len);
	if (r < 0)
		return r;
	l->len += len;
	if (kind == REC_EVLOG_RECORD)
		l->nrec++;
	else
		l->ntomb++;
	return 0;
}

int rec_evlog_add_raw(struct rec_evlog *l, const uint8_t *item, size_t len)
{
	if (len < REC_EVLOG_ITEM_HEADER || len > REC_EVLOG_ITEM_MAX)
		return -EINVAL;
	int r = room(l, len);
	if (r < 0)
		return r;
	memcpy(l->buf + l->len, item, len);
	l->len += len;
	if (item[4] == REC_EVLOG_RECORD)
		l->nrec++;
	else
		l->ntomb++;
	return 0;
}

/* ---- reading ---- */

static int by_seq(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int rec_evlog_list(int data_dirfd, uint64_t **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	int fd = openat(data_dirfd, REC_EVLOG_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		uint64_t seq;
		if (!rec_evlog_parse_name(e->d_name, &seq))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			uint64_t *p = realloc(v, cap * sizeof *v);
			if (!p) {
				r = -ENOMEM;
				break;
			}
			v = p;
		}
		v[n++] = seq;
	}
	closedir(d);
	if (r < 0) {
		free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof *v, by_seq);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int read_at(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *ret)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*ret = got;
	return 0;
}

int rec_evlog_read_segment(int data_dirfd, uint64_t seq, uint8_t **ret, size_t *ret_len)
{
	char path[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(seq, path, sizeof path);
	int fd = openat(data_dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	size_t want = (size_t)REC_EVLOG_SEGMENT_CAP + REC_EVLOG_ITEM_MAX;
	if (st.st_size >= 0 && (uint64_t)st.st_size < want)
		want = (size_t)st.st_size;
	uint8_t *buf = malloc(want ? want : 1);
	size_t got = 0;
	int r = buf ? read_at(fd, buf, want, 0, &got) : -ENOMEM;
	close(fd);
	uint64_t inside;
	if (r == 0 && (rec_evlog_check_header(buf, got, &inside) < 0 || inside != seq))
		r = -EBADMSG;
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = got;
	return 0;
}

int rec_evlog_each_after(int data_dirfd, uint64_t after,
			 int (*fn)(void *arg, uint64_t seq, const struct rec_evlog_item *item,
				   const kp_EventRecord *ev),
			 void *arg, struct rec_evlog_scan *ret)
{
	memset(ret, 0, sizeof *ret);
	uint64_t *seqs;
	size_t n;
	int r = rec_evlog_list(data_dirfd, &seqs, &n);
	static _Thread_local kp_EventRecord ev;
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (seqs[i] <= after)
			continue;
		ret->last = seqs[i];
		uint8_t *buf;
		size_t len;
		char path[REC_EVLOG_NAME_MAX];
		rec_evlog_segment_path(seqs[i], path, sizeof path);
		r = rec_evlog_read_segment(data_dirfd, seqs[i], &buf, &len);
		if (r == -EBADMSG || r == -ENOENT) {
			if (r == -EBADMSG)
				kp_warn("%s: not an event log segment (its header does not check); ignored", path);
			ret->bad_segments += r == -EBADMSG;
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		ret->segments++;
		size_t off = REC_EVLOG_HEADER;
		struct rec_evlog_item it;
		int e;
		while (r == 0 && (e = rec_evlog_next(buf, len, &off, &it, &ev)) == 0) {
			if (it.kind == REC_EVLOG_RECORD)
				ret->records++;
			else
				ret->tombstones++;
			r = fn(arg, seqs[i], &it, &ev);
		}
		if (r == 0 && e == -EBADMSG) {
			kp_info("%s: %zu bytes from offset %zu are not a whole event log item (a torn tail from a "
				"crash mid-append, damage, or an append under way); ignored",
				path, len - off, off);
			ret->bytes_ignored += len - off;
		}
		free(buf);
	}
	free(seqs);
	return r;
}

int rec_evlog_each(int data_dirfd,
		   int (*fn)(void *arg, uint64_t seq, const struct rec_evlog_item *item, const kp_EventRecord *ev),
		   void *arg, struct rec_evlog_scan *ret)
{
	return rec_evlog_each_after(data_dirfd, 0, fn, arg, ret);
}

int rec_evlog_read_item(int data_dirfd, uint64_t seq, uint64_t off, kp_EventRecord *ev)
{
	char path[REC_EVLOG_NAME_MAX];
	rec_evlog_segment_path(seq, path, sizeof path);
	int fd = openat(data_dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	static _Thread_local uint8_t buf[REC_EVLOG_ITEM_MAX];
	size_t got;
	int r = read_at(fd, buf, sizeof buf, off, &got);
	close(fd);
	size_t at = 0;
	struct rec_evlog_item it;
	if (r == 0)
		r = rec_evlog_next(buf, got, &at, &it, ev);
	return r == -ENODATA ? -EBADMSG : r;
}
