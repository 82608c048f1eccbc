/* Group commit: fragments written by the streams wait here until the next commit (at
 * most REC_COMMIT_INTERVAL_MS later); then, on the commit thread, every file with new
 * bytes is fdatasync'ed once (and, for a new file, its directories fsync'ed) before one
 * catalog transaction indexes all of them. A failed commit keeps its items for the next
 * one. Retention runs on the same thread after a commit, so one thread at a time writes
 * the catalog, and so does the event log's compaction (event_log.h), which owns the
 * thread's event log writer too. The thread logs its own failures. */
#ifndef KP_REC_COMMIT_H
#define KP_REC_COMMIT_H

#include "catalog.h"
#include "jobs.h"
#include "retention.h"

#define REC_COMMIT_INTERVAL_MS 250
#define REC_COMMIT_MAX_ITEMS   65536 /* backlog while the disk is slower than the cameras */
#define REC_QUOTA_IDLE_MS      5000  /* after a quota pass that could delete nothing */

/* REC_ITEM_TIER: the tier journal's row of recording rec.id (tier.h); a recording gone by
 * then has its row written to the deletes instead (its object is to be deleted).
 * REC_ITEM_TIER_DELETED: the object of deleted recording rec.id is gone from the store:
 * its row leaves the deletes. */
enum rec_item_kind { REC_ITEM_FRAGMENT, REC_ITEM_CLOSE, REC_ITEM_TIER, REC_ITEM_TIER_DELETED };

struct rec_commit_item {
	enum rec_item_kind kind;
	int fd;             /* fragment: a duplicate of the file, owned by the committer once pushed */
	unsigned sync_dirs; /* the file's first fragment: its directories are new */
	struct cat_recording rec;
	struct cat_fragment frag;
	struct cat_tier *tier; /* REC_ITEM_TIER: malloc'ed, owned by the committer once pushed */
};

#define REC_COMMIT_BUCKETS 9 /* latency histogram: 5, 10, 25, 50, 100, 250, 500, 1000, 2500 ms */

struct rec_commit_stats {
	uint64_t commits;
	uint64_t sum_us;
	uint64_t le[REC_COMMIT_BUCKETS]; /* cumulative */
};

struct rec_committer;

int rec_commit_new(struct cat *cat, int data_dirfd, struct rec_committer **ret);
/* Commits what is pending and stops the thread; the finished jobs can still be taken. */
void rec_commit_stop(struct rec_committer *c);
/* Stops it (when not yet) and frees everything. */
void rec_commit_free(struct rec_committer *c);

/* Queues a copy of it; -ENOBUFS when REC_COMMIT_MAX_ITEMS wait already. */
int rec_commit_push(struct rec_committer *c, const struct rec_commit_item *it);

/* The disk quota (0: none): after every commit that leaves the indexed bytes above it,
 * a retention pass removes the oldest recordings, so it holds within a commit interval
 * (when a pass finds nothing to delete, the next waits REC_QUOTA_IDLE_MS). */
void rec_commit_quota(struct rec_committer *c, uint64_t max_bytes);

/* Asks for a retention pass after the next commit, with this policy. */
void rec_commit_retention(struct rec_committer *c, const struct rec_retention_policy *p);

/* Queues a job (owned by the committer from now on) and wakes the thread at once. */
void rec_commit_job(struct rec_committer *c, struct rec_job *j);
/* fn runs on the commit thread whenever finished jobs wait (it should wake the loop). */
void rec_commit_on_done(struct rec_committer *c, void (*fn)(void *arg), void *arg);
/* fn runs on the commit thread after retention or a delete job removed recordings or
 * events (the picture cache drops theirs); NULL stops it. */
void rec_commit_on_removed(struct rec_committer *c, void (*fn)(void));
/* The finished jobs, in order (a list the caller frees with rec_job_free). */
struct rec_job *rec_commit_take_done(struct rec_committer *c);
/* Latency of each commit pass (media sync + transaction, jobs included). */
void rec_commit_get_stats(struct rec_committer *c, struct rec_commit_stats *ret);

#endif
