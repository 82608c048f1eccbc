/* Tiering, recorderd's half (tier.h): the slots of the recordings being copied, the
 * look for closed recordings old enough, the journal rows pushed to the group commit,
 * the deletes of deleted recordings' objects, and tierd's reports. Everything runs on
 * the loop thread. */
#include "tier.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kp_checked.h"
#include "kp_time.h"
#include "log.h"
#include "tier_cache.h"
#include "tier_events.h"
#include "tier_local.h"

struct slot {
	uint64_t id;
	struct cat_tier row;
	int64_t eligible_ms; /* wall time it became old enough */
	int sent;            /* handed to tierd over the current link */
	int done;            /* copied: kept until a look finds its uploaded row committed */
	uint64_t done_mono;  /* ... or REC_TIER_DONE_KEEP_MS passed (its recording deleted meanwhile) */
	uint64_t retry_mono; /* not before (after a failure) */
};

/* The delete of a deleted recording's object (a row of the catalog's deletes). */
struct del {
	uint64_t id;
	struct cat_tier row;
	int sent, done, seen;
	uint64_t done_mono;
	uint64_t retry_mono;
	uint32_t attempts;
};

static struct {
	struct kp_worker *w;
	struct cat *cat;
	struct rec_committer *commit;
	int dirfd;
	int enabled, linked;
	int64_t after_ms;
	int64_t keep_local_ms;
	uv_timer_t timer;
	struct slot slots[REC_TIER_INFLIGHT];
	unsigned n;
	uint64_t scan_from; /* the oldest recording not known to be copied */
	/* metrics */
	uint64_t waiting;        /* old enough, no slot yet (as of the last look) */
	int64_t oldest_ms;       /* eligible_ms of the oldest waiting or in a slot (0: none) */
	uint64_t uploaded_bytes; /* since start */
	uint64_t uploaded;
	uint64_t failures;
	uint64_t journal_dropped;
	struct del dels[REC_TIER_DELETES];
	unsigned ndels;
	uint64_t deletes_pending; /* rows in the deletes as of the last look (at most REC_TIER_SCAN_ROWS) */
	uint64_t deleted;
	uint64_t delete_failures;
	uint64_t strip_from; /* the oldest journal row not stripped yet */
	uint64_t remote;     /* since start: marked remote, files stripped, strips failed */
	uint64_t stripped;
	uint64_t strip_failures;
} T;

static struct slot *slot_of(uint64_t id)
{
	for (unsigned i = 0; i < T.n; i++)
		if (T.slots[i].id == id)
			return &T.slots[i];
	return NULL;
}

static void slot_free(struct slot *s)
{
	*s = T.slots[--T.n];
}

/* The row goes into the next group commit; a full commit queue drops it (logged): the
 * journal then lags, and a restart resumes from its older row. */
static void journal(uint64_t id, const struct cat_tier *row)
{
	struct cat_tier *copy = malloc(sizeof *copy);
	if (!copy) {
		T.journal_dropped++;
		kp_err("recording %llu: tier journal row not written: out of memory", (unsigned long long)id);
		return;
	}
	*copy = *row;
	struct rec_commit_item it = {.kind = REC_ITEM_TIER, .fd = -1, .rec.id = id, .tier = copy};
	int r = rec_commit_push(T.commit, &it);
	if (r < 0) {
		free(copy);
		T.journal_dropped++;
		kp_err("recording %llu: tier journal row not written: %s", (unsigned long long)id, strerror(-r));
	}
}

static void send_slot(struct slot *s)
{
	int fd = openat(T.dirfd, s->row.key, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		kp_warn("recording %llu: %s cannot be opened for tiering: %s%s", (unsigned long long)s->id, s->row.key,
			strerror(e), e == ENOENT ? "; it was deleted meanwhile" : "");
		if (e == ENOENT)
			slot_free(s);
		else
			s->retry_mono = kp_mono_ms() + REC_TIER_RETRY_MIN_MS;
		return;
	}
	int r = rec_tier_send_upload(s->id, &s->row, fd);
	close(fd);
	if (r == 0)
		s->sent = 1;
	else if (r != -ENOTCONN)
		kp_warn("recording %llu: handing it to tierd failed: %s", (unsigned long long)s->id, strerror(-r));
}

