/* Group commit: fragments written by the streams wait here until the next commit (at
 * most REC_COMMIT_INTERVAL_MS later); then, on the commit thread, every file with new
 * bytes is fdatasync'ed once (and, for a new file, its directories fsync'ed) before one
 * catalog transaction indexes all of them. A failed commit keeps its items for the next
 * one. Retention runs on the same thread after a commit, so one thread at a time writes
 * the catalog. The thread logs its own failures. */
#ifndef KP_REC_COMMIT_H
#define KP_REC_COMMIT_H

#include "catalog.h"
#include "retention.h"

#define REC_COMMIT_INTERVAL_MS 250
#define REC_COMMIT_MAX_ITEMS   65536 /* backlog while the disk is slower than the cameras */
#define REC_QUOTA_IDLE_MS      5000  /* after a quota pass that could delete nothing */

enum rec_item_kind { REC_ITEM_FRAGMENT, REC_ITEM_CLOSE, REC_ITEM_EVENT };

struct rec_commit_item {
	enum rec_item_kind kind;
	int fd;             /* fragment: a duplicate of the file, owned by the committer once pushed */
	unsigned sync_dirs; /* the file's first fragment: its directories are new */
	struct cat_recording rec;
	struct cat_fragment frag;
	struct cat_event event;
};

struct rec_committer;

int rec_commit_new(struct cat *cat, int data_dirfd, struct rec_committer **ret);
/* Commits what is pending, stops the thread and frees everything. */
void rec_commit_free(struct rec_committer *c);

/* Queues a copy of it; -ENOBUFS when REC_COMMIT_MAX_ITEMS wait already. */
int rec_commit_push(struct rec_committer *c, const struct rec_commit_item *it);

/* The disk quota (0: none): after every commit that leaves the indexed bytes above it,
 * a retention pass removes the oldest recordings, so it holds within a commit interval
 * (when a pass finds nothing to delete, the next waits REC_QUOTA_IDLE_MS). */
void rec_commit_quota(struct rec_committer *c, uint64_t max_bytes);

/* Asks for a retention pass after the next commit, with this policy. */
void rec_commit_retention(struct rec_committer *c, const struct rec_retention_policy *p);

#endif
