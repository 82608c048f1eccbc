/* The read cache of tiered recordings (tier_cache.h): the cached recordings and their
 * byte ranges, the fetches asked of tierd, the parked requests and their deadlines. */
#include "tier_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kp_io.h"
#include "kp_time.h"
#include "log.h"
#include "tier_local.h"

#define TICK_MS        500
#define FETCH_STALE_MS (10 * 60 * 1000) /* tierd answers long before: past this a fetch is lost */

struct range {
	uint64_t off, end;
};

struct cached {
	uint64_t id;
	uint64_t gen;   /* which entry of this id: a fetch for an entry dropped since is not its */
	uint64_t size;  /* the recording's bytes: the cache file's length */
	uint64_t bytes; /* of it held (the sum of the ranges) */
	uint64_t used;  /* C.uses when last read: the least is evicted first */
	unsigned n;
	struct range r[REC_TIER_RANGES_MAX];
};

/* What is read back: a remote recording (the stripped file at local holds the first bytes
 * of every range asked: its fragment headers) or an event JPEG (fetched whole, its MD5
 * checked against etag). */
struct object {
	uint64_t id;
	const char *key;
	uint64_t size;
	const char *local;
	const uint8_t *head; /* without local: the bytes the object begins with */
	size_t head_len;
	const char *etag;
};

struct fetch {
	uint32_t id; /* 0: free */
	uint64_t rec;
	uint64_t cache_gen; /* the entry it fills */
	struct range want;
	int sent;
	uint64_t sent_mono;
	char key[CAT_PATH_MAX];
	uint8_t expect[16];
	size_t expect_len;
	char etag[33];
};

struct parked {
	int used;
	kp_Peer from;
	kp_Envelope *env;
	rec_tier_again_fn again;
	uint32_t waits[REC_TIER_REQ_FETCHES];
	unsigned nwaits;
	unsigned attempt;
	uint64_t deadline_mono;
	int err;
	char why[160];
};

static struct {
	rec_tier_send_fn send;
	struct cat *cat;
	int dirfd;
	int open, linked;
	uint64_t cap, held;
	uint64_t reserved; /* bytes of the fetches asked and not ended: room kept for them */
	uint64_t uses;
	uint64_t next_gen;
	/* recordings the request being handled has read or asked for: not evicted under it */
	uint64_t pinned[REC_TIER_PINNED_MAX];
	unsigned npinned;
	struct cached *c[REC_TIER_CACHED_MAX];
	unsigned nc;
	struct fetch f[REC_TIER_FETCHES_MAX];
	uint32_t next_fetch;
	struct parked p[REC_TIER_PARKED_MAX];
	uv_timer_t timer;
	/* the request being handled */
	unsigned attempt;
	uint32_t req_waits[REC_TIER_REQ_FETCHES];
	unsigned req_nwaits;
	int req_err;
	/* metrics */
	uint64_t hits, misses, fetched, fetched_bytes, fetch_failures, refused, evicted;
} C;

static void cache_path(uint64_t id, char *out, size_t len)
{
	snprintf(out, len, "%s/%llu", REC_TIER_CACHE_DIR, (unsigned long long)id);
}

static struct cached *cached_of(uint64_t id)
{
	for (unsigned i = 0; i < C.nc; i++)
		if (C.c[i]->id == id)
			return C.c[i];
	return NULL;
}

static int holds(const struct cached *c, uint64_t off, uint64_t end)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->r[i].off <= off && end <= c->r[i].end)
			return 1;
	return 0;
}

static int fetching(uint64_t id)
{
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX; i++)
		if (C.f[i].id && C.f[i].rec == id)
			return 1;
	return 0;
}

static int pinned(uint64_t id)
{
	for (unsigned i = 0; i < C.npinned; i++)
		if (C.pinned[i] == id)
			return 1;
	return 0;
}

/* The request being handled holds id: a request touches few recordings (a span has at
 * most REC_MEDIA_MAX_FILES); past REC_TIER_PINNED_MAX the oldest pins go first. */
static void pin(uint64_t id)
{
	if (pinned(id))
		return;
	if (C.npinned == REC_TIER_PINNED_MAX)
		memmove(C.pinned, C.pinned + 1, --C.npinned * sizeof C.pinned[0]);
	C.pinned[C.npinned++] = id;
}