uint64_t rec_tier_retry_wait(uint32_t attempts)
{
	unsigned shift = attempts > 9 ? 9 : attempts - 1;
	uint64_t wait = (uint64_t)REC_TIER_RETRY_MIN_MS << shift;
	return wait > REC_TIER_RETRY_MAX_MS ? REC_TIER_RETRY_MAX_MS : wait;
}

int rec_tier_send_upload(uint64_t id, const struct cat_tier *row, int fd)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_upload_tag;
	kp_TierUpload *u = &env.msg.tier_upload;
	u->recording = id;
	snprintf(u->key, sizeof u->key, "%s", row->key);
	u->size = row->size;
	snprintf(u->upload_id, sizeof u->upload_id, "%s", row->upload_id);
	return kp_worker_send_peer_fds(T.w, kp_Peer_PEER_TIER, &env, NULL, 0, &fd, 1);
}

int rec_tier_send_delete(uint64_t id, const struct cat_tier *row)
{
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_delete_tag;
	kp_TierDelete *m = &env.msg.tier_delete;
	m->recording = id;
	snprintf(m->key, sizeof m->key, "%s", row->key);
	snprintf(m->upload_id, sizeof m->upload_id, "%s", row->upload_id);
	return kp_worker_send_peer(T.w, kp_Peer_PEER_TIER, &env, NULL, 0);
}

static struct del *del_of(uint64_t id)
{
	for (unsigned i = 0; i < T.ndels; i++)
		if (T.dels[i].id == id)
			return &T.dels[i];
	return NULL;
}

static void send_delete(struct del *d)
{
	int r = rec_tier_send_delete(d->id, &d->row);
	if (r == 0)
		d->sent = 1;
	else if (r != -ENOTCONN)
		kp_warn("recording %llu: asking tierd to delete %s failed: %s", (unsigned long long)d->id, d->row.key,
			strerror(-r));
}

struct del_look {
	unsigned visited;
};

/* A row of the deletes: taken when there is room and no copy of that recording is under
 * way (tierd takes jobs in order, but a copy still in a slot may be handed over again). */
static int visit_delete(void *arg, uint64_t id, const struct cat_tier *row)
{
	struct del_look *l = arg;
	if (++l->visited > REC_TIER_SCAN_ROWS)
		return 1;
	struct del *d = del_of(id);
	if (d) {
		d->seen = 1;
		return 0;
	}
	if (slot_of(id) || T.ndels == REC_TIER_DELETES)
		return 0;
	d = &T.dels[T.ndels++];
	memset(d, 0, sizeof *d);
	d->id = id;
	d->row = *row;
	d->seen = 1;
	return 0;
}

/* Looks at the deletes: a delete reported done leaves its slot once its row is gone (or
 * after REC_TIER_DONE_KEEP_MS); new rows fill the free slots. */
static void look_deletes(void)
{
	struct del_look l = {0};
	for (unsigned i = 0; i < T.ndels; i++)
		T.dels[i].seen = 0;
	struct cat_txn *t;
	int r = cat_begin(T.cat, 0, &t);
	if (r == 0) {
		r = cat_each_tier_delete(t, 0, visit_delete, &l);
		cat_abort(t);
	}
	if (r < 0) {
		kp_err("tiering: looking for objects to delete failed: %s", strerror(-r));
		return;
	}
	T.deletes_pending = l.visited > REC_TIER_SCAN_ROWS ? REC_TIER_SCAN_ROWS : l.visited;
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < T.ndels; i++) {
		struct del *d = &T.dels[i];
		if (d->done && (!d->seen || now - d->done_mono > REC_TIER_DONE_KEEP_MS))
			T.dels[i--] = T.dels[--T.ndels];
	}
}

static void send_due(void)
{
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < T.n && T.linked; i++) {
		struct slot *s = &T.slots[i];
		unsigned before = T.n;
		if (!s->sent && !s->done && s->retry_mono <= now)
			send_slot(s);
		if (T.n < before)
			i--; /* slot i now holds another one */
	}
	for (unsigned i = 0; i < T.ndels && T.linked; i++) {
		struct del *d = &T.dels[i];
		if (!d->sent && !d->done && d->retry_mono <= now)
			send_delete(d);
	}
}

struct scan {
	struct cat_txn *t;
	int64_t now_ms;
	unsigned visited;
	uint64_t first_open; /* the first recording not copied yet (0: none seen) */
	uint64_t last_id;
	uint64_t waiting;
	int64_t oldest_ms;
};

