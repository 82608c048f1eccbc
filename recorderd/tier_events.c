/* Tiering of event JPEGs (tier_events.h): the walk over the events, the slots of the
 * JPEGs being copied, the sidecar and removal after a copy, and the deletes of the
 * objects whose sidecars wait in tier-deletes/. */
#include "tier_events.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_events.h"
#include "jobs.h"
#include "kp_checked.h"
#include "kp_time.h"
#include "log.h"
#include "tier.h"
#include "tier_local.h"

struct ev_slot {
	uint64_t seq; /* the revision's, 0: free */
	char id[CAT_EVENT_ID_MAX + 1];
	uint32_t revision;
	char path[CAT_PATH_MAX];
	struct cat_tier row; /* key, size, upload_id of a multipart copy under way */
	int intent;          /* its sidecar without an ETag is written */
	int sent;
	uint32_t attempts;
	uint64_t retry_mono;
};

struct ev_del {
	uint64_t id;             /* REC_TIER_EVENT_ID(n) of this delete, 0: free */
	char name[CAT_PATH_MAX]; /* tier-deletes/<flattened key> without the sidecar suffix */
	struct cat_tier row;
	int sent, seen;
	uint32_t attempts;
	uint64_t retry_mono;
};

static struct {
	struct cat *cat;
	int dirfd;
	int enabled, linked;
	int64_t age_ms;
	int64_t from_ms; /* the walk goes on at (from_ms, from_seq) */
	uint64_t from_seq;
	uint64_t pass_mono; /* when the walk last started from the oldest event */
	struct ev_slot slots[REC_TIER_EV_INFLIGHT];
	struct ev_del dels[REC_TIER_EV_DELETES];
	uint64_t next_del;
	/* metrics */
	uint64_t waiting; /* old enough and still local as of the last look, not in a slot */
	uint64_t deletes_pending;
	uint64_t uploaded, uploaded_bytes, failures, deleted, delete_failures;
} E;

/* The object key of a revision's JPEG: its path with the revision's commit time, so that
 * a revision stored again after a delete (the same id and number) is another object. */
static int object_key(const char *path, int64_t committed_ms, char *out, size_t len)
{
	size_t n = strlen(path);
	if (n < 4 || strcmp(path + n - 4, ".jpg"))
		return -EINVAL;
	int w = snprintf(out, len, "%.*s-%lld.jpg", (int)(n - 4), path, (long long)committed_ms);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

static struct ev_slot *slot_of(uint64_t seq)
{
	for (unsigned i = 0; i < REC_TIER_EV_INFLIGHT; i++)
		if (E.slots[i].seq == seq)
			return &E.slots[i];
	return NULL;
}

void rec_tier_events_open(struct cat *cat, int data_dirfd, int64_t age_ms)
{
	int linked = E.linked;
	uint64_t next_del = E.next_del; /* a late TierDeleted of before a rebuild names no new delete */
	memset(&E, 0, sizeof E);
	E.linked = linked;
	E.next_del = next_del;
	E.cat = cat;
	E.dirfd = data_dirfd;
	E.age_ms = age_ms;
	E.from_ms = INT64_MIN;
	E.pass_mono = kp_mono_ms();
	E.enabled = 1;
}

/* 1 while s's revision is the event's stored one, 0 once it was replaced or deleted,
 * or -errno. */
static int current(const struct ev_slot *s)
{
	struct cat_txn *t;
	struct cat_event_row row;
	int r = cat_begin(E.cat, 0, &t);
	if (r == 0) {
		r = cat_event_get(t, s->id, &row, NULL);
		cat_abort(t);
	}
	return r == -ENOENT ? 0 : r < 0 ? r : row.seq == s->seq;
}

/* s's revision is gone: the sidecar at its path, when it is s's (its key), goes to
 * tier-deletes, so that an object this copy may have stored is deleted; the slot frees. A
 * sidecar of another key there is a newer revision's at the same path (an event deleted
 * and published again), left alone. */
static void drop_gone(struct ev_slot *s)
{
	int r = rec_tier_sidecar_retire(E.dirfd, s->path, s->row.key);
	if (r < 0)
		kp_err("event %s: retiring the sidecar of a gone revision failed: %s", s->id, strerror(-r));
	memset(s, 0, sizeof *s);
}

static void send_slot(struct ev_slot *s)
{
	int r = current(s);
	if (r == 0) {
		drop_gone(s);
		return;
	}
	/* The intent first (the sidecar without an ETag): a revision deleted from here on has
	 * it retired with its JPEG, so that an object stored meanwhile is deleted, crash or
	 * not. */
	if (r == 1 && !s->intent) {
		r = rec_tier_sidecar_write(E.dirfd, s->path, &s->row);
		s->intent = r == 0;
	}
	if (r < 0) {
		kp_warn("event %s: %s cannot be handed over for tiering: %s", s->id, s->path, strerror(-r));
		s->retry_mono = kp_mono_ms() + rec_tier_retry_wait(++s->attempts);
		return;
	}
	int fd = openat(E.dirfd, s->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT) { /* the revision went meanwhile */
			drop_gone(s);
			return;
		}
		kp_warn("event %s: %s cannot be opened for tiering: %s", s->id, s->path, strerror(e));
		s->retry_mono = kp_mono_ms() + rec_tier_retry_wait(++s->attempts);
		return;
	}
	r = rec_tier_send_upload(REC_TIER_EVENT_ID(s->seq), &s->row, fd);
	close(fd);
	if (r == 0)
		s->sent = 1;
	else if (r != -ENOTCONN)
		kp_warn("event %s: handing its JPEG to tierd failed: %s", s->id, strerror(-r));
}

