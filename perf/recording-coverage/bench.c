/* recording-coverage-bench: the SPEC section 13 recording-coverage benchmark's timed part.
 *
 * --generate: writes the workload into a real recorderd catalog through recorderd's own
 * catalog code (cat_camera, cat_add_fragment, cat_close_recording: the coverage summaries
 * are maintained exactly as recorderd's commit thread maintains them): 127 cameras x
 * main+sub x 30 days x 128 keyframed fragments per camera/day/stream. Each stream/day is
 * K runs of touching fragments (K = 1..12 by stream, so some streams keep all their exact
 * ranges and some more than 256), 2-10 s per fragment, one recording per run; or, with
 * --layout contiguous (the seed's shape), 128 touching 675 s fragments per day, one
 * exact range per stream.
 *
 * --measure: times, interleaved after warm-up, (a) the baseline: one materializing
 * fragment scan per stream (every fragment row of the range copied out, sorted, merged,
 * summed into 6 h buckets, rendered in the CoverageQuery JSON layout) and (b) the
 * production answer: a CoverageQuery frame handed to recorderd's rec_query_frame
 * (queries.c: one read transaction, the maintained summaries via rec_snapshot, the
 * records recorderd sends to webd, captured by reply_capture.c) and rendered into the
 * JSON webd answers by the common renderer webd uses (common/catalog_json.c). Prints one JSON document with
 * every sample; writes both answers and the generator's expected per-stream totals to
 * files that perf/recording-coverage/run.py checks. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_json.h"
#include "catalog_keys.h"
#include "jbuf.h"
#include "queries.h"
#include "reply_capture.h"

#define CAMERAS     127
#define STREAMS     2
#define DAYS        30
#define FRAGS       128 /* per camera/day/stream */
#define DAY_MS      86400000ll
#define DAY0_MS     1793404800000ll /* 2026-10-31T00:00:00Z */
#define BUCKET_MS   (6 * 3600 * 1000ll)
#define INIT_LEN    1024u
#define TXN_FRAGS   16384u /* fragments per write transaction while generating */
#define MAP_SIZE    (8ull << 30)
#define JSON_MAX    (64u << 20)
#define MAX_BUCKETS 2048