static void note_pending(struct scan *sc, uint64_t id, int64_t eligible_ms)
{
	if (!sc->first_open)
		sc->first_open = id;
	if (!sc->oldest_ms || eligible_ms < sc->oldest_ms)
		sc->oldest_ms = eligible_ms;
}

static int visit(void *arg, const struct cat_recording *rec)
{
	struct scan *sc = arg;
	if (++sc->visited > REC_TIER_SCAN_ROWS)
		return 1;
	sc->last_id = rec->id;
	struct cat_tier row;
	int r = cat_tier_get(sc->t, rec->id, &row);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == 0 && row.state >= CAT_TIER_UPLOADED) {
		struct slot *s = slot_of(rec->id);
		if (s && s->done)
			slot_free(s);
		return 0;
	}
	int64_t eligible_ms;
	if (rec->open || kp_add_i64(rec->end_ms, T.after_ms, &eligible_ms) < 0 || eligible_ms > sc->now_ms) {
		if (!sc->first_open)
			sc->first_open = rec->id;
		/* Ids go in creation order: a closed recording not old enough ends the look (a
		 * later id that ended earlier, on another stream, waits at most one rollover more),
		 * so that a look does not walk every recording of the last `after`. An open one,
		 * which may be long, does not. */
		return rec->open ? 0 : 1;
	}
	struct slot *have = slot_of(rec->id);
	if (have && have->done)
		return 0; /* its uploaded row is not committed yet */
	note_pending(sc, rec->id, eligible_ms);
	if (have)
		return 0;
	if (T.n == REC_TIER_INFLIGHT) {
		sc->waiting++;
		return 0;
	}
	struct slot *s = &T.slots[T.n++];
	memset(s, 0, sizeof *s);
	s->id = rec->id;
	s->eligible_ms = eligible_ms;
	if (r == 0) { /* queued or uploading before a restart: resumed with its upload id */
		s->row = row;
		kp_info("recording %llu: resuming its copy to the store (%s, %u of %u parts)",
			(unsigned long long)rec->id, row.upload_id[0] ? "upload under way" : "queued",
			(unsigned)row.parts_done, (unsigned)row.parts);
		return 0;
	}
	s->row.state = CAT_TIER_QUEUED;
	s->row.size = rec->bytes;
	s->row.queued_ms = sc->now_ms;
	snprintf(s->row.key, sizeof s->row.key, "%s", rec->path);
	journal(rec->id, &s->row);
	return 0;
}

static void scan(void)
{
	struct scan sc = {.now_ms = kp_wall_ms()};
	int r = cat_begin(T.cat, 0, &sc.t);
	if (r == 0) {
		r = cat_each_recording_from(sc.t, T.scan_from, visit, &sc);
		cat_abort(sc.t);
	}
	if (r < 0 && r != 1) {
		kp_err("tiering: looking for recordings to copy failed: %s", strerror(-r));
		return;
	}
	/* The next look starts at the oldest recording not copied yet, or past all of them. */
	if (sc.first_open)
		T.scan_from = sc.first_open;
	else if (sc.last_id)
		T.scan_from = sc.last_id + 1;
	T.waiting = sc.waiting;
	T.oldest_ms = sc.oldest_ms;
}

struct strip_look {
	struct cat_txn *t;
	int64_t now_ms;
	unsigned visited, marked;
	uint64_t first_open, last_id;
	uint64_t strip[REC_TIER_STRIPS];
	unsigned nstrip;
};

/* A journal row past its copy: uploaded and kept locally keep_local long, it becomes
 * remote (its sidecar written first); remote, its file is stripped (after the look's
 * transaction). Copies end in about id order, so a row copied but not old enough ends
 * the look; one not copied yet is passed over. */
