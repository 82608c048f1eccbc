/* tier-store-bench: tiering's two costs measured with tierd's S3 client (tierd/s3.h)
 * against a real store, each beside its local-disk baseline in the same run:
 *
 * - upload of one recording file held in memory: single PUT and multipart at the given
 *   part sizes (initiate, parts, complete; every ETag checked by the client), against
 *   writing the same bytes to a new local file and fsync'ing it; modes interleaved, the
 *   order rotated each round, warm-up rounds first. After each upload (not timed): HEAD
 *   (size and ETag) and a timed GET of the whole object, compared with the file byte for
 *   byte, against a cold pread of the whole local file;
 * - ranged reads as playback makes them: the init segment (ftyp + moov, found by walking
 *   the file's top-level boxes) and fragments of fixed sizes at random offsets, each with
 *   s3_get (a Range GET, the object chosen at random among those uploaded) and with
 *   pread of a local copy after posix_fadvise(DONTNEED) (not timed; mincore then counts
 *   the pages of the range still cached). Every byte read either way is compared with the
 *   file; one difference fails the run.
 *
 * The store comes from the environment as for tier-s3-probe (KP_S3_ENDPOINT,
 * KP_S3_BUCKET, KP_S3_ACCESS_KEY, KP_S3_SECRET). Prints one JSON document with every
 * timing; perf/tier-store/run.py computes the statistics. Exit status 1 on any failure
 * or difference. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "s3.h"

#define MODES_MAX 8
#define SIZES_MAX 8
#define IO_CHUNK  (1u << 20)

struct mode {
	char name[16];
	size_t part; /* 0: single PUT; SIZE_MAX: local write + fsync */
};

static unsigned char *data;
static size_t data_len;
static int first_out = 1;

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "tier-store-bench: %s: %s\n", what, detail);
	exit(1);
}