static void die(const char *what, int err)
{
	fprintf(stderr, "recording-coverage-bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t h4(unsigned a, unsigned b, unsigned c, unsigned d)
{
	return mix(((uint64_t)a << 48) ^ ((uint64_t)b << 40) ^ ((uint64_t)c << 24) ^ d);
}

/* --layout contiguous: the seed's shape, 128 uniformly spaced GOPs per day that touch,
 * so each stream is one exact range over the 30 days. */
static int Contiguous;

/* Runs per day of camera c (1-based), stream s. */
static unsigned runs_per_day(unsigned c, unsigned s)
{
	return Contiguous ? 1 : 1 + (c * 7 + s * 3) % 12;
}

/* Fragments in run j of K (128 split as evenly as possible). */
static unsigned run_frags(unsigned j, unsigned k)
{
	return FRAGS / k + (j < FRAGS % k ? 1 : 0);
}

static int64_t run_start(unsigned c, unsigned s, unsigned d, unsigned j, unsigned k)
{
	int64_t slot = DAY_MS / k;
	if (Contiguous)
		return DAY0_MS + (int64_t)d * DAY_MS;
	return DAY0_MS + (int64_t)d * DAY_MS + (int64_t)j * slot + (int64_t)(h4(c, s, d, j) % (uint64_t)(slot / 2));
}

static int64_t frag_ms(unsigned c, unsigned s, unsigned d, unsigned i)
{
	if (Contiguous)
		return DAY_MS / FRAGS;
	return 2000 + (int64_t)(h4(c, s + 2, d, i) % 8001);
}

struct expect {
	int64_t total_ms;
	unsigned ranges, fragments;
};

/* What the generator writes for one stream (the same walk as generate()). */
static void expected(unsigned c, unsigned s, struct expect *e)
{
	memset(e, 0, sizeof *e);
	unsigned k = runs_per_day(c, s);
	for (unsigned d = 0; d < DAYS; d++) {
		unsigned i = 0;
		for (unsigned j = 0; j < k; j++) {
			for (unsigned n = run_frags(j, k); n; n--, i++)
				e->total_ms += frag_ms(c, s, d, i);
			e->ranges++;
		}
		e->fragments += i;
	}
	if (Contiguous)
		e->ranges = 1;
}

static void generate(const char *dir)
{
	struct cat *cat;
	int r = cat_open(dir, MAP_SIZE, &cat);
	if (r < 0)
		die("opening the catalog", r);
	struct cat_txn *t;
	uint32_t cam_id[CAMERAS + 1];
	if ((r = cat_begin(cat, 1, &t)) < 0)
		die("begin", r);
	for (unsigned c = 1; c <= CAMERAS; c++) {
		char name[16];
		snprintf(name, sizeof name, "cam%03u", c);
		if ((r = cat_camera(t, name, 30, &cam_id[c])) < 0)
			die("cat_camera", r);
	}
	uint64_t rec_id;
	if ((r = cat_next_recording_id(t, &rec_id)) < 0)
		die("cat_next_recording_id", r);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	unsigned in_txn = 0, commits = 0;
	uint64_t frags = 0;
	for (unsigned d = 0; d < DAYS; d++)
		for (unsigned c = 1; c <= CAMERAS; c++)
			for (unsigned s = 0; s < STREAMS; s++) {
				unsigned k = runs_per_day(c, s), i = 0;
				for (unsigned j = 0; j < k; j++) {
					int64_t start = run_start(c, s, d, j, k);
					struct cat_recording rec = {.id = rec_id++,
								    .stream_id = cat_stream_id(cam_id[c], s),
								    .codec = 1 + (c & 1),
								    .width = s ? 640 : 1920,
								    .height = s ? 360 : 1080,
								    .start_ms = start,
								    .bytes = INIT_LEN,
								    .anchor_ms = start};
					snprintf(rec.path, sizeof rec.path, "recordings/cam%03u/%s/%lld.mp4", c,
						 s ? "sub" : "main", (long long)start);
					uint64_t off = INIT_LEN, base = 0;
					int64_t ms = start;
					for (unsigned n = run_frags(j, k), seq = 1; n; n--, i++, seq++) {
						int64_t dur = frag_ms(c, s, d, i);
						uint64_t len = (uint64_t)dur * (s ? 50 : 250); /* 0.4 / 2 Mbit/s */
						struct cat_fragment f = {.recording_id = rec.id,
									 .seq = seq,
									 .samples = (uint32_t)(dur / 40),
									 .start_ms = ms,
									 .end_ms = ms + dur,
									 .base_time = base,
									 .duration = (uint64_t)dur * 90,
									 .offset = off,
									 .length = len,
									 .keyframe_offset = off + 600,
									 .keyframe_length = (uint32_t)(len / 8)};
						if ((r = cat_add_fragment(t, &rec, &f)) < 0)
							die("cat_add_fragment", r);
						off += len;
						base += f.duration;
						ms += dur;
						frags++;
						if (++in_txn == TXN_FRAGS) {
							if ((r = cat_commit(t)) < 0)
								die("commit", r);
							if ((r = cat_begin(cat, 1, &t)) < 0)
								die("begin", r);
							in_txn = 0;
							commits++;
						}
					}
					if ((r = cat_close_recording(t, rec.id)) < 0)
						die("cat_close_recording", r);
				}
			}
	if ((r = cat_commit(t)) < 0)
		die("commit", r);
	commits++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	uint64_t bytes = 0;
	if ((r = cat_size(cat, &bytes)) < 0)
		die("cat_size", r);
	cat_close(cat);
	printf("{\"fragments\":%llu,\"recordings\":%llu,\"commits\":%u,\"seconds\":%.3f,\"catalog_bytes\":%llu}\n",
	       (unsigned long long)frags, (unsigned long long)(rec_id - 1), commits,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, (unsigned long long)bytes);
}

/* ---- baseline: one materializing fragment scan per stream ---- */

struct scan {
	struct cat_txn *t;
	struct cat_fragment *f;
	size_t n, cap;
	int64_t from_ms, to_ms;
	uint64_t rows;
};

static int keep_fragment(void *arg, const struct cat_fragment *f)
{
	struct scan *sc = arg;
	sc->rows++;
	if (f->end_ms <= sc->from_ms || f->start_ms >= sc->to_ms)
		return 0;
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 4096;
		struct cat_fragment *nf = realloc(sc->f, cap * sizeof *nf);
		if (!nf)
			return -ENOMEM;
		sc->f = nf;
		sc->cap = cap;
	}
	sc->f[sc->n++] = *f;
	return 0;
}

static int scan_recording(void *arg, const struct cat_recording *r)
{
	struct scan *sc = arg;
	return cat_each_fragment(sc->t, r->id, keep_fragment, sc);
}

static int by_start(const void *a, const void *b)
{
	const struct cat_fragment *x = a, *y = b;
	return x->start_ms < y->start_ms ? -1 : x->start_ms > y->start_ms;
}

static int scan_stream(struct scan *sc, uint32_t sid, struct jbuf *b)
{
	sc->n = 0;
	struct cat_recording before;
	int r = cat_stream_recording_before(sc->t, sid, sc->from_ms, &before);
	if (r == 0)
		r = scan_recording(sc, &before);
	if (r == -ENOENT)
		r = 0;
	if (r == 0)
		r = cat_each_stream_recording(sc->t, sid, sc->from_ms, sc->to_ms, scan_recording, sc);
	if (r < 0)
		return r;
	qsort(sc->f, sc->n, sizeof *sc->f, by_start);
	static int64_t bucket[MAX_BUCKETS];
	int64_t nb = (sc->to_ms - 1) / BUCKET_MS - sc->from_ms / BUCKET_MS + 1,
		first = sc->from_ms / BUCKET_MS * BUCKET_MS;
	if (nb > MAX_BUCKETS)
		return -E2BIG;
	memset(bucket, 0, (size_t)nb * sizeof bucket[0]);
	jb_printf(b, ",\"exact_from_ms\":null,\"ranges\":[");
	size_t out = 0;
	for (size_t i = 0; i < sc->n;) {
		int64_t s = sc->f[i].start_ms, e = sc->f[i].end_ms;
		for (i++; i < sc->n && sc->f[i].start_ms <= e; i++)
			if (sc->f[i].end_ms > e)
				e = sc->f[i].end_ms;
		s = s > sc->from_ms ? s : sc->from_ms;
		e = e < sc->to_ms ? e : sc->to_ms;
		jb_printf(b, "%s[%lld,%lld]", out++ ? "," : "", (long long)s, (long long)e);
		for (int64_t x = s; x < e;) {
			int64_t bi = (x - first) / BUCKET_MS, be = first + (bi + 1) * BUCKET_MS;
			int64_t y = e < be ? e : be;
			bucket[bi] += y - x;
			x = y;
		}
	}
	jb_printf(b, "],\"ranges_truncated\":false,\"buckets\":[");
	for (int64_t i = 0; i < nb; i++)
		jb_printf(b, "%s%lld", i ? "," : "", (long long)bucket[i]);
	jb_printf(b, "]}");
	return 0;
}

struct cam_list {
	char name[CAMERAS][16];
	uint32_t id[CAMERAS];
	unsigned n;
};

static int add_cam(void *arg, const char *name, uint32_t id, uint32_t days)
{
	struct cam_list *l = arg;
	(void)days;
	if (l->n == CAMERAS)
		return -E2BIG;
	snprintf(l->name[l->n], sizeof l->name[0], "%s", name);
	l->id[l->n++] = id;
	return 0;
}

static int baseline(struct cat *cat, int64_t from_ms, int64_t to_ms, struct jbuf *b, uint64_t *ret_rows,
		    uint64_t *ret_kept)
{
	static struct scan sc;
	static struct cam_list cams;
	cams.n = 0;
	sc.from_ms = from_ms;
	sc.to_ms = to_ms;
	sc.rows = 0;
	uint64_t kept = 0;
	int r = cat_begin(cat, 0, &sc.t);
	if (r < 0)
		return r;
	r = cat_each_camera(sc.t, add_cam, &cams);
	b->len = 0;
	b->failed = 0;
	jb_printf(b, "{\"from_ms\":%lld,\"to_ms\":%lld,\"bucket_ms\":%lld,\"total_cameras\":%u,\"cameras\":[",
		  (long long)from_ms, (long long)to_ms, (long long)BUCKET_MS, cams.n);
	for (unsigned i = 0; r == 0 && i < cams.n; i++) {
		jb_printf(b, "%s{\"name\":", i ? "," : "");
		jb_str(b, cams.name[i]);
		jb_printf(b, ",\"streams\":[");
		for (unsigned s = 0; r == 0 && s < STREAMS; s++) {
			jb_printf(b, "%s{\"name\":\"%s\"", s ? "," : "", s ? "sub" : "main");
			r = scan_stream(&sc, cat_stream_id(cams.id[i], s), b);
			kept += sc.n;
		}
		jb_printf(b, "]}");
	}
	jb_printf(b, "]}");
	cat_abort(sc.t);
	*ret_rows = sc.rows;
	*ret_kept = kept;
	return r < 0 ? r : b->failed ? -E2BIG : 0;
}

/* ---- production: recorderd's CoverageQuery answer, rendered as webd renders it ---- */

static struct {
	char *p;
	size_t len;
} Json;

static int production(int64_t from_ms, int64_t to_ms, uint32_t id)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_coverage_query_tag;
	kp_CoverageQuery *q = &env.msg.coverage_query;
	q->id = id;
	q->stream = -1;
	q->from_ms = from_ms;
	q->to_ms = to_ms;
	q->bucket_ms = BUCKET_MS;
	struct kp_ipc_frame f = {.env = &env};
	for (unsigned i = 0; i < KP_IPC_MAX_FDS; i++)
		f.fds[i] = -1;
	rec_query_frame(kp_Peer_PEER_WEBD, &f);
	const struct capture *c = capture_last();
	if (c->id != id || c->result != kp_CatalogResult_CATALOG_OK || c->kind != kp_CatalogBody_CATALOG_BODY_RECORDS)
		return -EPROTO;
	long n = catj_render(CATJ_COVERAGE, (const uint8_t *)c->body, c->len, Json.p, JSON_MAX);
	if (n < 0)
		return (int)n;
	Json.len = (size_t)n;
	return 0;
}