static void drop_cached(unsigned i)
{
	char path[64];
	cache_path(C.c[i]->id, path, sizeof path);
	if (unlinkat(C.dirfd, path, 0) < 0 && errno != ENOENT)
		kp_warn("%s: removing it from the read cache failed: %s", path, strerror(errno));
	C.held -= C.c[i]->bytes;
	free(C.c[i]);
	C.c[i] = C.c[--C.nc];
}

/* Room for len more bytes (and one more recording when adding): the recordings read
 * least recently go first, but for keep and those being fetched into. */
static int make_room(uint64_t len, const struct cached *keep, int adding)
{
	while (C.held + C.reserved + len > C.cap || (adding && C.nc == REC_TIER_CACHED_MAX)) {
		int victim = -1;
		for (unsigned i = 0; i < C.nc; i++) {
			if (C.c[i] == keep || fetching(C.c[i]->id) || pinned(C.c[i]->id))
				continue;
			if (victim < 0 || C.c[i]->used < C.c[victim]->used)
				victim = (int)i;
		}
		if (victim < 0)
			return -ENOSPC;
		drop_cached((unsigned)victim);
		C.evicted++;
	}
	return 0;
}

/* Adds [off, end) to c's ranges, merging those it touches. */
static int add_range(struct cached *c, uint64_t off, uint64_t end)
{
	uint64_t added = end - off;
	for (unsigned i = 0; i < c->n;) {
		struct range *r = &c->r[i];
		if (r->end < off || end < r->off) {
			i++;
			continue;
		}
		/* overlapping or adjacent: the overlap is not new */
		uint64_t lo = r->off > off ? r->off : off, hi = r->end < end ? r->end : end;
		if (hi > lo)
			added -= hi - lo;
		off = r->off < off ? r->off : off;
		end = r->end > end ? r->end : end;
		c->r[i] = c->r[--c->n];
	}
	if (c->n == REC_TIER_RANGES_MAX)
		return -E2BIG;
	c->r[c->n++] = (struct range){off, end};
	c->bytes += added;
	C.held += added;
	return 0;
}

