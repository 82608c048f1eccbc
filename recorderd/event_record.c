/* Event records next to the JPEGs (see event_record.h). */
#include "event_record.h"

#include <errno.h>
#include <fcntl.h>
#include <pb_decode.h>
#include <pb_encode.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "jobs.h"
#include "log.h"

#define FORMAT_VERSION 1
#define BACKFILL_BATCH 256
#define META_FLAG      "event_records"

static const uint8_t magic[4] = {'K', 'P', 'E', 'V'};

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c >> 1 ^ (0xedb88320u & -(c & 1));
		crc_table[i] = c;
	}
}

uint32_t rec_crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
	uint32_t c = ~crc;
	for (size_t i = 0; i < n; i++)
		c = crc_table[(c ^ p[i]) & 0xff] ^ c >> 8;
	return ~c;
}

uint32_t rec_crc32(const uint8_t *p, size_t n)
{
	return rec_crc32_update(0, p, n);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int rec_event_record_encode(const kp_EventRecord *ev, uint8_t *out, size_t cap, size_t *ret_len)
{
	if (cap < REC_EVENT_RECORD_HEADER)
		return -ENOSPC;
	pb_ostream_t o = pb_ostream_from_buffer(out + REC_EVENT_RECORD_HEADER, cap - REC_EVENT_RECORD_HEADER);
	if (!pb_encode(&o, kp_EventRecord_fields, ev))
		return -EINVAL;
	memcpy(out, magic, sizeof magic);
	put_le32(out + 4, FORMAT_VERSION);
	put_le32(out + 8, (uint32_t)o.bytes_written);
	put_le32(out + 12, rec_crc32(out + REC_EVENT_RECORD_HEADER, o.bytes_written));
	*ret_len = REC_EVENT_RECORD_HEADER + o.bytes_written;
	return 0;
}

int rec_event_record_decode(const uint8_t *buf, size_t len, kp_EventRecord *ret)
{
	if (len < REC_EVENT_RECORD_HEADER || memcmp(buf, magic, sizeof magic) || get_le32(buf + 4) != FORMAT_VERSION)
		return -EBADMSG;
	uint32_t n = get_le32(buf + 8);
	if (n > kp_EventRecord_size || len != REC_EVENT_RECORD_HEADER + (size_t)n ||
	    rec_crc32(buf + REC_EVENT_RECORD_HEADER, n) != get_le32(buf + 12))
		return -EBADMSG;
	*ret = (kp_EventRecord)kp_EventRecord_init_zero;
	pb_istream_t in = pb_istream_from_buffer(buf + REC_EVENT_RECORD_HEADER, n);
	if (!pb_decode(&in, kp_EventRecord_fields, ret) || !ret->event_id[0] || !ret->revision)
		return -EBADMSG;
	return 0;
}

int rec_event_record_create(int data_dirfd, const char *path, const kp_EventRecord *ev, int *ret_fd)
{
	static _Thread_local uint8_t buf[REC_EVENT_RECORD_MAX];
	size_t len;
	int r = rec_event_record_encode(ev, buf, sizeof buf, &len);
	if (r < 0)
		return r;
	int fd = openat(data_dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = -errno;
			close(fd);
			unlinkat(data_dirfd, path, 0);
			return r;
		}
		off += (size_t)w;
	}
	*ret_fd = fd;
	return 0;
}

