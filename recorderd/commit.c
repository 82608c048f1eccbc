/* Group commit of written fragments into the catalog, on its own thread (see commit.h). */
#include "commit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "event_link.h"
#include "event_log.h"
#include "kp_time.h"
#include "log.h"

struct batch {
	struct rec_commit_item *items;
	size_t n, cap;
};

struct rec_committer {
	struct cat *cat;
	int data_dirfd;
	struct rec_evlog *log;    /* the commit thread's */
	uint64_t tombstones_seen; /* by the last compaction */
	int64_t compact_after_ms; /* monotonic: no compaction before */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stopping;
	int joined;
	struct batch open;    /* filled by the loop thread, under lock */
	struct batch running; /* the commit thread's */
	int retention_due;
	struct rec_retention_policy policy;
	uint64_t quota;                    /* bytes, 0: none */
	int64_t quota_idle_until;          /* wall ms: no quota pass before (the last one found nothing) */
	uint64_t failures;                 /* consecutive */
	struct rec_job *jobs, **jobs_tail; /* waiting, under lock */
	struct rec_job *done, **done_tail; /* finished, under lock, for the loop thread */
	int urgent;                        /* jobs wait: commit now */
	void (*on_done)(void *arg);
	void *done_arg;
	void (*on_removed)(void);
	struct rec_commit_stats stats; /* under lock */
};

static int grow(struct batch *b, size_t want)
{
	if (want <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap *= 2;
	struct rec_commit_item *ni = realloc(b->items, cap * sizeof *ni);
	if (!ni)
		return -ENOMEM;
	b->items = ni;
	b->cap = cap;
	return 0;
}

static void close_fds(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++) {
		if (b->items[i].fd >= 0)
			close(b->items[i].fd);
		free(b->items[i].tier);
	}
	b->n = 0;
}

/* fsync of the directories leading to a new file: the stream's, the camera's, recordings/. */
static int sync_dirs(int data_dirfd, const char *path)
{
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "%s", path);
	for (int depth = 0; depth < 3; depth++) {
		char *slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
		int fd = openat(data_dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		int r = fsync(fd) < 0 ? -errno : 0;
		close(fd);
		if (r < 0)
			return r;
	}
	return 0;
}

struct order {
	uint64_t id;
	size_t index;
};

static int by_recording(const void *a, const void *b)
{
	const struct order *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Media first: one fdatasync per file (its last fragment in the batch covers the rest). */
static int sync_media(struct rec_committer *c, struct batch *b)
{
	struct order *o = malloc(b->n * sizeof *o);
	if (!o)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < b->n; i++)
		if (b->items[i].kind == REC_ITEM_FRAGMENT)
			o[n++] = (struct order){.id = b->items[i].rec.id, .index = i};
	qsort(o, n, sizeof *o, by_recording);
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct rec_commit_item *it = &b->items[o[i].index];
		if (it->sync_dirs)
			r = sync_dirs(c->data_dirfd, it->rec.path);
		if (r == 0 && (i + 1 == n || o[i + 1].id != o[i].id) && fdatasync(it->fd) < 0)
			r = -errno;
		if (r < 0)
			kp_err("%s: syncing new bytes failed: %s; not indexed yet", it->rec.path, strerror(-r));
	}
	free(o);
	return r;
}

/* A tier journal row. Its recording deleted meanwhile (retention), the row goes to the
 * deletes instead: an upload that was under way may have left an object, or an
 * unfinished multipart upload, which the delete must also abort. */
static int tier_row(struct cat_txn *t, uint64_t id, const struct cat_tier *row)
{
	struct cat_recording rec;
	int r = cat_get_recording(t, id, &rec);
	if (r == 0 && row->state == CAT_TIER_REMOTE) {
		/* The row and the journal say it together; a stripped file is never taken back. */
		struct cat_tier had;
		if (cat_tier_get(t, id, &had) == 0 && had.state == CAT_TIER_STRIPPED)
			return 0;
		r = cat_mark_remote(t, id);
	}
	if (r == 0)
		return cat_tier_put(t, id, row);
	if (r != -ENOENT)
		return r;
	struct cat_tier del = *row, had;
	r = cat_tier_delete_get(t, id, &had);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == 0 && !del.upload_id[0])
		snprintf(del.upload_id, sizeof del.upload_id, "%s", had.upload_id);
	return cat_tier_delete_put(t, id, &del);
}