static struct cached *cached_new(const struct object *o)
{
	if (make_room(0, NULL, 1) < 0)
		return NULL;
	struct cached *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	char path[64];
	cache_path(o->id, path, sizeof path);
	int fd = openat(C.dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0 || ftruncate(fd, (off_t)o->size) < 0) {
		kp_err("%s: making the read cache file failed: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(c);
		return NULL;
	}
	close(fd);
	c->id = o->id;
	c->gen = ++C.next_gen;
	c->size = o->size;
	C.c[C.nc++] = c;
	return c;
}

static int open_cached(const struct cached *c)
{
	char path[64];
	cache_path(c->id, path, sizeof path);
	int fd = openat(C.dirfd, path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* [off, end) of rec's stripped file (the init segment) into the cache file. */
static int copy_local(const struct object *o, struct cached *c, uint64_t off, uint64_t end)
{
	if (end - off > 64 * 1024)
		return -EFBIG; /* an init segment is a few hundred bytes */
	static uint8_t buf[64 * 1024];
	char path[64];
	cache_path(c->id, path, sizeof path);
	int src = openat(C.dirfd, o->local, O_RDONLY | O_CLOEXEC);
	int dst = openat(C.dirfd, path, O_WRONLY | O_CLOEXEC);
	int r = src < 0 || dst < 0 ? -errno : 0;
	if (r == 0)
		r = kp_pread_all(src, buf, (size_t)(end - off), off);
	if (r == 0)
		r = kp_pwrite_all(dst, buf, (size_t)(end - off), off);
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	return r == 0 ? add_range(c, off, end) : r;
}

/* Fetch f leaves the table: its room is not kept any more. */
static void fetch_free(struct fetch *f)
{
	uint64_t len = f->want.end - f->want.off;
	C.reserved -= len < C.reserved ? len : C.reserved;
	f->id = 0;
}

/* The request being handled waits for fetch_id too (unless it waits for enough). */
static void wait_on(uint32_t fetch_id)
{
	for (unsigned i = 0; i < C.req_nwaits; i++)
		if (C.req_waits[i] == fetch_id)
			return;
	if (C.req_nwaits < REC_TIER_REQ_FETCHES)
		C.req_waits[C.req_nwaits++] = fetch_id;
}

/* A new fetch of [off, end) of o, or the one this request asked for last extended when
 * the range follows it. Not sent yet: rec_tier_cache_end sends it once the request is
 * parked. */
static int ask(const struct object *o, struct cached *c, uint64_t off, uint64_t end)
{
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX; i++) {
		struct fetch *f = &C.f[i];
		if (f->id && f->rec == o->id && f->cache_gen == c->gen && f->want.off <= off && end <= f->want.end) {
			wait_on(f->id); /* under way (when this run waits for enough, for a later one) */
			return 0;
		}
	}
	struct fetch *ext = NULL;
	for (unsigned i = 0; C.req_nwaits && i < REC_TIER_FETCHES_MAX && !ext; i++) {
		struct fetch *f = &C.f[i];
		if (f->id == C.req_waits[C.req_nwaits - 1] && !f->sent && f->rec == o->id && f->cache_gen == c->gen &&
		    f->want.end == off && end - f->want.off <= REC_TIER_FETCH_BYTES)
			ext = f;
	}
	if (!ext && C.req_nwaits == REC_TIER_REQ_FETCHES)
		return 0; /* enough for one run: the request asks for the rest when run again */
	if (end - off > C.cap)
		return -ENOSPC; /* nothing evicted for what can never fit */
	int r = make_room(end - off, c, 0);
	if (r < 0)
		return r;
	if (ext) {
		ext->want.end = end;
		C.reserved += end - off;
		return 0;
	}
	if (end - off > REC_TIER_FETCH_BYTES)
		return -EFBIG;
	struct fetch *f = NULL;
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX && !f; i++)
		if (!C.f[i].id)
			f = &C.f[i];
	if (!f)
		return -EBUSY;
	/* A recording's range starts at a fragment, whose header the stripped file still has:
	 * the object must begin there with the same bytes. */
	uint8_t head[16];
	size_t n = end - off < sizeof head ? (size_t)(end - off) : sizeof head;
	if (o->local) {
		int fd = openat(C.dirfd, o->local, O_RDONLY | O_CLOEXEC);
		int e = fd < 0 ? -errno : kp_pread_all(fd, head, n, off);
		if (fd >= 0)
			close(fd);
		if (e < 0)
			return e;
	} else {
		n = o->head_len < n ? o->head_len : n;
		memcpy(head, o->head, n);
	}
	memset(f, 0, sizeof *f);
	if (++C.next_fetch == 0)
		C.next_fetch = 1;
	f->id = C.next_fetch;
	f->rec = o->id;
	f->cache_gen = c->gen;
	f->want = (struct range){off, end};
	snprintf(f->key, sizeof f->key, "%s", o->key);
	snprintf(f->etag, sizeof f->etag, "%s", o->etag ? o->etag : "");
	memcpy(f->expect, head, n);
	f->expect_len = n;
	C.reserved += end - off;
	wait_on(f->id);
	return 0;
}

static int need(const struct object *o, uint64_t off, uint64_t len, int from_local, int *ret_fd)
{
	uint64_t end;
	if (__builtin_add_overflow(off, len, &end) || end > o->size)
		return -EINVAL;
	if (!C.open || !C.cap)
		return -ENOTCONN;
	pin(o->id);
	struct cached *c = cached_of(o->id);
	if (c && holds(c, off, end)) {
		c->used = ++C.uses;
		C.hits++;
		int fd = open_cached(c);
		if (fd < 0)
			return fd;
		*ret_fd = fd;
		return 0;
	}
	if (!c && !(c = cached_new(o)))
		return -ENOSPC;
	c->used = ++C.uses;
	if (from_local) {
		int r = make_room(end - off, c, 0);
		if (r == 0)
			r = copy_local(o, c, off, end);
		if (r < 0)
			return r;
		int fd = open_cached(c);
		if (fd < 0)
			return fd;
		*ret_fd = fd;
		return 0;
	}
	C.misses++;
	if (C.attempt >= REC_TIER_ATTEMPTS)
		return -ENOSPC; /* fetched and evicted again: the cache is too small for the readers */
	if (!C.linked)
		return -ENOTCONN;
	int r = ask(o, c, off, end);
	return r < 0 ? r : -EINPROGRESS;
}

int rec_tier_cache_need(const struct cat_recording *rec, uint64_t off, uint64_t len, int from_local, int *ret_fd)
{
	if (!(rec->flags & CAT_REC_REMOTE))
		return 1;
	struct object o = {.id = rec->id, .key = rec->path, .size = rec->bytes, .local = rec->path};
	return need(&o, off, len, from_local, ret_fd);
}

int rec_tier_cache_need_jpeg(uint64_t id, const struct cat_tier *side, int *ret_fd)
{
	static const uint8_t soi[] = {0xff, 0xd8, 0xff}; /* every JPEG begins with SOI and a marker */
	if (!side->size || side->size > UINT32_MAX)
		return -EBADMSG;
	/* A JPEG over part_size went up in parts: its ETag is not its MD5. */
	const char *md5 = strlen(side->etag) == 32 ? side->etag : NULL;
	struct object o = {
	    .id = id, .key = side->key, .size = side->size, .head = soi, .head_len = sizeof soi, .etag = md5};
	return need(&o, 0, side->size, 0, ret_fd);
}

int rec_tier_keyframe_read(int data_dirfd, const struct rec_keyframe *k, uint8_t *buf)
{
	if (!(k->rec_flags & CAT_REC_REMOTE))
		return rec_keyframe_read(data_dirfd, k, buf);
	struct cat_recording rec;
	struct cat_fragment f;
	struct cat_txn *t;
	int r = cat_begin(C.cat, 0, &t);
	if (r < 0)
		return r;
	r = cat_get_recording(t, k->recording_id, &rec);
	if (r == 0)
		r = cat_get_fragment(t, k->recording_id, k->seq, &f);
	cat_abort(t);
	if (r < 0)
		return r;
	if (k->offset < f.offset || k->offset + k->length > f.offset + f.length)
		return -EBADMSG;
	int fd = -1;
	r = rec_tier_cache_need(&rec, f.offset, f.length, 0, &fd);
	if (r == 1)
		return rec_keyframe_read(data_dirfd, k, buf);
	if (r < 0)
		return r;
	r = rec_keyframe_read_fd(fd, k, buf);
	close(fd);
	return r;
}

const char *rec_tier_error_code(int r)
{
	return r == -ENOSPC ? "cache_full" : r == -EBUSY ? "busy" : "store_unavailable";
}

void rec_tier_cache_begin(unsigned attempt)
{
	C.attempt = attempt;
	C.req_nwaits = 0;
	C.npinned = 0;
}

void rec_tier_cache_cancel(void)
{
	for (unsigned i = 0; i < C.req_nwaits; i++)
		for (unsigned j = 0; j < REC_TIER_FETCHES_MAX; j++)
			if (C.f[j].id == C.req_waits[i] && !C.f[j].sent)
				fetch_free(&C.f[j]);
	C.req_nwaits = 0;
}

static int send_fetch(struct fetch *f)
{
	char path[64];
	cache_path(f->rec, path, sizeof path);
	int fd = openat(C.dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	static kp_Envelope env;
	memset(&env, 0, sizeof env);
	env.which_msg = kp_Envelope_tier_fetch_tag;
	kp_TierFetch *m = &env.msg.tier_fetch;
	m->recording = f->rec;
	snprintf(m->key, sizeof m->key, "%s", f->key);
	m->offset = f->want.off;
	m->length = (uint32_t)(f->want.end - f->want.off);
	m->fetch = f->id;
	m->expect.size = (pb_size_t)f->expect_len;
	memcpy(m->expect.bytes, f->expect, f->expect_len);
	snprintf(m->etag, sizeof m->etag, "%s", f->etag);
	int r = C.send(&env, fd);
	close(fd);
	if (r == 0) {
		f->sent = 1;
		f->sent_mono = kp_mono_ms();
	}
	return r;
}

int rec_tier_cache_end(kp_Peer from, const kp_Envelope *env, rec_tier_again_fn again)
{
	C.npinned = 0;
	if (!C.req_nwaits)
		return 0;
	struct parked *p = NULL;
	for (unsigned i = 0; i < REC_TIER_PARKED_MAX && !p; i++)
		if (!C.p[i].used)
			p = &C.p[i];
	kp_Envelope *copy = p ? malloc(sizeof *copy) : NULL;
	if (!copy) {
		rec_tier_cache_cancel();
		C.refused++;
		again(from, env, EBUSY, "too many requests wait for the object store; retry shortly");
		return 1;
	}
	for (unsigned i = 0; i < C.req_nwaits; i++) {
		for (unsigned j = 0; j < REC_TIER_FETCHES_MAX; j++) {
			struct fetch *f = &C.f[j];
			if (f->id != C.req_waits[i] || f->sent)
				continue;
			int r = send_fetch(f);
			if (r < 0) {
				kp_warn("recording %llu: asking tierd for %llu bytes failed: %s",
					(unsigned long long)f->rec, (unsigned long long)(f->want.end - f->want.off),
					strerror(-r));
				rec_tier_cache_cancel();
				free(copy);
				C.refused++;
				again(from, env, -r, "tierd cannot be asked for the recording's bytes");
				return 1;
			}
		}
	}
	*copy = *env;
	*p = (struct parked){.used = 1,
			     .from = from,
			     .env = copy,
			     .again = again,
			     .nwaits = C.req_nwaits,
			     .attempt = C.attempt + 1,
			     .deadline_mono = kp_mono_ms() + REC_TIER_WAIT_MS};
	memcpy(p->waits, C.req_waits, C.req_nwaits * sizeof p->waits[0]);
	C.req_nwaits = 0;
	return 1;
}

/* Runs p again, or answers its error; frees it first (the run may park it anew). */
static void release(struct parked *p)
{
	struct parked done = *p;
	memset(p, 0, sizeof *p);
	if (done.err)
		C.refused++;
	rec_tier_cache_begin(done.attempt);
	done.again(done.from, done.env, done.err, done.why);
	free(done.env);
}

/* Fetch id ended (err 0: its bytes are cached): every request waiting on it learns. */
static void fetch_ended(uint32_t id, int err, const char *why)
{
	for (unsigned i = 0; i < REC_TIER_PARKED_MAX; i++) {
		struct parked *p = &C.p[i];
		if (!p->used)
			continue;
		for (unsigned j = 0; j < p->nwaits; j++) {
			if (p->waits[j] != id)
				continue;
			p->waits[j--] = p->waits[--p->nwaits];
			if (err && !p->err) {
				p->err = err;
				snprintf(p->why, sizeof p->why, "reading it back from the object store failed: %s",
					 why);
			}
		}
		if (p->used && (!p->nwaits || p->err))
			release(p);
	}
}

void rec_tier_cache_fetched(const kp_TierFetched *m)
{
	struct fetch *f = NULL;
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX && !f; i++)
		if (C.f[i].id == m->fetch && C.f[i].sent && C.f[i].rec == m->recording)
			f = &C.f[i];
	if (!f)
		return;
	struct fetch done = *f;
	fetch_free(f);
	int err = (int)m->error;
	if (!err) {
		struct cached *c = cached_of(done.rec);
		if (!c || c->gen != done.cache_gen) {
			err = ENOENT; /* its entry was dropped meanwhile: the bytes went with its file */
		} else {
			int r = add_range(c, done.want.off, done.want.end);
			for (unsigned i = 0; r < 0 && i < C.nc; i++)
				if (C.c[i] == c) {
					drop_cached(i); /* too many separate ranges: it starts anew */
					break;
				}
			if (r < 0)
				err = -r;
		}
	}
	if (err) {
		C.fetch_failures++;
		kp_warn("recording %llu: reading %llu bytes at %llu back from the store failed: %s",
			(unsigned long long)done.rec, (unsigned long long)(done.want.end - done.want.off),
			(unsigned long long)done.want.off, m->why[0] ? m->why : strerror(err));
	} else {
		C.fetched++;
		C.fetched_bytes += done.want.end - done.want.off;
	}
	fetch_ended(done.id, err, m->why[0] ? m->why : strerror(err));
}

static void fail_all_fetches(const char *why)
{
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX; i++) {
		if (!C.f[i].id)
			continue;
		uint32_t id = C.f[i].id;
		fetch_free(&C.f[i]);
		C.fetch_failures++;
		fetch_ended(id, ECONNRESET, why);
	}
}