static void die_s3(const char *what, const char *key, int err, const struct s3_result *res)
{
	fprintf(stderr, "tier-store-bench: %s %s failed: %s (HTTP %ld %s: %s)\n", what, key, strerror(-err),
		res->status, res->code, res->why);
	exit(1);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* CPU time of this process, all threads (libcurl's resolver included). */
static double cpu_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		die(path, strerror(errno));
	if (st.st_size <= 0)
		die(path, "empty");
	data_len = (size_t)st.st_size;
	data = malloc(data_len);
	if (!data)
		die(path, "cannot allocate a buffer of its size");
	size_t got = 0;
	while (got < data_len) {
		ssize_t n = read(fd, data + got, data_len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die(path, n < 0 ? strerror(errno) : "shorter than its size");
		got += (size_t)n;
	}
	close(fd);
}

/* End of the moov box: ftyp + moov is what a player reads first. 0 when the top-level
 * boxes before it do not parse or there is no moov. */
static size_t init_length(void)
{
	size_t off = 0;
	while (data_len - off >= 8) {
		uint64_t size = (uint64_t)data[off] << 24 | (uint64_t)data[off + 1] << 16 |
				(uint64_t)data[off + 2] << 8 | data[off + 3];
		if (size == 1) {
			if (data_len - off < 16)
				return 0;
			size = 0;
			for (int i = 0; i < 8; i++)
				size = size << 8 | data[off + 8 + i];
		}
		if (size < 8 || size > data_len - off)
			return 0;
		if (memcmp(data + off + 4, "moov", 4) == 0)
			return off + (size_t)size;
		off += (size_t)size;
	}
	return 0;
}

static void write_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(path, strerror(errno));
	for (size_t off = 0; off < data_len;) {
		size_t n = data_len - off < IO_CHUNK ? data_len - off : IO_CHUNK;
		ssize_t w = write(fd, data + off, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die(path, w < 0 ? strerror(errno) : "write wrote nothing");
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0)
		die(path, strerror(errno));
}

/* Drops the file's cached pages, then counts those of [off, off + len) still resident. */
static size_t drop_cache(int fd, void *map, size_t off, size_t len)
{
	int r = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (r != 0)
		die("posix_fadvise(DONTNEED)", strerror(r));
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t first = off / page, last = (off + len - 1) / page;
	static unsigned char vec[1u << 16];
	if (last - first + 1 > sizeof(vec))
		die("mincore", "range too large");
	if (mincore((unsigned char *)map + first * page, (last - first + 1) * page, vec) < 0)
		die("mincore", strerror(errno));
	size_t n = 0;
	for (size_t i = 0; i <= last - first; i++)
		n += vec[i] & 1;
	return n;
}

static double pread_timed(int fd, size_t off, size_t len, unsigned char *buf)
{
	double t0 = now_ms();
	for (size_t got = 0; got < len;) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("pread of the local copy", n < 0 ? strerror(errno) : "short file");
		got += (size_t)n;
	}
	return now_ms() - t0;
}

static void same(const unsigned char *got, size_t off, size_t len, const char *what)
{
	if (off > data_len || len > data_len - off || memcmp(got, data + off, len) != 0) {
		char d[96];
		snprintf(d, sizeof(d), "%zu bytes at %zu differ from the file", len, off);
		die(what, d);
	}
}

static void upload(struct s3_client *c, const char *key, size_t part, struct s3_result *res)
{
	char etag[S3_ETAG_MAX], id[S3_UPLOAD_ID_MAX];
	int r;
	if (part == 0) {
		if ((r = s3_put(c, key, data, data_len, etag, res)) < 0)
			die_s3("PUT", key, r, res);
		return;
	}
	size_t n = (data_len + part - 1) / part;
	struct s3_part *parts = calloc(n, sizeof(*parts));
	if (!parts)
		die("calloc", "parts");
	if ((r = s3_mpu_initiate(c, key, id, res)) < 0)
		die_s3("multipart initiate", key, r, res);
	for (size_t i = 0; i < n; i++) {
		size_t off = i * part, len = data_len - off < part ? data_len - off : part;
		parts[i].number = (uint32_t)(i + 1);
		parts[i].size = len;
		if ((r = s3_mpu_part(c, key, id, parts[i].number, data + off, len, parts[i].etag, res)) < 0)
			die_s3("multipart part", key, r, res);
	}
	if ((r = s3_mpu_complete(c, key, id, parts, n, etag, res)) < 0)
		die_s3("multipart complete", key, r, res);
	free(parts);
}

static void out(const char *fmt_json)
{
	printf("%s%s", first_out ? "\n  " : ",\n  ", fmt_json);
	first_out = 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: tier-store-bench --file F --local-dir DIR --prefix KEY-PREFIX\n"
			"       [--parts 8388608,16777216] [--no-put] [--runs 10] [--warmup 2]\n"
			"       [--sizes 65536,262144,2097152] [--reads 50] [--seed 22]\n");
	exit(2);
}