static int visit_strip(void *arg, uint64_t id, const struct cat_tier *row)
{
	struct strip_look *l = arg;
	if (++l->visited > REC_TIER_SCAN_ROWS)
		return 1;
	l->last_id = id;
	if (row->state == CAT_TIER_STRIPPED)
		return 0;
	if (!l->first_open)
		l->first_open = id;
	if (row->state < CAT_TIER_UPLOADED)
		return 0; /* not copied yet (a copy that keeps failing holds up no other) */
	int64_t due;
	if (kp_add_i64(row->done_ms, T.keep_local_ms, &due) < 0 || due > l->now_ms)
		return 1;
	if (row->state == CAT_TIER_REMOTE) {
		if (l->nstrip < REC_TIER_STRIPS && !slot_of(id))
			l->strip[l->nstrip++] = id;
		return l->nstrip == REC_TIER_STRIPS;
	}
	struct cat_recording rec;
	int r = cat_get_recording(l->t, id, &rec);
	if (r == -ENOENT)
		return 0; /* deleted: its row moves to the deletes */
	if (r < 0)
		return r;
	r = rec_tier_sidecar_write(T.dirfd, rec.path, row);
	if (r < 0) {
		T.strip_failures++;
		kp_err("recording %llu: writing %s%s failed: %s; its local file stays whole", (unsigned long long)id,
		       rec.path, REC_TIER_SIDECAR, strerror(-r));
		return 1;
	}
	struct cat_tier next = *row;
	next.state = CAT_TIER_REMOTE;
	journal(id, &next);
	T.remote++;
	return ++l->marked == REC_TIER_STRIPS;
}

static void strip_one(uint64_t id)
{
	struct cat_txn *t;
	struct cat_recording rec;
	struct cat_tier row;
	int r = cat_begin(T.cat, 0, &t);
	if (r == 0) {
		r = cat_get_recording(t, id, &rec);
		if (r == 0)
			r = cat_tier_get(t, id, &row);
		cat_abort(t);
	}
	if (r == 0 && (!(rec.flags & CAT_REC_REMOTE) || row.state != CAT_TIER_REMOTE))
		return; /* changed meanwhile */
	if (r == 0)
		r = rec_tier_strip(T.dirfd, T.cat, &rec);
	if (r == -ENOENT)
		return; /* deleted meanwhile */
	if (r < 0) {
		T.strip_failures++;
		kp_err("recording %llu: stripping %s to its headers failed: %s; tried again", (unsigned long long)id,
		       rec.path, strerror(-r));
		return;
	}
	row.state = CAT_TIER_STRIPPED;
	journal(id, &row);
	T.stripped++;
	kp_info("recording %llu: %s now holds its headers only; its samples are read from the store",
		(unsigned long long)id, rec.path);
}

static void look_strips(void)
{
	struct strip_look l = {.now_ms = kp_wall_ms()};
	int r = cat_begin(T.cat, 0, &l.t);
	if (r == 0) {
		r = cat_each_tier(l.t, T.strip_from, visit_strip, &l);
		cat_abort(l.t);
	}
	if (r < 0) {
		kp_err("tiering: looking for copied recordings to strip failed: %s", strerror(-r));
		return;
	}
	/* The next look starts at the oldest row not stripped, or past all of them. */
	if (l.first_open)
		T.strip_from = l.first_open;
	else if (l.last_id)
		T.strip_from = l.last_id + 1;
	for (unsigned i = 0; i < l.nstrip; i++)
		strip_one(l.strip[i]);
}

static void on_timer(uv_timer_t *t)
{
	(void)t;
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < T.n; i++)
		if (T.slots[i].done && now - T.slots[i].done_mono > REC_TIER_DONE_KEEP_MS)
			slot_free(&T.slots[i--]);
	scan();
	look_strips();
	look_deletes();
	send_due();
	rec_tier_events_look();
}

static int send_fetch(const kp_Envelope *env, int fd)
{
	return kp_worker_send_peer_fds(T.w, kp_Peer_PEER_TIER, env, NULL, 0, &fd, 1);
}

void rec_tier_open(struct kp_worker *w, struct cat *cat, struct rec_committer *commit, int data_dirfd)
{
	const kp_WorkerConfig *wc = kp_worker_config(w);
	if (!wc->has_tier || T.enabled)
		return;
	int linked = T.linked;
	memset(&T, 0, sizeof T);
	T.linked = linked;
	T.w = w;
	T.cat = cat;
	T.commit = commit;
	T.dirfd = data_dirfd;
	T.after_ms = (int64_t)wc->tier.after_secs * 1000;
	T.keep_local_ms = (int64_t)wc->tier.keep_local_secs * 1000;
	T.scan_from = 0;
	T.enabled = 1;
	int64_t jpeg_age_ms;
	if (kp_add_i64(T.after_ms, T.keep_local_ms, &jpeg_age_ms) < 0)
		jpeg_age_ms = INT64_MAX;
	rec_tier_events_open(cat, data_dirfd, jpeg_age_ms);
	if (rec_tier_cache_open(kp_worker_loop(w), cat, data_dirfd, (uint64_t)wc->tier.cache_mib * 1024 * 1024,
				send_fetch) < 0)
		kp_err("tiering: the read cache is off: recordings whose media is in the store cannot be played");
	uv_timer_init(kp_worker_loop(w), &T.timer);
	uv_timer_start(&T.timer, on_timer, REC_TIER_SCAN_MS, REC_TIER_SCAN_MS);
	kp_info("tiering: closed recordings older than %u s are copied to the store", (unsigned)wc->tier.after_secs);
}

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

