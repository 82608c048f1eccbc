/* Retention passes (see retention.h). */
#include "retention.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "event_log.h"
#include "tier_local.h"
#include "jobs.h"

#define DAY_MS      (86400ll * 1000)
#define PASS_MAX    64 /* recordings deleted per transaction */
#define CAMERAS_MAX 1024

struct pass {
	struct cat_txn *t;
	const struct rec_retention_policy *p;
	uint32_t cam_id[CAMERAS_MAX], cam_days[CAMERAS_MAX];
	unsigned ncams;
	uint64_t total;
	uint64_t ids[PASS_MAX];
	unsigned n;
	int err;
};

static int add_camera(void *arg, const char *name, uint32_t id, uint32_t days)
{
	struct pass *ps = arg;
	(void)name;
	if (ps->ncams < CAMERAS_MAX) {
		ps->cam_id[ps->ncams] = id;
		ps->cam_days[ps->ncams++] = days;
	}
	return 0;
}

static uint32_t days_for(const struct pass *ps, uint32_t camera_id)
{
	for (unsigned i = 0; i < ps->ncams; i++)
		if (ps->cam_id[i] == camera_id && ps->cam_days[i])
			return ps->cam_days[i];
	return ps->p->max_days;
}

static int consider(void *arg, const struct cat_recording *r)
{
	struct pass *ps = arg;
	if (r->open)
		return 0;
	uint64_t newest;
	int e = cat_stream_last_recording(ps->t, r->stream_id, &newest);
	if (e < 0) {
		ps->err = e;
		return 1;
	}
	if (newest == r->id)
		return 0;
	uint32_t days = days_for(ps, r->stream_id >> 8);
	int too_old = days && r->end_ms < ps->p->now_ms - (int64_t)days * DAY_MS;
	/* A recording whose media is in the store only takes no local space: the quota
	 * does not delete it, its age does. */
	int remote = (r->flags & CAT_REC_REMOTE) != 0;
	int over_quota = !remote && ps->p->max_bytes && ps->total > ps->p->max_bytes;
	if (!too_old && !over_quota)
		return 0;
	ps->ids[ps->n++] = r->id;
	if (!remote)
		ps->total -= r->bytes < ps->total ? r->bytes : ps->total;
	return ps->n == PASS_MAX;
}

/* One transaction: up to PASS_MAX recordings. Returns how many were deleted. */
static int one_pass(struct cat *cat, int data_dirfd, const struct rec_retention_policy *p,
		    struct rec_retention_result *res)
{
	static struct pass ps;
	memset(&ps, 0, sizeof ps);
	ps.p = p;
	int e = cat_begin(cat, 1, &ps.t);
	if (e < 0)
		return e;
	e = cat_each_camera(ps.t, add_camera, &ps);
	if (e == 0)
		e = cat_total_bytes(ps.t, &ps.total);
	if (e == 0) {
		e = cat_each_recording(ps.t, consider, &ps);
		e = e < 0 ? e : ps.err;
	}
	static struct cat_recording gone[PASS_MAX];
	for (unsigned i = 0; e == 0 && i < ps.n; i++)
		e = cat_delete_recording(ps.t, ps.ids[i], &gone[i]);
	if (e < 0) {
		cat_abort(ps.t);
		return e;
	}
	e = cat_commit(ps.t);
	if (e < 0)
		return e;
	/* The rows are gone for good: now the files. */
	for (unsigned i = 0; i < ps.n; i++) {
		res->deleted++;
		res->bytes += gone[i].bytes;
		int u = rec_recording_unlink(data_dirfd, gone[i].path);
		if (u < 0) {
			if (!res->unlink_failed++) {
				res->unlink_err = -u;
				snprintf(res->unlink_path, sizeof res->unlink_path, "%s", gone[i].path);
			}
		}
	}
	return (int)ps.n;
}

struct event_pass {
	struct pass *ps;
	int64_t oldest_kept; /* no camera keeps events for a shorter time than this */
	char ids[PASS_MAX][CAT_EVENT_ID_MAX + 1];
	unsigned n;
	int err;
};