void rec_tier_cache_link(int up)
{
	C.linked = up;
	if (!up)
		fail_all_fetches("tierd stopped");
}

static void on_tick(uv_timer_t *t)
{
	(void)t;
	uint64_t now = kp_mono_ms();
	for (unsigned i = 0; i < REC_TIER_PARKED_MAX; i++) {
		struct parked *p = &C.p[i];
		if (p->used && now >= p->deadline_mono) {
			p->err = ETIMEDOUT;
			snprintf(p->why, sizeof p->why, "the object store did not return the recording within %u s",
				 REC_TIER_WAIT_MS / 1000);
			release(p);
		}
	}
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX; i++) {
		if (C.f[i].id && C.f[i].sent && now - C.f[i].sent_mono > FETCH_STALE_MS) {
			uint32_t id = C.f[i].id;
			fetch_free(&C.f[i]);
			C.fetch_failures++;
			fetch_ended(id, ETIMEDOUT, "tierd never answered");
		}
	}
}

/* Removes what a previous run left in data_dir/tier-cache (its ranges are not known). */
static int empty_dir(void)
{
	if (mkdirat(C.dirfd, REC_TIER_CACHE_DIR, 0750) < 0 && errno != EEXIST)
		return -errno;
	int fd = openat(C.dirfd, REC_TIER_CACHE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT)
			r = -errno;
	closedir(d);
	return r;
}