void rec_tier_close(void)
{
	if (!T.enabled)
		return;
	uv_close((uv_handle_t *)&T.timer, on_closed);
	rec_tier_cache_close();
	T.enabled = 0;
	T.n = 0;
	T.ndels = 0;
}

void rec_tier_link(kp_Peer peer, int up)
{
	if (peer != kp_Peer_PEER_TIER)
		return;
	T.linked = up;
	rec_tier_cache_link(up);
	rec_tier_events_link(up);
	for (unsigned i = 0; i < T.n; i++)
		T.slots[i].sent = 0; /* tierd dropped what it had: sent again from the slot */
	for (unsigned i = 0; i < T.ndels; i++)
		T.dels[i].sent = 0;
	if (up && T.enabled)
		send_due();
}

static void on_progress(const kp_TierProgress *m)
{
	struct slot *s = slot_of(m->recording);
	if (!s || !s->sent || s->done)
		return;
	s->row.state = CAT_TIER_UPLOADING;
	snprintf(s->row.upload_id, sizeof s->row.upload_id, "%s", m->upload_id);
	s->row.parts_done = m->parts_done;
	s->row.parts = m->parts;
	journal(s->id, &s->row);
}

static void on_uploaded(const kp_TierUploaded *m)
{
	struct slot *s = slot_of(m->recording);
	if (!s || !s->sent || s->done)
		return;
	if (m->size != s->row.size || strcmp(m->key, s->row.key) != 0) {
		kp_err("recording %llu: tierd reports %s of %llu bytes, not %s of %llu; copying it again",
		       (unsigned long long)s->id, m->key, (unsigned long long)m->size, s->row.key,
		       (unsigned long long)s->row.size);
		s->sent = 0;
		s->retry_mono = kp_mono_ms() + REC_TIER_RETRY_MIN_MS;
		return;
	}
	s->row.state = CAT_TIER_UPLOADED;
	s->row.upload_id[0] = '\0';
	s->row.parts_done = s->row.parts;
	s->row.done_ms = kp_wall_ms();
	snprintf(s->row.etag, sizeof s->row.etag, "%s", m->etag);
	journal(s->id, &s->row);
	T.uploaded++;
	T.uploaded_bytes += m->size;
	/* The slot stays until a look finds the row committed (the next group commit, within
	 * REC_COMMIT_INTERVAL_MS): a look before would take the journal's older row for a
	 * copy still to make. */
	s->done = 1;
	s->done_mono = kp_mono_ms();
	s->sent = 0;
	uv_timer_start(&T.timer, on_timer, REC_COMMIT_INTERVAL_MS * 2, REC_TIER_SCAN_MS);
}

static void on_failed(const kp_TierFailed *m)
{
	struct slot *s = slot_of(m->recording);
	if (!s || !s->sent || s->done)
		return;
	T.failures++;
	s->row.attempts++;
	if (m->forget_upload) {
		s->row.upload_id[0] = '\0';
		s->row.parts_done = 0;
		s->row.state = CAT_TIER_QUEUED;
	}
	uint64_t wait = rec_tier_retry_wait(s->row.attempts);
	s->sent = 0;
	s->retry_mono = kp_mono_ms() + wait;
	journal(s->id, &s->row);
	kp_notice("recording %llu: copy %u failed (%s: %s); trying again in %llu s", (unsigned long long)s->id,
		  (unsigned)s->row.attempts, strerror((int)m->error), m->why, (unsigned long long)(wait / 1000));
}