struct walk {
	struct cat_txn *t;
	int64_t cutoff_ms;
	unsigned visited;
	int at_end;  /* reached events too young, or the last one */
	int blocked; /* a JPEG to copy found no free slot: the walk goes on there next time */
	int64_t next_ms;
	uint64_t next_seq;
	uint64_t waiting;
};

/* Whether the revision (seq) of event id has a JPEG to copy: still local, no sidecar but
 * its own intent, not being copied (1: *ret_path, *row and *ret_size set). A JPEG left
 * beside its whole sidecar by a crash is removed here; a sidecar of another key (a gone
 * revision's at the same path) is retired. */
static int local_jpeg(struct walk *k, uint64_t seq, const char *id, char *ret_path, struct cat_event_row *row,
		      uint64_t *ret_size)
{
	if (cat_event_get(k->t, id, row, NULL) < 0 || row->seq != seq || !row->jpeg_len || slot_of(seq))
		return 0;
	struct stat st;
	char key[CAT_PATH_MAX];
	rec_event_jpeg_path(id, row->revision, ret_path, CAT_PATH_MAX);
	for (unsigned i = 0; i < REC_TIER_EV_INFLIGHT; i++)
		if (E.slots[i].seq && !strcmp(E.slots[i].path, ret_path))
			return 0; /* a gone revision's at the same path still has its slot */
	if (fstatat(E.dirfd, ret_path, &st, 0) < 0 || object_key(ret_path, row->committed_ms, key, sizeof key) < 0)
		return 0; /* in the store already (or lost: keeppeekctl check says so) */
	struct cat_tier side;
	if (rec_tier_sidecar_read(E.dirfd, ret_path, &side) == 0) {
		if (side.etag[0] && !strcmp(side.key, key)) {
			/* Copied, and the JPEG's removal was cut short by a crash. */
			unlinkat(E.dirfd, ret_path, 0);
			return 0;
		}
		if (strcmp(side.key, key)) /* a gone revision's whose retirement a crash cut short */
			rec_tier_sidecar_retire(E.dirfd, ret_path, side.key);
	}
	*ret_size = (uint64_t)st.st_size;
	return 1;
}