int rec_tier_cache_open(uv_loop_t *loop, struct cat *cat, int data_dirfd, uint64_t cache_bytes, rec_tier_send_fn send)
{
	if (C.open)
		return 0;
	/* Fetch ids and entry generations go on from the last run's: a late answer to a
	 * fetch asked before a rebuild (which renumbers recordings) names nothing now. */
	int linked = C.linked;
	uint32_t next_fetch = C.next_fetch;
	uint64_t next_gen = C.next_gen;
	memset(&C, 0, sizeof C);
	C.linked = linked;
	C.next_fetch = next_fetch;
	C.next_gen = next_gen;
	C.send = send;
	C.cat = cat;
	C.dirfd = data_dirfd;
	C.cap = cache_bytes;
	int r = empty_dir();
	if (r < 0) {
		kp_err("%s: emptying the read cache failed: %s", REC_TIER_CACHE_DIR, strerror(-r));
		return r;
	}
	uv_timer_init(loop, &C.timer);
	uv_timer_start(&C.timer, on_tick, TICK_MS, TICK_MS);
	C.open = 1;
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

void rec_tier_cache_close(void)
{
	if (!C.open)
		return;
	fail_all_fetches("recorderd stops tiering");
	for (unsigned i = 0; i < REC_TIER_PARKED_MAX; i++)
		if (C.p[i].used) {
			C.p[i].err = ESHUTDOWN;
			snprintf(C.p[i].why, sizeof C.p[i].why, "recorderd stops tiering");
			release(&C.p[i]);
		}
	while (C.nc)
		drop_cached(0);
	uv_close((uv_handle_t *)&C.timer, on_closed);
	C.open = 0;
}

void rec_tier_cache_metrics(struct jbuf *b)
{
	if (!C.open)
		return;
	unsigned parked = 0, fetches = 0;
	for (unsigned i = 0; i < REC_TIER_PARKED_MAX; i++)
		parked += C.p[i].used;
	for (unsigned i = 0; i < REC_TIER_FETCHES_MAX; i++)
		fetches += C.f[i].id != 0;
	jb_printf(
	    b,
	    "# HELP keeppeek_tier_cache_bytes Bytes of recordings and event JPEGs read back from the store "
	    "held in the read cache.\n"
	    "# TYPE keeppeek_tier_cache_bytes gauge\n"
	    "keeppeek_tier_cache_bytes %llu\n"
	    "# HELP keeppeek_tier_cache_limit_bytes The read cache's size ([tier] cache_size).\n"
	    "# TYPE keeppeek_tier_cache_limit_bytes gauge\n"
	    "keeppeek_tier_cache_limit_bytes %llu\n"
	    "# HELP keeppeek_tier_cache_hits_total Reads of remote recordings or event JPEGs the read cache answered.\n"
	    "# TYPE keeppeek_tier_cache_hits_total counter\n"
	    "keeppeek_tier_cache_hits_total %llu\n"
	    "# HELP keeppeek_tier_cache_misses_total Reads of remote recordings or event JPEGs that needed a fetch.\n"
	    "# TYPE keeppeek_tier_cache_misses_total counter\n"
	    "keeppeek_tier_cache_misses_total %llu\n"
	    "# HELP keeppeek_tier_cache_evicted_total Recordings and event JPEGs dropped from the read cache for "
	    "room.\n"
	    "# TYPE keeppeek_tier_cache_evicted_total counter\n"
	    "keeppeek_tier_cache_evicted_total %llu\n"
	    "# HELP keeppeek_tier_fetches_total Byte ranges read back from the store.\n"
	    "# TYPE keeppeek_tier_fetches_total counter\n"
	    "keeppeek_tier_fetches_total %llu\n"
	    "# HELP keeppeek_tier_fetched_bytes_total Bytes read back from the store.\n"
	    "# TYPE keeppeek_tier_fetched_bytes_total counter\n"
	    "keeppeek_tier_fetched_bytes_total %llu\n"
	    "# HELP keeppeek_tier_fetch_failures_total Reads back from the store that failed.\n"
	    "# TYPE keeppeek_tier_fetch_failures_total counter\n"
	    "keeppeek_tier_fetch_failures_total %llu\n"
	    "# HELP keeppeek_tier_fetches_inflight Reads back from the store under way.\n"
	    "# TYPE keeppeek_tier_fetches_inflight gauge\n"
	    "keeppeek_tier_fetches_inflight %u\n"
	    "# HELP keeppeek_tier_reads_waiting Requests waiting for bytes from the store.\n"
	    "# TYPE keeppeek_tier_reads_waiting gauge\n"
	    "keeppeek_tier_reads_waiting %u\n"
	    "# HELP keeppeek_tier_reads_refused_total Requests for remote recordings answered with an error "
	    "(the store failed or was too slow, or too many waited).\n"
	    "# TYPE keeppeek_tier_reads_refused_total counter\n"
	    "keeppeek_tier_reads_refused_total %llu\n",
	    (unsigned long long)C.held, (unsigned long long)C.cap, (unsigned long long)C.hits,
	    (unsigned long long)C.misses, (unsigned long long)C.evicted, (unsigned long long)C.fetched,
	    (unsigned long long)C.fetched_bytes, (unsigned long long)C.fetch_failures, fetches, parked,
	    (unsigned long long)C.refused);
}

void rec_tier_cache_status(struct jbuf *b, int json)
{
	if (!C.open)
		return;
	if (json)
		jb_printf(b,
			  ",\"cache_bytes\":%llu,\"cache_limit_bytes\":%llu,\"cache_recordings\":%u,"
			  "\"fetched\":%llu,\"fetched_bytes\":%llu,\"fetch_failures\":%llu,\"reads_refused\":%llu",
			  (unsigned long long)C.held, (unsigned long long)C.cap, C.nc, (unsigned long long)C.fetched,
			  (unsigned long long)C.fetched_bytes, (unsigned long long)C.fetch_failures,
			  (unsigned long long)C.refused);
	else
		jb_printf(b,
			  "read cache: %llu of %llu bytes, %u recordings; %llu reads back from the store (%llu "
			  "bytes), %llu failed; %llu requests refused\n",
			  (unsigned long long)C.held, (unsigned long long)C.cap, C.nc, (unsigned long long)C.fetched,
			  (unsigned long long)C.fetched_bytes, (unsigned long long)C.fetch_failures,
			  (unsigned long long)C.refused);
}