static void on_deleted(const kp_TierDeleted *m)
{
	struct del *d = del_of(m->recording);
	if (!d || !d->sent || d->done)
		return;
	d->sent = 0;
	if (m->error == 0) {
		struct rec_commit_item it = {.kind = REC_ITEM_TIER_DELETED, .fd = -1, .rec.id = d->id};
		int r = rec_commit_push(T.commit, &it);
		if (r < 0) /* the row stays: the object is deleted again (a missing one is success) */
			kp_err("recording %llu: the end of its delete not written: %s", (unsigned long long)d->id,
			       strerror(-r));
		T.deleted++;
		d->done = 1;
		d->done_mono = kp_mono_ms();
		kp_info("recording %llu: %s deleted from the store", (unsigned long long)d->id, d->row.key);
		return;
	}
	T.delete_failures++;
	d->attempts++;
	uint64_t wait = rec_tier_retry_wait(d->attempts);
	d->retry_mono = kp_mono_ms() + wait;
	kp_notice("recording %llu: deleting %s from the store failed (%s: %s); trying again in %llu s",
		  (unsigned long long)d->id, d->row.key, strerror((int)m->error), m->why,
		  (unsigned long long)(wait / 1000));
}

void rec_tier_frame(struct kp_ipc_frame *f)
{
	if (!T.enabled)
		return;
	const kp_Envelope *env = f->env;
	uint64_t id = env->which_msg == kp_Envelope_tier_progress_tag   ? env->msg.tier_progress.recording
		      : env->which_msg == kp_Envelope_tier_uploaded_tag ? env->msg.tier_uploaded.recording
		      : env->which_msg == kp_Envelope_tier_failed_tag   ? env->msg.tier_failed.recording
		      : env->which_msg == kp_Envelope_tier_deleted_tag  ? env->msg.tier_deleted.recording
									: 0;
	if (REC_TIER_IS_EVENT(id)) {
		rec_tier_events_frame(env);
		return;
	}
	switch (f->env->which_msg) {
	case kp_Envelope_tier_progress_tag:
		on_progress(&f->env->msg.tier_progress);
		break;
	case kp_Envelope_tier_uploaded_tag:
		on_uploaded(&f->env->msg.tier_uploaded);
		break;
	case kp_Envelope_tier_failed_tag:
		on_failed(&f->env->msg.tier_failed);
		break;
	case kp_Envelope_tier_deleted_tag:
		on_deleted(&f->env->msg.tier_deleted);
		break;
	case kp_Envelope_tier_fetched_tag:
		rec_tier_cache_fetched(&f->env->msg.tier_fetched);
		break;
	default:
		break;
	}
}

