/* Retention passes (see retention.h). */
#include "retention.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"

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
	int over_quota = ps->p->max_bytes && ps->total > ps->p->max_bytes;
	if (!too_old && !over_quota)
		return 0;
	ps->ids[ps->n++] = r->id;
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
		if (unlinkat(data_dirfd, gone[i].path, 0) < 0 && errno != ENOENT) {
			if (!res->unlink_failed++) {
				res->unlink_err = errno;
				snprintf(res->unlink_path, sizeof res->unlink_path, "%s", gone[i].path);
			}
		}
	}
	return (int)ps.n;
}

int rec_retention_run(struct cat *cat, int data_dirfd, const struct rec_retention_policy *p,
		      struct rec_retention_result *ret)
{
	memset(ret, 0, sizeof *ret);
	int n;
	do
		n = one_pass(cat, data_dirfd, p, ret);
	while (n == PASS_MAX);
	if (n < 0)
		ret->err = n;
	return n < 0 ? n : 0;
}