static int visit(void *arg, int64_t start_ms, uint64_t seq, const char *id)
{
	struct walk *k = arg;
	if (start_ms > k->cutoff_ms) {
		k->at_end = 1;
		return 1;
	}
	if (++k->visited > REC_TIER_EV_LOOK)
		return 1;
	char path[CAT_PATH_MAX];
	struct cat_event_row row;
	uint64_t size;
	if (local_jpeg(k, seq, id, path, &row, &size)) {
		struct ev_slot *s = slot_of(0);
		if (!s) {
			k->blocked = 1;
			k->waiting++;
			return 0;
		}
		if (k->blocked) {
			k->waiting++;
			return 0;
		}
		memset(s, 0, sizeof *s);
		if (object_key(path, row.committed_ms, s->row.key, sizeof s->row.key) == 0) {
			s->seq = seq;
			snprintf(s->id, sizeof s->id, "%s", id);
			s->revision = row.revision;
			snprintf(s->path, sizeof s->path, "%s", path);
			s->row.size = size;
		}
	}
	if (!k->blocked) {
		k->next_ms = start_ms;
		k->next_seq = seq + 1;
	}
	return 0;
}

static void walk(void)
{
	struct walk k = {.next_ms = E.from_ms, .next_seq = E.from_seq};
	if (kp_sub_i64(kp_wall_ms(), E.age_ms, &k.cutoff_ms) < 0)
		return;
	int r = cat_begin(E.cat, 0, &k.t);
	if (r == 0) {
		r = cat_each_event_from(k.t, E.from_ms, E.from_seq, visit, &k);
		cat_abort(k.t);
	}
	if (r < 0) {
		kp_err("tiering: looking for event JPEGs to copy failed: %s", strerror(-r));
		return;
	}
	E.from_ms = k.next_ms;
	E.from_seq = k.next_seq;
	E.waiting = k.waiting;
	if ((r == 0 || k.at_end) && !k.blocked && kp_mono_ms() - E.pass_mono >= REC_TIER_EV_PASS_MS) {
		/* From the oldest again: copies that failed, JPEGs a crash left beside their
		 * sidecars. */
		E.from_ms = INT64_MIN;
		E.from_seq = 0;
		E.pass_mono = kp_mono_ms();
	}
}

void rec_tier_events_stored(int64_t start_ms)
{
	if (E.enabled && start_ms < E.from_ms) {
		E.from_ms = start_ms;
		E.from_seq = 0;
	}
}

static struct ev_del *del_of(uint64_t id)
{
	for (unsigned i = 0; i < REC_TIER_EV_DELETES; i++)
		if (E.dels[i].id == id)
			return &E.dels[i];
	return NULL;
}

static struct ev_del *del_named(const char *name)
{
	for (unsigned i = 0; i < REC_TIER_EV_DELETES; i++)
		if (E.dels[i].id && !strcmp(E.dels[i].name, name))
			return &E.dels[i];
	return NULL;
}