static int consider_event(void *arg, int64_t start_ms, uint64_t seq, const char *id)
{
	struct event_pass *ep = arg;
	(void)seq;
	if (start_ms >= ep->oldest_kept)
		return 1;
	struct cat_event_row row;
	int e = cat_event_get(ep->ps->t, id, &row, NULL);
	if (e < 0) {
		ep->err = e;
		return 1;
	}
	uint32_t days = days_for(ep->ps, row.camera_id);
	if (!days || start_ms >= ep->ps->p->now_ms - (int64_t)days * DAY_MS)
		return 0;
	snprintf(ep->ids[ep->n++], sizeof ep->ids[0], "%s", id);
	return ep->n == PASS_MAX;
}

/* One transaction: up to PASS_MAX events older than their camera's retention, their
 * tombstones in the event log (synced before the commit), then their JPEG files.
 * Returns how many were deleted. */
static int one_event_pass(struct cat *cat, int data_dirfd, struct rec_evlog *log, const struct rec_retention_policy *p,
			  struct rec_retention_result *res)
{
	static struct pass ps;
	static struct event_pass ep;
	memset(&ps, 0, sizeof ps);
	memset(&ep, 0, sizeof ep);
	ps.p = p;
	ep.ps = &ps;
	int e = cat_begin(cat, 1, &ps.t);
	if (e < 0)
		return e;
	e = cat_each_camera(ps.t, add_camera, &ps);
	uint32_t shortest = p->max_days;
	for (unsigned i = 0; i < ps.ncams; i++)
		if (ps.cam_days[i] && (!shortest || ps.cam_days[i] < shortest))
			shortest = ps.cam_days[i];
	if (e == 0 && !shortest) {
		cat_abort(ps.t);
		return 0;
	}
	ep.oldest_kept = p->now_ms - (int64_t)shortest * DAY_MS;
	if (e == 0) {
		e = cat_each_event(ps.t, consider_event, &ep);
		e = e < 0 ? e : ep.err;
	}
	static struct cat_event_row gone[PASS_MAX];
	static kp_EventRecord tomb;
	for (unsigned i = 0; e == 0 && i < ep.n; i++) {
		e = cat_event_delete(ps.t, ep.ids[i], &gone[i]);
		tomb = (kp_EventRecord)kp_EventRecord_init_zero;
		snprintf(tomb.event_id, sizeof tomb.event_id, "%s", ep.ids[i]);
		tomb.revision = gone[i].revision;
		tomb.committed_ms = gone[i].committed_ms;
		if (e == 0)
			e = rec_evlog_add(log, REC_EVLOG_TOMBSTONE, &tomb);
	}
	int logged = 0;
	if (e == 0 && ep.n) {
		e = rec_evlog_flush(log);
		logged = 1;
	} else {
		rec_evlog_discard(log);
	}
	if (e == 0)
		e = cat_commit(ps.t);
	else
		cat_abort(ps.t);
	if (e < 0 && logged)
		rec_evlog_restore(log, cat, NULL, 0, (const char(*)[CAT_EVENT_ID_MAX + 1]) ep.ids, ep.n);
	if (e < 0)
		return e;
	for (unsigned i = 0; i < ep.n; i++) {
		res->events_deleted++;
		char path[CAT_PATH_MAX];
		rec_event_record_path(ep.ids[i], gone[i].revision, path, sizeof path); /* older catalogs' */
		unlinkat(data_dirfd, path, 0);
		if (!gone[i].jpeg_len)
			continue;
		rec_event_thumb_path(ep.ids[i], gone[i].revision, path, sizeof path);
		unlinkat(data_dirfd, path, 0);
		rec_event_jpeg_path(ep.ids[i], gone[i].revision, path, sizeof path);
		int u = rec_event_file_unlink(data_dirfd, path); /* its object too, when it is in the store */
		if (u < 0 && !res->unlink_failed++) {
			res->unlink_err = -u;
			snprintf(res->unlink_path, sizeof res->unlink_path, "%s", path);
		}
	}
	return (int)ep.n;
}

int rec_retention_run(struct cat *cat, int data_dirfd, struct rec_evlog *log, const struct rec_retention_policy *p,
		      struct rec_retention_result *ret)
{
	memset(ret, 0, sizeof *ret);
	int n;
	do
		n = one_pass(cat, data_dirfd, p, ret);
	while (n == PASS_MAX);
	if (n < 0) {
		ret->err = n;
		return n;
	}
	if (p->events) {
		do
			n = one_event_pass(cat, data_dirfd, log, p, ret);
		while (n == PASS_MAX);
	}
	if (n < 0)
		ret->err = n;
	return n < 0 ? n : 0;
}
