/* Shared by the rtcd stored-playback unit tests: records a fixture stream through
 * recorderd's real writer (rec_stream, group commit, catalog; test_rec_fixture.h),
 * possibly over several files (rollover), and reads it back the way rtcd receives it
 * from recorderd: each file's init segment and each catalogued fragment as byte ranges,
 * with their start times. */
#ifndef KP_TEST_RTC_PLAYBACK_FIXTURE_H
#define KP_TEST_RTC_PLAYBACK_FIXTURE_H

#include "test_rec_fixture.h"

#define REC_MAX_FRAGS 64
#define REC_MAX_FILES 16

struct recorded_file {
	uint64_t id;
	int fd;
	uint64_t init_len;
};

struct recorded {
	struct rec_setup rs;
	struct recorded_file files[REC_MAX_FILES];
	unsigned nfiles;
	struct cat_fragment frags[REC_MAX_FRAGS]; /* in time order, over every file */
	unsigned frag_file[REC_MAX_FRAGS];        /* index in files */
	unsigned nfrags;
	unsigned nframes; /* access units recorded */
	struct fixture fx;
	int64_t wall0;
};

struct recorded_walk {
	struct recorded *r;
	struct cat_txn *t;
	int err;
};

static int recorded_add_frag(void *arg, const struct cat_fragment *f)
{
	struct recorded *r = arg;
	if (r->nfrags < REC_MAX_FRAGS) {
		r->frag_file[r->nfrags] = r->nfiles - 1;
		r->frags[r->nfrags++] = *f;
	}
	return 0;
}

static int recorded_add_file(void *arg, const struct cat_recording *rec)
{
	struct recorded_walk *wk = arg;
	struct recorded *r = wk->r;
	if (r->nfiles == REC_MAX_FILES)
		return 1;
	char path[600];
	snprintf(path, sizeof path, "%s/%s", r->rs.dir, rec->path);
	struct recorded_file *f = &r->files[r->nfiles++];
	f->id = rec->id;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned first = r->nfrags;
	if (f->fd < 0 || cat_each_fragment(wk->t, rec->id, recorded_add_frag, r) < 0 || r->nfrags == first) {
		wk->err = -1;
		return 1;
	}
	f->init_len = r->frags[first].offset;
	return 0;
}

/* Records loops x the fixture name, a new file every rollover_ms (0: recorderd's
 * default); 0 or -1. */
static int recorded_make(struct recorded *r, const char *name, unsigned loops, uint32_t rollover_ms)
{
	memset(r, 0, sizeof *r);
	if (fixture_load(name, &r->fx) < 0 || rec_setup_open(&r->rs, "cam-1") < 0)
		return -1;
	if (rollover_ms)
		r->rs.env.rollover_ms = rollover_ms;
	struct rec_stream s;
	rec_stream_init(&s, &r->rs.env, "cam-1", 0, r->rs.camera_id);
	uint64_t seq = 0;
	r->wall0 = 1700000000000;
	rec_feed(&s, &r->fx, loops, r->wall0, &seq);
	r->nframes = (unsigned)seq;
	rec_stream_close(&s);
	rec_commit_free(r->rs.env.commit);
	r->rs.env.commit = NULL;
	struct recorded_walk wk = {.r = r};
	if (cat_begin(r->rs.cat, 0, &wk.t) < 0)
		return -1;
	int e = cat_each_recording(wk.t, recorded_add_file, &wk);
	cat_abort(wk.t);
	return e < 0 || wk.err || !r->nfrags ? -1 : 0;
}

/* The bytes [offset, offset + len) of file i, malloc'd. */
static inline uint8_t *recorded_read(const struct recorded *r, unsigned file, uint64_t offset, uint64_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	if (b && pread(r->files[file].fd, b, len, (off_t)offset) != (ssize_t)len) {
		free(b);
		return NULL;
	}
	return b;
}

static void recorded_free(struct recorded *r)
{
	for (unsigned i = 0; i < r->nfiles; i++)
		close(r->files[i].fd);
	rec_setup_close(&r->rs);
	fixture_free(&r->fx);
}

#endif