/* Takes the sidecars in tier-deletes into the free delete slots. */
static void look_deletes(void)
{
	for (unsigned i = 0; i < REC_TIER_EV_DELETES; i++)
		E.dels[i].seen = 0;
	int fd = openat(E.dirfd, REC_TIER_DELETES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		E.deletes_pending = 0;
		return;
	}
	uint64_t pending = 0;
	struct dirent *e;
	size_t suffix = strlen(REC_TIER_SIDECAR);
	while ((e = readdir(d)) != NULL && pending < REC_TIER_SCAN_ROWS) {
		size_t n = strlen(e->d_name);
		if (e->d_name[0] == '.' || n <= suffix || strcmp(e->d_name + n - suffix, REC_TIER_SIDECAR))
			continue;
		pending++;
		char name[CAT_PATH_MAX];
		snprintf(name, sizeof name, "%s/%.*s", REC_TIER_DELETES_DIR, (int)(n - suffix), e->d_name);
		struct ev_del *have = del_named(name);
		if (have) {
			have->seen = 1;
			continue;
		}
		struct ev_del *x = del_of(0);
		if (!x)
			continue;
		memset(x, 0, sizeof *x);
		if (rec_tier_sidecar_read(E.dirfd, name, &x->row) < 0) {
			kp_warn("%s%s: not a sidecar; removed", name, REC_TIER_SIDECAR);
			char side[CAT_PATH_MAX + 8];
			snprintf(side, sizeof side, "%s%s", name, REC_TIER_SIDECAR);
			unlinkat(E.dirfd, side, 0);
			continue;
		}
		x->id = REC_TIER_EVENT_ID(++E.next_del);
		snprintf(x->name, sizeof x->name, "%s", name);
		x->seen = 1;
	}
	closedir(d);
	E.deletes_pending = pending;
	for (unsigned i = 0; i < REC_TIER_EV_DELETES; i++)
		if (E.dels[i].id && !E.dels[i].seen && !E.dels[i].sent)
			memset(&E.dels[i], 0, sizeof E.dels[i]); /* gone from the directory */
}

static void send_delete(struct ev_del *x)
{
	int r = rec_tier_send_delete(x->id, &x->row);
	if (r == 0)
		x->sent = 1;
	else if (r != -ENOTCONN)
		kp_warn("asking tierd to delete %s failed: %s", x->row.key, strerror(-r));
}

void rec_tier_events_look(void)
{
	if (!E.enabled)
		return;
	walk();
	look_deletes();
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < REC_TIER_EV_INFLIGHT && E.linked; i++)
		if (E.slots[i].seq && !E.slots[i].sent && E.slots[i].retry_mono <= now)
			send_slot(&E.slots[i]);
	for (unsigned i = 0; i < REC_TIER_EV_DELETES && E.linked; i++)
		if (E.dels[i].id && !E.dels[i].sent && E.dels[i].retry_mono <= now)
			send_delete(&E.dels[i]);
}

/* The copy of s is in the store: its sidecar, then the JPEG goes. A revision replaced or
 * deleted meanwhile (on the commit thread) had its JPEG removed without a sidecar to
 * retire: the sidecar written here is retired instead. */
static void moved(struct ev_slot *s, const char *etag)
{
	int r = current(s);
	if (r == 0) {
		drop_gone(s);
		return;
	}
	if (r == 1) {
		snprintf(s->row.etag, sizeof s->row.etag, "%s", etag);
		r = rec_tier_sidecar_write(E.dirfd, s->path, &s->row);
	}
	if (r < 0) {
		s->row.etag[0] = '\0';
		kp_err("event %s: writing the sidecar of %s failed: %s; its JPEG stays local", s->id, s->path,
		       strerror(-r));
		s->retry_mono = kp_mono_ms() + rec_tier_retry_wait(++s->attempts);
		return;
	}
	/* The revision may have gone while the sidecar was written: its removal retired the
	 * intent, or finds this sidecar, or has not run yet and will. */
	r = current(s);
	if (r == 0) {
		drop_gone(s);
		return;
	}
	if (r == 1 && unlinkat(E.dirfd, s->path, 0) < 0 && errno != ENOENT)
		kp_err("event %s: removing %s after its copy failed: %s (the next pass does)", s->id, s->path,
		       strerror(errno));
	E.uploaded++;
	E.uploaded_bytes += s->row.size;
	kp_info("event %s: its JPEG (%llu bytes) is in the store as %s", s->id, (unsigned long long)s->row.size,
		s->row.key);
	memset(s, 0, sizeof *s);
}

/* The slot a report of tierd's answers (its send done), or NULL for a stale report. */
static struct ev_slot *answered(uint64_t id)
{
	struct ev_slot *s = slot_of(id & ~REC_TIER_EVENT_ID(0));
	if (!s || !s->sent)
		return NULL;
	s->sent = 0;
	return s;
}