static double ms_since(const struct timespec *a, clockid_t clk)
{
	struct timespec b;
	clock_gettime(clk, &b);
	return (double)(b.tv_sec - a->tv_sec) * 1e3 + (double)(b.tv_nsec - a->tv_nsec) / 1e6;
}

static void write_file(const char *dir, const char *name, const void *p, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f) != 0)
		die(path, errno);
}

static void write_expected(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/expected.json", dir);
	FILE *f = fopen(path, "w");
	if (!f)
		die(path, errno);
	fprintf(f, "{");
	for (unsigned c = 1; c <= CAMERAS; c++)
		for (unsigned s = 0; s < STREAMS; s++) {
			struct expect e;
			expected(c, s, &e);
			fprintf(f, "%s\"cam%03u/%s\":{\"total_ms\":%lld,\"ranges\":%u,\"fragments\":%u}",
				c == 1 && s == 0 ? "" : ",", c, s ? "sub" : "main", (long long)e.total_ms, e.ranges,
				e.fragments);
		}
	fprintf(f, "}\n");
	if (fclose(f) != 0)
		die(path, errno);
}

static void measure(const char *dir, const char *out, unsigned warmup, unsigned samples)
{
	struct cat *cat;
	int r = cat_open(dir, MAP_SIZE, &cat);
	if (r < 0)
		die("opening the catalog", r);
	int dirfd = open(out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		die(out, errno);
	rec_queries_open(NULL, cat, dirfd);
	const int64_t from_ms = DAY0_MS, to_ms = DAY0_MS + DAYS * DAY_MS;
	struct jbuf b;
	jb_init(&b, JSON_MAX);
	Json.p = malloc(JSON_MAX);
	if (!Json.p)
		die("the JSON buffer", -ENOMEM);
	printf("{\"from_ms\":%lld,\"to_ms\":%lld,\"bucket_ms\":%lld,\"warmup\":%u,\"samples\":[", (long long)from_ms,
	       (long long)to_ms, (long long)BUCKET_MS, warmup);
	uint64_t rows = 0, kept = 0;
	for (unsigned i = 0; i < warmup + samples; i++) {
		/* Alternate which path goes first so drift falls on both alike. */
		for (unsigned k = 0; k < 2; k++) {
			int base = (k == 0) == (i % 2 == 0);
			struct timespec w, cpu;
			clock_gettime(CLOCK_MONOTONIC, &w);
			clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
			r = base ? baseline(cat, from_ms, to_ms, &b, &rows, &kept) : production(from_ms, to_ms, i + 1);
			double wall_ms = ms_since(&w, CLOCK_MONOTONIC),
			       cpu_ms = ms_since(&cpu, CLOCK_PROCESS_CPUTIME_ID);
			if (r < 0)
				die(base ? "baseline" : "CoverageQuery answer", r);
			size_t bytes = base ? b.len : Json.len;
			printf("%s{\"path\":\"%s\",\"round\":%u,\"warmup\":%s,\"wall_ms\":%.4f,\"cpu_ms\":%.4f,"
			       "\"bytes\":%zu",
			       i || k ? "," : "", base ? "baseline" : "summaries", i, i < warmup ? "true" : "false",
			       wall_ms, cpu_ms, bytes);
			if (base)
				printf(",\"rows_read\":%llu,\"rows_in_range\":%llu", (unsigned long long)rows,
				       (unsigned long long)kept);
			else
				printf(",\"record_bytes\":%zu", capture_last()->len);
			printf("}");
		}
	}
	printf("],\"body\":\"%s\"}\n",
	       capture_last()->kind == kp_CatalogBody_CATALOG_BODY_RECORDS ? "records" : "not records");
	write_file(out, "baseline.json", b.p, b.len);
	write_file(out, "summaries.json", Json.p, Json.len);
	write_expected(out);
	jb_free(&b);
	free(Json.p);
	capture_free();
	rec_queries_close();
	close(dirfd);
	cat_close(cat);
}

int main(int argc, char **argv)
{
	const char *catalog = NULL, *out = NULL;
	unsigned warmup = 2, samples = 5;
	int gen = 0;
	static const struct option opts[] = {{"catalog", required_argument, 0, 'c'},
					     {"generate", no_argument, 0, 'g'},
					     {"out", required_argument, 0, 'o'},
					     {"warmup", required_argument, 0, 'w'},
					     {"samples", required_argument, 0, 's'},
					     {"layout", required_argument, 0, 'l'},
					     {0, 0, 0, 0}};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (o == 'c')
			catalog = optarg;
		else if (o == 'g')
			gen = 1;
		else if (o == 'o')
			out = optarg;
		else if (o == 'w')
			warmup = (unsigned)atoi(optarg);
		else if (o == 's')
			samples = (unsigned)atoi(optarg);
		else if (o == 'l' && (!strcmp(optarg, "gaps") || !strcmp(optarg, "contiguous")))
			Contiguous = !strcmp(optarg, "contiguous");
		else
			return 2;
	}
	if (!catalog || (!gen && (!out || samples == 0))) {
		fprintf(stderr,
			"usage: recording-coverage-bench --catalog DIR [--layout gaps|contiguous] (--generate | "
			"--out DIR [--warmup N] [--samples N])\n");
		return 2;
	}
	if (gen)
		generate(catalog);
	else
		measure(catalog, out, warmup, samples);
	return 0;
}