static size_t parse_list(char *s, size_t *v, size_t cap)
{
	size_t n = 0;
	for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *end;
		errno = 0;
		unsigned long long x = strtoull(t, &end, 10);
		if (errno || *end || x == 0 || x > S3_PART_MAX || n == cap)
			usage();
		v[n++] = (size_t)x;
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *file = NULL, *dir = NULL, *prefix = NULL;
	size_t parts[MODES_MAX] = {8u << 20, 16u << 20}, n_parts = 2;
	size_t sizes[SIZES_MAX] = {64u << 10, 256u << 10, 2u << 20}, n_sizes = 3;
	unsigned runs = 10, warmup = 2, reads = 50, seed = 22;
	int with_put = 1;
	static const struct option lo[] = {{"file", required_argument, NULL, 'f'},
					   {"local-dir", required_argument, NULL, 'd'},
					   {"prefix", required_argument, NULL, 'p'},
					   {"parts", required_argument, NULL, 'P'},
					   {"no-put", no_argument, NULL, 'n'},
					   {"runs", required_argument, NULL, 'r'},
					   {"warmup", required_argument, NULL, 'w'},
					   {"sizes", required_argument, NULL, 's'},
					   {"reads", required_argument, NULL, 'R'},
					   {"seed", required_argument, NULL, 'S'},
					   {NULL, 0, NULL, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'f':
			file = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'P':
			n_parts = parse_list(optarg, parts, MODES_MAX - 2);
			break;
		case 'n':
			with_put = 0;
			break;
		case 'r':
			runs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			warmup = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 's':
			n_sizes = parse_list(optarg, sizes, SIZES_MAX - 1);
			break;
		case 'R':
			reads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			seed = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (!file || !dir || !prefix || !runs || runs > 1000 || warmup > 100 || reads > 100000)
		usage();
	load(file);
	if (with_put && data_len > S3_PART_MAX)
		die(file, "larger than one PUT may be (S3_PART_MAX): use --no-put");
	size_t init_len = init_length();
	if (init_len == 0)
		die(file, "no ftyp/moov at its start: not a recording");

	struct s3_conf conf = {getenv("KP_S3_ENDPOINT"), "us-east-1", getenv("KP_S3_BUCKET"),
			       getenv("KP_S3_ACCESS_KEY"), getenv("KP_S3_SECRET")};
	struct s3_client *c;
	struct s3_result res = {0};
	int r;
	if ((r = s3_client_new(&conf, &c)) < 0)
		die("s3_client_new", "KP_S3_ENDPOINT, KP_S3_BUCKET, KP_S3_ACCESS_KEY, KP_S3_SECRET");
	if ((r = s3_bucket_create(c, &res)) < 0)
		die_s3("bucket create", conf.bucket ? conf.bucket : "", r, &res);

	struct mode modes[MODES_MAX];
	size_t n_modes = 0;
	snprintf(modes[n_modes].name, sizeof(modes[0].name), "local");
	modes[n_modes++].part = SIZE_MAX;
	if (with_put) {
		snprintf(modes[n_modes].name, sizeof(modes[0].name), "put");
		modes[n_modes++].part = 0;
	}
	for (size_t i = 0; i < n_parts; i++) {
		if (parts[i] < S3_PART_MIN)
			die("--parts", "a part under S3_PART_MIN (5 MiB)");
		snprintf(modes[n_modes].name, sizeof(modes[0].name), "mpu%zu", parts[i] >> 20);
		modes[n_modes++].part = parts[i];
	}

	if (n_modes < 2)
		die("modes", "nothing to upload: --no-put and no --parts");
	unsigned char *buf = malloc(data_len);
	if (!buf)
		die("malloc", "read buffer");
	char path[4096], key[S3_KEY_MAX], etag[S3_ETAG_MAX], line[1024];
	unsigned rounds = warmup + runs;
	char(*keys)[S3_KEY_MAX] = calloc((size_t)rounds * n_modes, S3_KEY_MAX);
	size_t n_keys = 0;
	if (!keys)
		die("calloc", "keys");
	uint64_t compared = 0;

	printf("{\n \"file_bytes\": %zu, \"init_bytes\": %zu, \"runs\": %u, \"warmup\": %u, \"seed\": %u,\n"
	       " \"uploads\": [",
	       data_len, init_len, runs, warmup, seed);
	for (unsigned round = 0; round < rounds; round++) {
		for (size_t k = 0; k < n_modes; k++) {
			const struct mode *m = &modes[(k + round) % n_modes];
			double up_ms, get_ms, up_cpu, get_cpu;
			size_t got = 0;
			if (m->part == SIZE_MAX) {
				snprintf(path, sizeof(path), "%s/upload-%u.mp4", dir, round);
				double t0 = now_ms(), c0 = cpu_ms();
				write_file(path);
				up_ms = now_ms() - t0;
				up_cpu = cpu_ms() - c0;
				int fd = open(path, O_RDONLY | O_CLOEXEC);
				if (fd < 0)
					die(path, strerror(errno));
				if ((r = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) != 0)
					die("posix_fadvise(DONTNEED)", strerror(r));
				c0 = cpu_ms();
				get_ms = pread_timed(fd, 0, data_len, buf);
				get_cpu = cpu_ms() - c0;
				close(fd);
				if (unlink(path) < 0)
					die(path, strerror(errno));
				got = data_len;
			} else {
				snprintf(key, sizeof(key), "%s/r%03u-%s.mp4", prefix, round, m->name);
				double t0 = now_ms(), c0 = cpu_ms();
				upload(c, key, m->part, &res);
				up_ms = now_ms() - t0;
				up_cpu = cpu_ms() - c0;
				uint64_t size;
				if ((r = s3_head(c, key, &size, etag, &res)) < 0)
					die_s3("HEAD", key, r, &res);
				if (size != data_len)
					die(key, "HEAD gives another size than the file's");
				t0 = now_ms();
				c0 = cpu_ms();
				if ((r = s3_get(c, key, 0, data_len, buf, &got, &res)) < 0)
					die_s3("GET of the whole object", key, r, &res);
				get_ms = now_ms() - t0;
				get_cpu = cpu_ms() - c0;
				if (got != data_len)
					die(key, "GET of the whole object came short");
				snprintf(keys[n_keys++], S3_KEY_MAX, "%s", key);
			}
			same(buf, 0, got, m->name);
			compared += got;
			snprintf(
			    line, sizeof(line),
			    "{\"round\": %u, \"warmup\": %s, \"mode\": \"%s\", \"part\": %zu, \"upload_ms\": %.3f, "
			    "\"get_ms\": %.3f, \"upload_cpu_ms\": %.3f, \"get_cpu_ms\": %.3f}",
			    round, round < warmup ? "true" : "false", m->name, m->part == SIZE_MAX ? 0 : m->part, up_ms,
			    get_ms, up_cpu, get_cpu);
			out(line);
			fflush(stdout);
		}
	}
	printf("\n ],\n \"reads\": [");
	first_out = 1;

	/* The local copy ranged reads are compared against, fsync'ed so that DONTNEED drops it. */
	snprintf(path, sizeof(path), "%s/reference.mp4", dir);
	write_file(path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(path, strerror(errno));
	void *map = mmap(NULL, data_len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap of the local copy (for mincore)", strerror(errno));
	srandom(seed);
	size_t kinds = n_sizes + 1;
	for (unsigned i = 0; i < reads * kinds; i++) {
		size_t kind = i % kinds, off, len;
		if (kind == n_sizes) {
			off = 0;
			len = init_len;
		} else {
			len = sizes[kind] < data_len ? sizes[kind] : data_len;
			off = (size_t)((uint64_t)random() * 65536u + (uint64_t)(random() & 0xffff)) %
			      (data_len - len + 1);
		}
		const char *k = keys[(size_t)random() % n_keys];
		double s3_ms = 0, local_ms = 0;
		size_t resident = 0, got = 0;
		/* Which goes first alternates, so that drift and background load hit both alike. */
		for (int step = 0; step < 2; step++) {
			if ((step == 0) == ((i / kinds) % 2 == 0)) {
				resident = drop_cache(fd, map, off, len);
				local_ms = pread_timed(fd, off, len, buf);
				same(buf, off, len, "local pread");
			} else {
				double t0 = now_ms();
				if ((r = s3_get(c, k, off, len, buf, &got, &res)) < 0)
					die_s3("ranged GET", k, r, &res);
				s3_ms = now_ms() - t0;
				if (got != len)
					die(k, "ranged GET came short");
				same(buf, off, len, "ranged GET");
			}
			compared += len;
		}
		snprintf(line, sizeof(line),
			 "{\"kind\": \"%s\", \"offset\": %zu, \"bytes\": %zu, \"s3_ms\": %.3f, \"local_ms\": %.3f, "
			 "\"resident_pages\": %zu}",
			 kind == n_sizes ? "init" : "fragment", off, len, s3_ms, local_ms, resident);
		out(line);
	}
	munmap(map, data_len);
	close(fd);
	if (unlink(path) < 0)
		die(path, strerror(errno));
	printf("\n ],\n \"objects\": %zu, \"bytes_compared\": %" PRIu64 ", \"mismatches\": 0\n}\n", n_keys, compared);
	s3_client_free(c);
	free(keys);
	free(buf);
	free(data);
	return 0;
}