static void on_uploaded(const kp_TierUploaded *m)
{
	struct ev_slot *s = answered(m->recording);
	if (!s)
		return;
	if (m->size != s->row.size || strcmp(m->key, s->row.key) != 0) {
		kp_err("event %s: tierd reports %s of %llu bytes, not %s of %llu; copying it again", s->id, m->key,
		       (unsigned long long)m->size, s->row.key, (unsigned long long)s->row.size);
		s->retry_mono = kp_mono_ms() + rec_tier_retry_wait(++s->attempts);
		return;
	}
	moved(s, m->etag);
}

static void on_failed(const kp_TierFailed *m)
{
	struct ev_slot *s = answered(m->recording);
	if (!s)
		return;
	E.failures++;
	if (m->forget_upload)
		s->row.upload_id[0] = '\0';
	uint64_t wait = rec_tier_retry_wait(++s->attempts);
	s->retry_mono = kp_mono_ms() + wait;
	kp_notice("event %s: copying its JPEG failed (%s: %s); trying again in %llu s", s->id, strerror((int)m->error),
		  m->why, (unsigned long long)(wait / 1000));
}

static void on_deleted(const kp_TierDeleted *m)
{
	struct ev_del *x = del_of(m->recording);
	if (!x || !x->sent)
		return;
	x->sent = 0;
	if (m->error) {
		E.delete_failures++;
		uint64_t wait = rec_tier_retry_wait(++x->attempts);
		x->retry_mono = kp_mono_ms() + wait;
		kp_notice("deleting %s from the store failed (%s: %s); trying again in %llu s", x->row.key,
			  strerror((int)m->error), m->why, (unsigned long long)(wait / 1000));
		return;
	}
	char side[CAT_PATH_MAX + 8];
	snprintf(side, sizeof side, "%s%s", x->name, REC_TIER_SIDECAR);
	if (unlinkat(E.dirfd, side, 0) < 0 && errno != ENOENT)
		kp_err("%s: removing it after its object's delete failed: %s", side, strerror(errno));
	E.deleted++;
	kp_info("%s deleted from the store (its event revision is gone)", x->row.key);
	memset(x, 0, sizeof *x);
}

void rec_tier_events_frame(const kp_Envelope *env)
{
	if (!E.enabled)
		return;
	if (env->which_msg == kp_Envelope_tier_progress_tag) {
		struct ev_slot *s = slot_of(env->msg.tier_progress.recording & ~REC_TIER_EVENT_ID(0));
		if (s && s->sent) /* a JPEG over part_size: a retry in this run resumes it */
			snprintf(s->row.upload_id, sizeof s->row.upload_id, "%s", env->msg.tier_progress.upload_id);
	} else if (env->which_msg == kp_Envelope_tier_uploaded_tag) {
		on_uploaded(&env->msg.tier_uploaded);
	} else if (env->which_msg == kp_Envelope_tier_failed_tag) {
		on_failed(&env->msg.tier_failed);
	} else if (env->which_msg == kp_Envelope_tier_deleted_tag) {
		on_deleted(&env->msg.tier_deleted);
	}
}

void rec_tier_events_link(int up)
{
	E.linked = up;
	for (unsigned i = 0; i < REC_TIER_EV_INFLIGHT; i++)
		E.slots[i].sent = 0;
	for (unsigned i = 0; i < REC_TIER_EV_DELETES; i++)
		E.dels[i].sent = 0;
}