void rec_tier_metrics(struct jbuf *b)
{
	if (!T.enabled)
		return;
	int64_t now = kp_wall_ms();
	uint64_t pending = T.waiting;
	for (unsigned i = 0; i < T.n; i++)
		pending += !T.slots[i].done;
	jb_printf(
	    b,
	    "# HELP keeppeek_tier_queued Recordings old enough to be copied to the store and not copied yet.\n"
	    "# TYPE keeppeek_tier_queued gauge\n"
	    "keeppeek_tier_queued %llu\n"
	    "# HELP keeppeek_tier_uploaded_bytes_total Bytes of recordings copied to the store and verified.\n"
	    "# TYPE keeppeek_tier_uploaded_bytes_total counter\n"
	    "keeppeek_tier_uploaded_bytes_total %llu\n"
	    "# HELP keeppeek_tier_uploaded_total Recordings copied to the store and verified.\n"
	    "# TYPE keeppeek_tier_uploaded_total counter\n"
	    "keeppeek_tier_uploaded_total %llu\n"
	    "# HELP keeppeek_tier_failures_total Copies to the store that failed (each is retried).\n"
	    "# TYPE keeppeek_tier_failures_total counter\n"
	    "keeppeek_tier_failures_total %llu\n"
	    "# HELP keeppeek_tier_oldest_pending_seconds Time the oldest recording waiting to be copied has been old "
	    "enough.\n"
	    "# TYPE keeppeek_tier_oldest_pending_seconds gauge\n"
	    "keeppeek_tier_oldest_pending_seconds %lld\n"
	    "# HELP keeppeek_tier_deletes_pending Objects of deleted recordings still to delete from the store.\n"
	    "# TYPE keeppeek_tier_deletes_pending gauge\n"
	    "keeppeek_tier_deletes_pending %llu\n"
	    "# HELP keeppeek_tier_deleted_total Objects of deleted recordings deleted from the store.\n"
	    "# TYPE keeppeek_tier_deleted_total counter\n"
	    "keeppeek_tier_deleted_total %llu\n"
	    "# HELP keeppeek_tier_delete_failures_total Deletes from the store that failed (each is retried).\n"
	    "# TYPE keeppeek_tier_delete_failures_total counter\n"
	    "keeppeek_tier_delete_failures_total %llu\n"
	    "# HELP keeppeek_tier_remote_total Recordings marked as kept in the store only (since start).\n"
	    "# TYPE keeppeek_tier_remote_total counter\n"
	    "keeppeek_tier_remote_total %llu\n"
	    "# HELP keeppeek_tier_stripped_total Local files stripped to their headers (since start).\n"
	    "# TYPE keeppeek_tier_stripped_total counter\n"
	    "keeppeek_tier_stripped_total %llu\n"
	    "# HELP keeppeek_tier_strip_failures_total Sidecars or strips that failed (each is retried).\n"
	    "# TYPE keeppeek_tier_strip_failures_total counter\n"
	    "keeppeek_tier_strip_failures_total %llu\n",
	    (unsigned long long)pending, (unsigned long long)T.uploaded_bytes, (unsigned long long)T.uploaded,
	    (unsigned long long)T.failures,
	    (long long)(T.oldest_ms && now > T.oldest_ms ? (now - T.oldest_ms) / 1000 : 0),
	    (unsigned long long)T.deletes_pending, (unsigned long long)T.deleted, (unsigned long long)T.delete_failures,
	    (unsigned long long)T.remote, (unsigned long long)T.stripped, (unsigned long long)T.strip_failures);
	rec_tier_cache_metrics(b);
	rec_tier_events_metrics(b);
}

static const char *state_name(uint32_t state)
{
	return state == CAT_TIER_UPLOADING  ? "uploading"
	       : state == CAT_TIER_UPLOADED ? "uploaded"
	       : state == CAT_TIER_REMOTE   ? "remote"
	       : state == CAT_TIER_STRIPPED ? "stripped"
					    : "queued";
}

/* Seconds until mono (0 when due). */
static unsigned long long secs_until(uint64_t mono, uint64_t now)
{
	return mono > now ? (unsigned long long)((mono - now + 999) / 1000) : 0;
}

static void status_json(struct jbuf *b, uint64_t rows, uint64_t deletes, int64_t oldest_s)
{
	uint64_t now = kp_mono_ms();
	jb_printf(b, "{\"enabled\":%s", T.enabled ? "true" : "false");
	if (T.enabled)
		jb_printf(b, ",\"after_secs\":%lld,\"tierd_linked\":%s,\"waiting\":%llu,\"oldest_pending_secs\":%lld",
			  (long long)(T.after_ms / 1000), T.linked ? "true" : "false", (unsigned long long)T.waiting,
			  (long long)oldest_s);
	jb_printf(b, ",\"copies\":[");
	for (unsigned i = 0; i < T.n; i++) {
		const struct slot *s = &T.slots[i];
		jb_printf(b, "%s{\"recording\":%llu,\"key\":", i ? "," : "", (unsigned long long)s->id);
		jb_str(b, s->row.key);
		jb_printf(b, ",\"state\":\"%s\",\"parts_done\":%u,\"parts\":%u,\"attempts\":%u,\"retry_in_secs\":%llu}",
			  s->done ? "uploaded" : state_name(s->row.state), (unsigned)s->row.parts_done,
			  (unsigned)s->row.parts, (unsigned)s->row.attempts, secs_until(s->retry_mono, now));
	}
	jb_printf(b, "],\"deletes\":[");
	for (unsigned i = 0; i < T.ndels; i++) {
		const struct del *d = &T.dels[i];
		jb_printf(b, "%s{\"recording\":%llu,\"key\":", i ? "," : "", (unsigned long long)d->id);
		jb_str(b, d->row.key);
		jb_printf(b, ",\"done\":%s,\"attempts\":%u,\"retry_in_secs\":%llu}", d->done ? "true" : "false",
			  (unsigned)d->attempts, secs_until(d->retry_mono, now));
	}
	jb_printf(b,
		  "],\"uploaded\":%llu,\"uploaded_bytes\":%llu,\"failures\":%llu,\"deleted\":%llu,"
		  "\"delete_failures\":%llu,\"journal_rows\":%llu,\"deletes_pending\":%llu,\"keep_local_secs\":%lld,"
		  "\"remote\":%llu,\"stripped\":%llu,\"strip_failures\":%llu",
		  (unsigned long long)T.uploaded, (unsigned long long)T.uploaded_bytes, (unsigned long long)T.failures,
		  (unsigned long long)T.deleted, (unsigned long long)T.delete_failures, (unsigned long long)rows,
		  (unsigned long long)deletes, (long long)(T.keep_local_ms / 1000), (unsigned long long)T.remote,
		  (unsigned long long)T.stripped, (unsigned long long)T.strip_failures);
	rec_tier_cache_status(b, 1);
	rec_tier_events_status(b, 1);
	jb_printf(b, "}\n");
}