static int index_batch(struct rec_committer *c, struct batch *b)
{
	struct cat_txn *t;
	int r = cat_begin(c->cat, 1, &t);
	for (size_t i = 0; i < b->n && r == 0; i++) {
		struct rec_commit_item *it = &b->items[i];
		if (it->kind == REC_ITEM_FRAGMENT) {
			r = cat_add_fragment(t, &it->rec, &it->frag);
			if (r == 0)
				r = rec_event_link_fragment(t, &it->rec, &it->frag);
		} else if (it->kind == REC_ITEM_TIER) {
			r = tier_row(t, it->rec.id, it->tier);
		} else if (it->kind == REC_ITEM_TIER_DELETED) {
			r = cat_tier_delete_done(t, it->rec.id);
		} else
			r = cat_close_recording(t, it->rec.id);
		/* An item the catalog refuses by itself (not the environment) is dropped: its
		 * bytes stay in the file for start-up recovery to judge. */
		if (r == -EINVAL || r == -EBADMSG) {
			kp_err("%s: fragment %u not indexed: %s", it->rec.path, (unsigned)it->frag.seq, strerror(-r));
			r = 0;
		}
	}
	if (r == 0)
		return cat_commit(t);
	cat_abort(t);
	return r;
}

/* Whether something was committed. */
static int commit_running(struct rec_committer *c)
{
	struct batch *b = &c->running;
	if (!b->n)
		return 0;
	int r = sync_media(c, b);
	if (r == 0) {
		r = index_batch(c, b);
		if (r < 0 && c->failures % 40 == 0)
			kp_err("catalog: commit of %zu items failed: %s; retrying with the next batch", b->n,
			       strerror(-r));
	}
	if (r == 0) {
		if (c->failures)
			kp_notice("catalog: commits succeed again after %llu failures",
				  (unsigned long long)c->failures);
		c->failures = 0;
		close_fds(b);
		return 1;
	}
	c->failures++;
	/* Keep the items (their files are intact): they go first into the next batch. */
	pthread_mutex_lock(&c->lock);
	if (grow(b, b->n + c->open.n) == 0) {
		if (c->open.n) /* an empty batch may have no array yet */
			memcpy(b->items + b->n, c->open.items, c->open.n * sizeof *b->items);
		b->n += c->open.n;
		struct batch t = c->open;
		c->open = *b;
		*b = t;
		b->n = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static void removed(struct rec_committer *c)
{
	pthread_mutex_lock(&c->lock);
	void (*fn)(void) = c->on_removed;
	pthread_mutex_unlock(&c->lock);
	if (fn)
		fn();
}

/* Returns how many recordings were deleted. */
static unsigned retention(struct rec_committer *c, const struct rec_retention_policy *p)
{
	struct rec_retention_result r;
	rec_retention_run(c->cat, c->data_dirfd, c->log, p, &r);
	if (r.deleted || r.events_deleted)
		removed(c);
	if (r.deleted)
		kp_info("retention: deleted %u recordings (%llu bytes)", r.deleted, (unsigned long long)r.bytes);
	if (r.events_deleted)
		kp_info("retention: deleted %u events", r.events_deleted);
	if (r.err)
		kp_err("retention: catalog update failed: %s", strerror(-r.err));
	if (r.unlink_failed)
		kp_err("retention: %u files could not be removed (first %s: %s)", r.unlink_failed, r.unlink_path,
		       strerror(r.unlink_err));
	return r.deleted;
}

/* The event log's oldest segments, when tombstones were written since the last look,
 * at most once per REC_EVLOG_COMPACT_EVERY_MS. */
static void compact(struct rec_committer *c)
{
	struct rec_evlog_stats st;
	rec_evlog_get_stats(c->log, &st);
	int64_t now = (int64_t)kp_mono_ms();
	if (st.tombstones == c->tombstones_seen || now < c->compact_after_ms)
		return;
	c->tombstones_seen = st.tombstones;
	c->compact_after_ms = now + REC_EVLOG_COMPACT_EVERY_MS;
	struct rec_evlog_compact_result res;
	int r = rec_evlog_compact(c->log, c->cat, c->data_dirfd, &res);
	if (r < 0)
		kp_err("event log: compaction failed: %s; tried again later", strerror(-r));
	if (res.segments_removed)
		kp_info("event log: removed %u segments (%llu bytes), %llu stored records written again",
			res.segments_removed, (unsigned long long)res.bytes_freed,
			(unsigned long long)res.records_copied);
}

static int over_quota(struct rec_committer *c, uint64_t quota)
{
	struct cat_txn *t;
	uint64_t total = 0;
	if (!quota || cat_begin(c->cat, 0, &t) < 0)
		return 0;
	int r = cat_total_bytes(t, &total);
	cat_abort(t);
	return r == 0 && total > quota;
}

static const int64_t bucket_us[REC_COMMIT_BUCKETS] = {5000,   10000,  25000,   50000,  100000,
						      250000, 500000, 1000000, 2500000};

/* Counts a commit's latency and hands its finished jobs to the loop thread. */
static void account(struct rec_committer *c, int64_t us, struct rec_job *jobs)
{
	int64_t now = kp_mono_us();
	for (struct rec_job *j = jobs; j; j = j->next)
		j->commit_us = now - j->pushed_mono_us;
	pthread_mutex_lock(&c->lock);
	c->stats.commits++;
	c->stats.sum_us += (uint64_t)us;
	for (int i = 0; i < REC_COMMIT_BUCKETS; i++)
		if (us <= bucket_us[i])
			c->stats.le[i]++;
	if (jobs) {
		*c->done_tail = jobs;
		while (*c->done_tail)
			c->done_tail = &(*c->done_tail)->next;
	}
	void (*cb)(void *) = c->on_done;
	void *arg = c->done_arg;
	pthread_mutex_unlock(&c->lock);
	if (jobs && cb)
		cb(arg);
}

static void *run(void *arg)
{
	struct rec_committer *c = arg;
	struct rec_evlog_reconcile_result rr;
	int r = rec_evlog_reconcile(c->log, c->cat, c->data_dirfd, &rr);
	if (r < 0)
		kp_err("event log: reconciling it with the catalog at start failed: %s; a rebuild of the catalog may "
		       "restore the last publications before the last crash, unacknowledged, or miss their deletes",
		       strerror(-r));
	else if (rr.tombstones || rr.records)
		kp_notice("event log: %u records of publications that were never committed ended, %u records of "
			  "revisions a delete that was never committed ended written again (the last pass before a "
			  "crash)",
			  rr.tombstones, rr.records);
	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += REC_COMMIT_INTERVAL_MS * 1000000l;
		if (until.tv_nsec >= 1000000000l) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000l;
		}
		int stopping = c->stopping;
		if (!stopping)
			while (!c->stopping && !c->urgent &&
			       pthread_cond_timedwait(&c->wake, &c->lock, &until) != ETIMEDOUT)
				;
		c->urgent = 0;
		struct rec_job *jobs = c->jobs;
		c->jobs = NULL;
		c->jobs_tail = &c->jobs;
		struct batch t = c->running;
		c->running = c->open;
		c->open = t;
		c->open.n = 0;
		int due = c->retention_due;
		struct rec_retention_policy p = c->policy;
		uint64_t quota = c->quota;
		c->retention_due = 0;
		pthread_mutex_unlock(&c->lock);
		int64_t t0 = kp_mono_us();
		int committed = commit_running(c);
		if (jobs)
			rec_jobs_run(c->cat, c->data_dirfd, c->log, jobs);
		for (struct rec_job *j = jobs; j; j = j->next)
			if (j->kind == REC_JOB_DELETE && j->state == REC_JOB_DONE) {
				removed(c);
				break;
			}
		if (committed || jobs)
			account(c, kp_mono_us() - t0, jobs);
		if (due && !c->failures)
			retention(c, &p);
		else if (committed && !stopping && kp_wall_ms() >= c->quota_idle_until && over_quota(c, quota) &&
			 !retention(c, &(struct rec_retention_policy){.max_bytes = quota, .now_ms = kp_wall_ms()}))
			c->quota_idle_until = kp_wall_ms() + REC_QUOTA_IDLE_MS; /* nothing deletable yet */
		if (!stopping && !c->failures)
			compact(c);
		pthread_mutex_lock(&c->lock);
		if (stopping)
			break;
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int rec_commit_new(struct cat *cat, int data_dirfd, struct rec_committer **ret)
{
	struct rec_committer *c = calloc(1, sizeof *c);
	if (!c)
		return -ENOMEM;
	c->cat = cat;
	c->data_dirfd = data_dirfd;
	int r = rec_evlog_new(data_dirfd, &c->log);
	if (r < 0) {
		free(c);
		return r;
	}
	c->tombstones_seen = UINT64_MAX; /* a first look at what earlier runs left */
	c->jobs_tail = &c->jobs;
	c->done_tail = &c->done;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&c->lock, NULL);
	r = -pthread_create(&c->thread, NULL, run, c);
	if (r < 0) {
		pthread_cond_destroy(&c->wake);
		pthread_mutex_destroy(&c->lock);
		rec_evlog_free(c->log);
		free(c);
		return r;
	}
	*ret = c;
	return 0;
}

void rec_commit_stop(struct rec_committer *c)
{
	if (!c || c->joined)
		return;
	pthread_mutex_lock(&c->lock);
	c->stopping = 1;
	c->retention_due = 0;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	c->joined = 1;
}

void rec_commit_free(struct rec_committer *c)
{
	if (!c)
		return;
	rec_commit_stop(c);
	if (c->open.n)
		kp_err("catalog: %zu items left unindexed at shutdown; start-up recovery indexes their bytes",
		       c->open.n);
	close_fds(&c->open);
	close_fds(&c->running);
	/* Jobs pushed after the last pass (none normally: the last pass runs them). */
	for (struct rec_job *j = c->jobs, *n; j; j = n) {
		n = j->next;
		rec_job_free(j);
	}
	for (struct rec_job *j = c->done, *n; j; j = n) {
		n = j->next;
		rec_job_free(j);
	}
	free(c->open.items);
	free(c->running.items);
	rec_evlog_free(c->log);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int rec_commit_push(struct rec_committer *c, const struct rec_commit_item *it)
{
	pthread_mutex_lock(&c->lock);
	int r = c->open.n >= REC_COMMIT_MAX_ITEMS ? -ENOBUFS : grow(&c->open, c->open.n + 1);
	if (r == 0)
		c->open.items[c->open.n++] = *it;
	pthread_mutex_unlock(&c->lock);
	return r;
}

void rec_commit_quota(struct rec_committer *c, uint64_t max_bytes)
{
	pthread_mutex_lock(&c->lock);
	c->quota = max_bytes;
	pthread_mutex_unlock(&c->lock);
}

void rec_commit_retention(struct rec_committer *c, const struct rec_retention_policy *p)
{
	pthread_mutex_lock(&c->lock);
	c->policy = *p;
	c->retention_due = 1;
	pthread_mutex_unlock(&c->lock);
}

void rec_commit_on_done(struct rec_committer *c, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->on_done = fn;
	c->done_arg = arg;
	pthread_mutex_unlock(&c->lock);
}

void rec_commit_on_removed(struct rec_committer *c, void (*fn)(void))
{
	pthread_mutex_lock(&c->lock);
	c->on_removed = fn;
	pthread_mutex_unlock(&c->lock);
}

void rec_commit_job(struct rec_committer *c, struct rec_job *j)
{
	j->next = NULL;
	j->pushed_mono_us = kp_mono_us();
	pthread_mutex_lock(&c->lock);
	*c->jobs_tail = j;
	c->jobs_tail = &j->next;
	c->urgent = 1;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
}

struct rec_job *rec_commit_take_done(struct rec_committer *c)
{
	pthread_mutex_lock(&c->lock);
	struct rec_job *j = c->done;
	c->done = NULL;
	c->done_tail = &c->done;
	pthread_mutex_unlock(&c->lock);
	return j;
}

void rec_commit_get_stats(struct rec_committer *c, struct rec_commit_stats *ret)
{
	pthread_mutex_lock(&c->lock);
	*ret = c->stats;
	pthread_mutex_unlock(&c->lock);
}