int rec_event_record_read(int data_dirfd, const char *path, kp_EventRecord *ret)
{
	static _Thread_local uint8_t buf[REC_EVENT_RECORD_MAX + 1];
	int fd = openat(data_dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = 0;
	int r = 0;
	while (len < sizeof buf) {
		ssize_t n = read(fd, buf + len, sizeof buf - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	return r < 0 ? r : rec_event_record_decode(buf, len, ret);
}

static int make_dir(int dirfd, const char *path, const char *parent);

int rec_event_record_store(int data_dirfd, const kp_EventRecord *ev)
{
	char path[CAT_PATH_MAX], dir[10];
	rec_event_record_path(ev->event_id, ev->revision, path, sizeof path);
	snprintf(dir, sizeof dir, "%.9s", path); /* events/hh */
	int r = make_dir(data_dirfd, "events", ".");
	if (r == 0)
		r = make_dir(data_dirfd, dir, "events");
	int fd = -1;
	if (r == 0)
		r = rec_event_record_create(data_dirfd, path, ev, &fd);
	if (r < 0)
		return r;
	r = fdatasync(fd) < 0 ? -errno : 0;
	close(fd);
	if (r == 0)
		r = rec_fsync_dir(data_dirfd, dir);
	if (r < 0)
		unlinkat(data_dirfd, path, 0);
	return r;
}

/* ---- backfill ---- */

struct rec_backfill {
	struct cat *cat;
	int dirfd;
	pthread_t thread;
	int stop;
};

struct id_list {
	char (*id)[CAT_EVENT_ID_MAX + 1];
	size_t n, cap;
};

static int collect_id(void *arg, int64_t start_ms, uint64_t seq, const char *id)
{
	struct id_list *l = arg;
	(void)start_ms;
	(void)seq;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		void *p = realloc(l->id, cap * sizeof *l->id);
		if (!p)
			return -ENOMEM;
		l->id = p;
		l->cap = cap;
	}
	snprintf(l->id[l->n++], sizeof l->id[0], "%s", id);
	return 0;
}

static int make_dir(int dirfd, const char *path, const char *parent)
{
	if (mkdirat(dirfd, path, 0750) < 0)
		return errno == EEXIST ? 0 : -errno;
	return rec_fsync_dir(dirfd, parent);
}

/* One batch: the records of the stored revisions that have none, written, then each
 * synced (one journal commit serves most of them) with their directories; then every
 * row read again, and a record whose revision was replaced or deleted meanwhile removed
 * (the commit thread unlinks a record only after its commit: either it saw this file,
 * or this second read sees its commit). */
static int backfill_batch(struct rec_backfill *b, char (*ids)[CAT_EVENT_ID_MAX + 1], size_t n, unsigned *written)
{
	static kp_EventRecord ev;
	int fds[BACKFILL_BATCH];
	uint32_t revs[BACKFILL_BATCH];
	uint8_t dirs[256 / 8] = {0};
	size_t nfd = 0;
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	struct cat_txn *t = NULL;
	int r = cat_begin(b->cat, 0, &t);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct cat_event_row row;
		char path[CAT_PATH_MAX];
		r = cat_event_get(t, ids[i], &row, &ev);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		rec_event_record_path(ids[i], row.revision, path, sizeof path);
		revs[i] = row.revision;
		if (faccessat(b->dirfd, path, F_OK, 0) == 0)
			continue;
		char dir[10];
		snprintf(dir, sizeof dir, "%.9s", path); /* events/hh */
		r = make_dir(b->dirfd, "events", ".");
		if (r == 0)
			r = make_dir(b->dirfd, dir, "events");
		if (r == 0)
			r = rec_event_record_create(b->dirfd, path, &ev, &fds[i]);
		if (r == 0) {
			unsigned hh = (unsigned)strtoul(dir + 7, NULL, 16) & 0xff;
			dirs[hh / 8] |= (uint8_t)(1u << hh % 8);
			nfd++;
		}
	}
	if (t)
		cat_abort(t);
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			if (r == 0 && fdatasync(fds[i]) < 0)
				r = -errno;
			close(fds[i]);
		}
	for (unsigned hh = 0; r == 0 && hh < 256; hh++)
		if (dirs[hh / 8] >> hh % 8 & 1) {
			char dir[16];
			snprintf(dir, sizeof dir, "events/%02x", hh);
			r = rec_fsync_dir(b->dirfd, dir);
		}
	if (r < 0 || !nfd)
		return r;
	t = NULL;
	r = cat_begin(b->cat, 0, &t);
	for (size_t i = 0; r == 0 && i < n; i++) {
		if (fds[i] < 0)
			continue;
		uint32_t now = 0;
		r = cat_event_revision(t, ids[i], &now);
		if (r == 0 && now != revs[i]) {
			char path[CAT_PATH_MAX];
			rec_event_record_path(ids[i], revs[i], path, sizeof path);
			unlinkat(b->dirfd, path, 0);
		} else if (r == 0) {
			(*written)++;
		}
	}
	if (t)
		cat_abort(t);
	return r;
}

static void *backfill_thread(void *arg)
{
	struct rec_backfill *b = arg;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct id_list l = {0};
	struct cat_txn *t;
	uint64_t done = 0;
	int r = cat_begin(b->cat, 0, &t);
	if (r == 0) {
		r = cat_meta_get(t, META_FLAG, &done);
		if (r == 0 && !done)
			r = cat_each_event(t, collect_id, &l);
		cat_abort(t);
	}
	unsigned written = 0;
	for (size_t i = 0; r == 0 && !done && i < l.n; i += BACKFILL_BATCH) {
		if (__atomic_load_n(&b->stop, __ATOMIC_RELAXED)) {
			r = -ECANCELED;
			break;
		}
		size_t n = l.n - i < BACKFILL_BATCH ? l.n - i : BACKFILL_BATCH;
		r = backfill_batch(b, l.id + i, n, &written);
	}
	free(l.id);
	if (r == 0 && !done)
		r = cat_begin(b->cat, 1, &t);
	if (r == 0 && !done) {
		r = cat_meta_set(t, META_FLAG, 1);
		if (r == 0)
			r = cat_commit(t);
		else
			cat_abort(t);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	if (r == -ECANCELED)
		kp_info("event records: stopped after %u records; the rest at the next start", written);
	else if (r < 0)
		kp_err("event records: writing the records of stored events failed: %s; tried again at the next start "
		       "(until then a rebuild of the catalog cannot restore the events without one)",
		       strerror(-r));
	else if (!done)
		kp_notice("event records: %u stored events had none; written in %ld ms (a rebuild of the catalog "
			  "restores every event from now on)",
			  written, ms);
	return NULL;
}

int rec_event_records_backfill_start(struct cat *cat, int data_dirfd, struct rec_backfill **ret)
{
	struct rec_backfill *b = calloc(1, sizeof *b);
	if (!b)
		return -ENOMEM;
	b->cat = cat;
	b->dirfd = data_dirfd;
	int r = -pthread_create(&b->thread, NULL, backfill_thread, b);
	if (r < 0) {
		free(b);
		return r;
	}
	*ret = b;
	return 0;
}

void rec_event_records_backfill_stop(struct rec_backfill *b)
{
	if (!b)
		return;
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
	pthread_join(b->thread, NULL);
	free(b);
}