static void status_text(struct jbuf *b, uint64_t rows, uint64_t deletes, int64_t oldest_s)
{
	uint64_t now = kp_mono_ms();
	if (!T.enabled)
		jb_printf(b, "tiering: off (no [tier] endpoint in the configuration)\n");
	else
		jb_printf(b,
			  "tiering: on, closed recordings older than %lld s are copied to the store; tierd %s\n"
			  "waiting: %llu recordings old enough, no copy begun (the oldest for %lld s)\n",
			  (long long)(T.after_ms / 1000), T.linked ? "linked" : "not linked",
			  (unsigned long long)T.waiting, (long long)oldest_s);
	for (unsigned i = 0; i < T.n; i++) {
		const struct slot *s = &T.slots[i];
		jb_printf(b, "copying: recording %llu %s: %s", (unsigned long long)s->id, s->row.key,
			  s->done ? "uploaded" : state_name(s->row.state));
		if (s->row.parts)
			jb_printf(b, ", %u of %u parts", (unsigned)s->row.parts_done, (unsigned)s->row.parts);
		if (s->row.attempts)
			jb_printf(b, ", %u failed attempts, next in %llu s", (unsigned)s->row.attempts,
				  secs_until(s->retry_mono, now));
		jb_printf(b, "\n");
	}
	for (unsigned i = 0; i < T.ndels; i++) {
		const struct del *d = &T.dels[i];
		jb_printf(b, "deleting: recording %llu %s%s", (unsigned long long)d->id, d->row.key,
			  d->done ? ": done" : "");
		if (d->attempts)
			jb_printf(b, ", %u failed attempts, next in %llu s", (unsigned)d->attempts,
				  secs_until(d->retry_mono, now));
		jb_printf(b, "\n");
	}
	jb_printf(
	    b,
	    "since recorderd started: %llu copied (%llu bytes), %llu copies failed, %llu deleted, %llu deletes "
	    "failed\n"
	    "catalog: %llu recordings with a copy made or under way, %llu objects of deleted recordings to delete\n",
	    (unsigned long long)T.uploaded, (unsigned long long)T.uploaded_bytes, (unsigned long long)T.failures,
	    (unsigned long long)T.deleted, (unsigned long long)T.delete_failures, (unsigned long long)rows,
	    (unsigned long long)deletes);
	if (T.enabled)
		jb_printf(b,
			  "local media: kept %lld s after its copy; since recorderd started %llu recordings marked "
			  "remote, %llu files stripped to their headers, %llu failures\n",
			  (long long)(T.keep_local_ms / 1000), (unsigned long long)T.remote,
			  (unsigned long long)T.stripped, (unsigned long long)T.strip_failures);
	rec_tier_cache_status(b, 0);
	rec_tier_events_status(b, 0);
}

void rec_tier_status(struct jbuf *b, struct cat *cat, int json)
{
	uint64_t rows = 0, deletes = 0;
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	if (r == 0) {
		r = cat_tier_counts(t, &rows, &deletes);
		cat_abort(t);
	}
	if (r < 0) {
		jb_printf(b, "tier status: reading the catalog failed: %s\n", strerror(-r));
		return;
	}
	int64_t now = kp_wall_ms();
	int64_t oldest_s = T.oldest_ms && now > T.oldest_ms ? (now - T.oldest_ms) / 1000 : 0;
	if (json)
		status_json(b, rows, deletes, oldest_s);
	else
		status_text(b, rows, deletes, oldest_s);
}