void rec_tier_events_metrics(struct jbuf *b)
{
	if (!E.enabled)
		return;
	uint64_t queued = E.waiting;
	for (unsigned i = 0; i < REC_TIER_EV_INFLIGHT; i++)
		queued += E.slots[i].seq != 0;
	jb_printf(
	    b,
	    "# HELP keeppeek_tier_event_jpegs_queued Event JPEGs old enough to move to the store and still "
	    "local (as of the last look).\n"
	    "# TYPE keeppeek_tier_event_jpegs_queued gauge\n"
	    "keeppeek_tier_event_jpegs_queued %llu\n"
	    "# HELP keeppeek_tier_event_jpegs_uploaded_total Event JPEGs copied to the store, verified and "
	    "removed locally.\n"
	    "# TYPE keeppeek_tier_event_jpegs_uploaded_total counter\n"
	    "keeppeek_tier_event_jpegs_uploaded_total %llu\n"
	    "# HELP keeppeek_tier_event_jpegs_uploaded_bytes_total Bytes of those.\n"
	    "# TYPE keeppeek_tier_event_jpegs_uploaded_bytes_total counter\n"
	    "keeppeek_tier_event_jpegs_uploaded_bytes_total %llu\n"
	    "# HELP keeppeek_tier_event_jpegs_failures_total Copies of event JPEGs that failed (each is retried).\n"
	    "# TYPE keeppeek_tier_event_jpegs_failures_total counter\n"
	    "keeppeek_tier_event_jpegs_failures_total %llu\n"
	    "# HELP keeppeek_tier_event_jpegs_deletes_pending Objects of deleted event JPEGs still to delete.\n"
	    "# TYPE keeppeek_tier_event_jpegs_deletes_pending gauge\n"
	    "keeppeek_tier_event_jpegs_deletes_pending %llu\n"
	    "# HELP keeppeek_tier_event_jpegs_deleted_total Objects of deleted event JPEGs deleted from the store.\n"
	    "# TYPE keeppeek_tier_event_jpegs_deleted_total counter\n"
	    "keeppeek_tier_event_jpegs_deleted_total %llu\n"
	    "# HELP keeppeek_tier_event_jpegs_delete_failures_total Deletes of event JPEGs' objects that failed "
	    "(each is retried).\n"
	    "# TYPE keeppeek_tier_event_jpegs_delete_failures_total counter\n"
	    "keeppeek_tier_event_jpegs_delete_failures_total %llu\n",
	    (unsigned long long)queued, (unsigned long long)E.uploaded, (unsigned long long)E.uploaded_bytes,
	    (unsigned long long)E.failures, (unsigned long long)E.deletes_pending, (unsigned long long)E.deleted,
	    (unsigned long long)E.delete_failures);
}

void rec_tier_events_status(struct jbuf *b, int json)
{
	if (!E.enabled)
		return;
	uint64_t copying = 0;
	for (unsigned i = 0; i < REC_TIER_EV_INFLIGHT; i++)
		copying += E.slots[i].seq != 0;
	if (json)
		jb_printf(b,
			  ",\"event_jpegs\":{\"age_secs\":%lld,\"copying\":%llu,\"waiting\":%llu,\"uploaded\":%llu,"
			  "\"uploaded_bytes\":%llu,\"failures\":%llu,\"deletes_pending\":%llu,\"deleted\":%llu,"
			  "\"delete_failures\":%llu}",
			  (long long)(E.age_ms / 1000), (unsigned long long)copying, (unsigned long long)E.waiting,
			  (unsigned long long)E.uploaded, (unsigned long long)E.uploaded_bytes,
			  (unsigned long long)E.failures, (unsigned long long)E.deletes_pending,
			  (unsigned long long)E.deleted, (unsigned long long)E.delete_failures);
	else
		jb_printf(b,
			  "event JPEGs: moved once their event is %lld s old; %llu being copied, %llu waiting; since "
			  "recorderd started %llu moved (%llu bytes), %llu copies failed; %llu objects of deleted ones "
			  "to delete, %llu deleted, %llu deletes failed\n",
			  (long long)(E.age_ms / 1000), (unsigned long long)copying, (unsigned long long)E.waiting,
			  (unsigned long long)E.uploaded, (unsigned long long)E.uploaded_bytes,
			  (unsigned long long)E.failures, (unsigned long long)E.deletes_pending,
			  (unsigned long long)E.deleted, (unsigned long long)E.delete_failures);
}
