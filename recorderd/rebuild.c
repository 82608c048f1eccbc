/* The catalog against the files on disk (see rebuild.h). */
#include "rebuild.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "catalog_keys.h"
#include "catalog_verify.h"
#include "event_log.h"
#include "event_record.h"
#include "fmp4.h"
#include "jobs.h"
#include "keyframe.h"
#include "kp_limits.h"
#include "log.h"
#include "recovery.h"
#include "tier_local.h"

#define DATA_FILE REC_CATALOG_DIR "/data.mdb"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && !strcmp(s + n - m, suffix);
}

/* Whether dir (relative to dirfd) has an entry that is a directory holding a file
 * accepted by want, one level down (levels 2) or two (3). */
static int any_file(int dirfd, const char *dir, int levels, int (*want)(const char *name))
{
	int fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (levels > 1)
			found = any_file(fd, e->d_name, levels - 1, want);
		else
			found = want(e->d_name);
	}
	closedir(d);
	return found;
}

static int is_recording(const char *name)
{
	return ends_with(name, ".mp4");
}

static int is_event_file(const char *name)
{
	return ends_with(name, ".jpg") || ends_with(name, ".ev") || ends_with(name, REC_EVLOG_SUFFIX);
}

int rec_data_has_files(int data_dirfd)
{
	int r = any_file(data_dirfd, "recordings", 3, is_recording);
	return r ? r : any_file(data_dirfd, "events", 2, is_event_file);
}

int rec_catalog_assess(int data_dirfd, char *why, size_t cap)
{
	int fd = openat(data_dirfd, DATA_FILE, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT) {
		int e = errno;
		snprintf(why, cap, "%s cannot be opened: %s", DATA_FILE, strerror(e));
		return -e;
	}
	struct cat_verify_report rep;
	struct stat st;
	int r = fd < 0 ? -ENOENT : cat_verify_fd(fd, 0, &rep);
	if (r == -ENOTSUP) /* not checkable on this build: LMDB opens it as before, unless empty */
		r = fstat(fd, &st) == 0 && st.st_size == 0 ? -ENODATA : 0;
	if (fd >= 0)
		close(fd);
	if (r == -ENOENT || r == -ENODATA) {
		int files = rec_data_has_files(data_dirfd);
		if (files == 0)
			return 0; /* a new catalog */
		if (files < 0) {
			snprintf(why, cap, "%s is %s and the data directory cannot be read: %s", DATA_FILE,
				 r == -ENOENT ? "missing" : "empty", strerror(-files));
			return files;
		}
		snprintf(why, cap, "%s is %s, but recordings or events are on disk (deleted or truncated to 0?)",
			 DATA_FILE, r == -ENOENT ? "missing" : "empty");
		return r;
	}
	if (r == -EBADMSG)
		snprintf(why, cap, "%s is damaged: %s", DATA_FILE, rep.why);
	else if (r < 0)
		snprintf(why, cap, "%s cannot be read: %s", DATA_FILE, strerror(-r));
	return r;
}

/* ---- rebuild ---- */

#define EVENT_BATCH 256 /* events per transaction */

static int valid_camera(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > KP_CAMERA_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
		      *s == '_'))
			return 0;
	return 1;
}

static int mkdirs(int dirfd, const char *path)
{
	char p[CAT_PATH_MAX + 32];
	snprintf(p, sizeof p, "%s", path);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdirat(dirfd, p, 0750) < 0 && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	return mkdirat(dirfd, p, 0750) < 0 && errno != EEXIST ? -errno : 0;
}

/* Moves data_dir/path to unindexed/path (a free name: .1, .2, ... appended). */
static int set_aside(int dirfd, const char *path)
{
	char to[CAT_PATH_MAX + 32], dir[CAT_PATH_MAX + 32];
	snprintf(dir, sizeof dir, "%s/%s", REC_UNINDEXED_DIR, path);
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	int r = mkdirs(dirfd, dir);
	for (int i = 0; r == 0; i++) {
		if (i)
			snprintf(to, sizeof to, "%s/%s.%d", REC_UNINDEXED_DIR, path, i);
		else
			snprintf(to, sizeof to, "%s/%s", REC_UNINDEXED_DIR, path);
		if (faccessat(dirfd, to, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			break;
	}
	if (r == 0 && renameat(dirfd, path, dirfd, to) < 0)
		r = -errno;
	if (r < 0)
		kp_err("rebuild: %s: moving it to %s/ failed: %s; left where it is", path, REC_UNINDEXED_DIR,
		       strerror(-r));
	else
		kp_notice("rebuild: %s is not something this writer made (or is damaged); moved to %s", path, to);
	return r;
}

struct file_entry {
	char camera[KP_CAMERA_NAME_MAX + 1];
	uint32_t stream;
	int64_t name_ms;
	char name[40];
};

struct file_list {
	struct file_entry *f;
	size_t n, cap;
};

static int add_file(struct file_list *l, const char *camera, uint32_t stream, const char *name, int64_t ms)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		void *p = realloc(l->f, cap * sizeof *l->f);
		if (!p)
			return -ENOMEM;
		l->f = p;
		l->cap = cap;
	}
	struct file_entry *e = &l->f[l->n++];
	snprintf(e->camera, sizeof e->camera, "%s", camera);
	e->stream = stream;
	e->name_ms = ms;
	snprintf(e->name, sizeof e->name, "%s", name);
	return 0;
}

/* The recording files: recordings/<camera>/<main|sub>/<ms>.mp4. Other names are not a
 * writer's and are left alone (recovery does the same). */
static int list_stream(int dirfd, const char *camera, uint32_t stream, struct file_list *l)
{
	char dir[CAT_PATH_MAX];
	snprintf(dir, sizeof dir, "recordings/%s/%s", camera, stream ? "sub" : "main");
	int fd = openat(dirfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		char *end;
		long long ms = strtoll(e->d_name, &end, 10);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || strcmp(end, ".mp4") || strlen(e->d_name) >= 40)
			continue;
		r = add_file(l, camera, stream, e->d_name, ms);
	}
	closedir(d);
	return r;
}

static int list_recordings(int dirfd, struct file_list *l)
{
	int fd = openat(dirfd, "recordings", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (!valid_camera(e->d_name)) {
			kp_warn("rebuild: recordings/%s: not a camera name; left alone", e->d_name);
			continue;
		}
		for (uint32_t s = 0; r == 0 && s < 2; s++)
			r = list_stream(dirfd, e->d_name, s, l);
	}
	closedir(d);
	return r;
}

static int by_start(const void *a, const void *b)
{
	const struct file_entry *x = a, *y = b;
	if (x->name_ms != y->name_ms)
		return x->name_ms < y->name_ms ? -1 : 1;
	int c = strcmp(x->camera, y->camera);
	if (c)
		return c;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int read_head(int dirfd, const char *path, uint8_t *buf, size_t cap, size_t *ret_n, uint64_t *ret_size)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st = {0};
	int r = fstat(fd, &st) < 0 ? -errno : 0;
	size_t got = 0;
	while (r == 0 && got < cap) {
		ssize_t n = pread(fd, buf + got, cap - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*ret_n = got;
	*ret_size = (uint64_t)st.st_size;
	return r;
}

/* The timing of a file from its first fragment. The writer puts into every prft box
 * anchor_ms * 1000 + floor((anchor_offset + tfdt) * 100 / 9) microseconds, and the
 * fragment's catalogued start is anchor_ms + floor((anchor_offset + tfdt) / 90). With
 * x = anchor_offset + tfdt = 90 q + r (0 <= r < 90), the prft is 1000 (anchor_ms + q) +
 * floor(100 r / 9), and floor(100 r / 9) < 990 tells r (= ceil(9 v / 100)). An anchor
 * (A', O') with A' + floor((O' + t) / 90) = anchor_ms + floor((anchor_offset + t) / 90)
 * for every t then follows: exactly the times recording catalogued, for every fragment. */
static void file_anchor(int64_t wall_us, uint64_t tfdt, int64_t *ret_ms, uint64_t *ret_offset)
{
	int64_t a1 = wall_us >= 0 ? wall_us / 1000 : -((-wall_us + 999) / 1000);
	int64_t v = wall_us - a1 * 1000;
	int64_t r = (9 * v + 99) / 100;
	if (r >= 90 || (100 * r) / 9 != v) { /* not this writer's formula: the prft as it is */
		*ret_ms = a1;
		*ret_offset = tfdt;
		return;
	}
	uint64_t m = tfdt > (uint64_t)r ? (tfdt - (uint64_t)r + 89) / 90 : 0;
	*ret_ms = a1 - (int64_t)m;
	*ret_offset = (uint64_t)r + 90 * m - tfdt;
}

static int index_recording(struct cat *cat, int dirfd, const struct file_entry *f, uint64_t id,
			   struct rec_rebuild_result *res)
{
	static uint8_t buf[FMP4_INIT_MAX + FMP4_FRAG_HEADER_MAX];
	struct cat_recording rec = {.id = id};
	snprintf(rec.path, sizeof rec.path, "recordings/%s/%s/%s", f->camera, f->stream ? "sub" : "main", f->name);
	size_t n = 0;
	uint64_t size = 0;
	int r = read_head(dirfd, rec.path, buf, sizeof buf, &n, &size);
	if (r < 0)
		return r;
	static struct fmp4_init init;
	static struct fmp4_frag fi;
	if (fmp4_read_init(buf, n, &init) < 0 || fmp4_read_frag(&init, buf + init.len, n - init.len, &fi) < 0 ||
	    fi.seq != 1 || init.len + fi.total_len > size) {
		res->files_set_aside += set_aside(dirfd, rec.path) == 0;
		return 0;
	}
	struct cat_txn *t;
	r = cat_begin(cat, 1, &t);
	if (r < 0)
		return r;
	uint32_t camera_id;
	r = cat_camera(t, f->camera, 0, &camera_id);
	rec.stream_id = cat_stream_id(camera_id, f->stream);
	rec.codec = init.track.codec;
	rec.width = init.track.width;
	rec.height = init.track.height;
	file_anchor(fi.wall_us, fi.base_time, &rec.anchor_ms, &rec.anchor_offset);
	rec.start_ms = rec.anchor_ms + (int64_t)(rec.anchor_offset / 90);
	rec.end_ms = rec.start_ms;
	rec.bytes = init.len;
	unsigned frags = 0;
	int truncated;
	if (r == 0)
		r = rec_index_file(t, dirfd, &rec, 0, &frags, &truncated);
	if (r == 0)
		r = cat_close_recording(t, rec.id);
	/* Its media in the store (a sidecar, written before the file was stripped): the row
	 * says so again, and the journal knows the object. */
	struct cat_tier tier;
	int remote = r == 0 ? rec_tier_sidecar_read(dirfd, rec.path, &tier) : -ENOENT;
	if (remote == -EBADMSG)
		kp_warn("rebuild: %s%s does not parse; the recording is taken as local", rec.path, REC_TIER_SIDECAR);
	if (remote == 0) {
		r = cat_mark_remote(t, rec.id);
		if (r == 0)
			r = cat_tier_put(t, rec.id, &tier);
	}
	if (r < 0) {
		cat_abort(t);
		return r;
	}
	r = cat_commit(t);
	if (r == 0) {
		res->recordings++;
		res->fragments += frags;
		res->remote += remote == 0;
	}
	return r;
}

static int rebuild_recordings(struct cat *cat, int dirfd, struct rec_rebuild_result *res)
{
	struct file_list l = {0};
	int r = list_recordings(dirfd, &l);
	if (r == 0 && l.n)
		qsort(l.f, l.n, sizeof *l.f, by_start);
	res->files = (unsigned)l.n;
	uint64_t id = 1;
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		unsigned before = res->recordings;
		r = index_recording(cat, dirfd, &l.f[i], id, res);
		if (r < 0)
			kp_err("rebuild: recordings/%s/%s/%s: %s", l.f[i].camera, l.f[i].stream ? "sub" : "main",
			       l.f[i].name, strerror(-r));
		id += res->recordings != before;
	}
	free(l.f);
	return r;
}

/* ---- events ---- */

/* The records and tombstones of the .ev files (seg 0) and the event log, as the log's
 * index keeps them (struct rec_evlog_key, event_log_index.c). */

/* Parses "<id>-<rev><suffix>"; 0 when name is not that. */
static int parse_name(const char *name, const char *suffix, char id[CAT_EVENT_ID_MAX + 1], uint32_t *ret_rev)
{
	size_t n = strlen(name), m = strlen(suffix);
	if (n <= m || strcmp(name + n - m, suffix))
		return 0;
	char stem[CAT_EVENT_ID_MAX + 16];
	if (n - m >= sizeof stem)
		return 0;
	memcpy(stem, name, n - m);
	stem[n - m] = '\0';
	char *dash = strrchr(stem, '-');
	if (!dash || dash == stem || !dash[1] || (size_t)(dash - stem) > CAT_EVENT_ID_MAX)
		return 0;
	*dash = '\0';
	char *end;
	unsigned long rev = strtoul(dash + 1, &end, 10);
	if (*end || !rev || rev > UINT32_MAX)
		return 0;
	snprintf(id, CAT_EVENT_ID_MAX + 1, "%s", stem);
	*ret_rev = (uint32_t)rev;
	return 1;
}

static int has_record(const struct rec_evlog_index *l, const char *id, uint32_t rev)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(l->k[mid].id, id);
		if (!c)
			c = l->k[mid].revision > rev ? -1 : l->k[mid].revision < rev ? 1 : 0;
		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int by_id_newest(const void *a, const void *b)
{
	const struct rec_evlog_key *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	if (c)
		return c;
	if (x->revision != y->revision)
		return x->revision > y->revision ? -1 : 1;
	return x->committed_ms > y->committed_ms ? -1 : x->committed_ms < y->committed_ms;
}

static int by_commit(const void *a, const void *b)
{
	const struct rec_evlog_key *x = a, *y = b;
	if (x->committed_ms != y->committed_ms)
		return x->committed_ms < y->committed_ms ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* One pass over events/<hh>/: with jpegs 0 the records (damaged ones set aside), with
 * jpegs 1 the JPEGs that no sound record names (set aside). */
static int scan_events(int dirfd, struct rec_evlog_index *l, int jpegs, struct rec_rebuild_result *res)
{
	int top = openat(dirfd, "events", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(top);
	if (!d) {
		close(top);
		return -errno;
	}
	static kp_EventRecord ev;
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) != 2)
			continue;
		int sub = openat(top, e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
		if (!sd) {
			if (sub >= 0)
				close(sub);
			continue;
		}
		/* Names first: setting aside changes the directory being read. */
		char(*names)[CAT_PATH_MAX] = NULL;
		size_t n = 0, cap = 0;
		struct dirent *f;
		while (r == 0 && (f = readdir(sd))) {
			if (f->d_name[0] == '.')
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				void *p = realloc(names, cap * sizeof *names);
				if (!p) {
					r = -ENOMEM;
					break;
				}
				names = p;
			}
			snprintf(names[n++], CAT_PATH_MAX, "events/%s/%s", e->d_name, f->d_name);
		}
		closedir(sd);
		for (size_t i = 0; r == 0 && i < n; i++) {
			const char *name = names[i] + 10;
			char id[CAT_EVENT_ID_MAX + 1], want[CAT_PATH_MAX];
			uint32_t rev;
			if (jpegs) {
				if (strstr(name, ".thumb.jpg") || !parse_name(name, ".jpg", id, &rev) ||
				    has_record(l, id, rev))
					continue; /* thumbnails: the start-up sweep's */
				res->event_files_set_aside += set_aside(dirfd, names[i]) == 0;
				continue;
			}
			if (!parse_name(name, ".ev", id, &rev))
				continue;
			rec_event_record_path(id, rev, want, sizeof want);
			int ok = !strcmp(want, names[i]) && rec_event_record_read(dirfd, names[i], &ev) == 0 &&
				 !strcmp(ev.event_id, id) && ev.revision == rev && valid_camera(ev.camera) &&
				 ev.stream < 2;
			if (!ok) {
				res->event_files_set_aside += set_aside(dirfd, names[i]) == 0;
				continue;
			}
			res->records++;
			r = rec_evlog_index_add(l, &ev, 0, 0, 0);
		}
		free(names);
	}
	closedir(d);
	return r;
}

static int store_event(struct cat_txn *t, int dirfd, const struct rec_evlog_key *e, struct rec_rebuild_result *res)
{
	static kp_EventRecord ev;
	char path[CAT_PATH_MAX];
	rec_event_record_path(e->id, e->revision, path, sizeof path);
	int r = e->seg ? rec_evlog_read_item(dirfd, e->seg, e->off, &ev) : rec_event_record_read(dirfd, path, &ev);
	if (r < 0)
		return r;
	uint32_t camera_id, jpeg_len = 0;
	r = cat_camera(t, ev.camera, 0, &camera_id);
	if (r < 0)
		return r;
	if (ev.has_jpeg) {
		struct stat st;
		struct cat_tier side;
		rec_event_jpeg_path(e->id, e->revision, path, sizeof path);
		if (fstatat(dirfd, path, &st, 0) == 0 && st.st_size > 0 && st.st_size <= KP_ANALYSIS_JPEG_MAX) {
			jpeg_len = (uint32_t)st.st_size;
		} else if (rec_tier_sidecar_read(dirfd, path, &side) == 0 && side.etag[0] && side.size > 0 &&
			   side.size <= KP_ANALYSIS_JPEG_MAX) {
			jpeg_len = (uint32_t)side.size; /* in the object store (docs/tier.md, step 8) */
		} else {
			kp_warn("rebuild: event %s revision %u: its JPEG %s is gone; stored without", e->id,
				e->revision, path);
			ev.has_jpeg = false;
			ev.jpeg_width = ev.jpeg_height = 0;
			res->events_jpeg_gone++;
		}
	}
	struct cat_event_link links[2];
	unsigned n = 0;
	for (uint32_t s = 0; s < 2; s++) {
		struct rec_keyframe k;
		r = rec_keyframe_find_txn(t, cat_stream_id(camera_id, s), ev.start_ms, &k);
		if (r == 0)
			links[n++] = (struct cat_event_link){
			    .ms = k.ms, .recording_id = k.recording_id, .seq = k.seq, .stream = s};
		else if (r != -ENOENT)
			return r;
	}
	r = cat_event_put(t, camera_id, &ev, jpeg_len, links, n, NULL);
	if (r == 0)
		res->events++;
	return r;
}

struct log_scan {
	struct rec_evlog_index *l;
	struct rec_rebuild_result *res;
};

static int add_logged(void *arg, uint64_t seq, const struct rec_evlog_item *item, const kp_EventRecord *ev)
{
	struct log_scan *ls = arg;
	int tomb = item->kind == REC_EVLOG_TOMBSTONE;
	if (!tomb && (!valid_camera(ev->camera) || ev->stream >= 2)) {
		kp_warn("rebuild: event %s revision %u in event log segment %llu at %zu names no valid camera or "
			"stream; not restored",
			ev->event_id, (unsigned)ev->revision, (unsigned long long)seq, item->off);
		ls->res->log_records_refused++;
		return 0;
	}
	if (tomb)
		ls->res->tombstones++;
	else
		ls->res->records++;
	return rec_evlog_index_add(ls->l, ev, seq, item->off, tomb);
}

static int rebuild_events(struct cat *cat, int dirfd, struct rec_rebuild_result *res)
{
	struct rec_evlog_index l = {0};
	int r = scan_events(dirfd, &l, 0, res);
	struct rec_evlog_scan sc;
	struct log_scan ls = {.l = &l, .res = res};
	if (r == 0)
		r = rec_evlog_each(dirfd, add_logged, &ls, &sc);
	if (r == 0) {
		res->log_segments = sc.segments;
		res->log_segments_refused = sc.bad_segments;
		res->log_bytes_ignored = sc.bytes_ignored;
	}
	/* The JPEGs that no record names go aside (every record counts, ended or not). */
	struct rec_evlog_index recs = {0};
	for (size_t i = 0; r == 0 && i < l.n; i++)
		recs.n += !l.k[i].tombstone;
	if (r == 0 && recs.n && !(recs.k = malloc(recs.n * sizeof *recs.k)))
		r = -ENOMEM;
	for (size_t i = 0, k = 0; r == 0 && i < l.n; i++)
		if (!l.k[i].tombstone)
			recs.k[k++] = l.k[i];
	if (r == 0 && recs.n)
		qsort(recs.k, recs.n, sizeof *recs.k, by_id_newest);
	if (r == 0)
		r = scan_events(dirfd, &recs, 1, res);
	free(recs.k);
	/* What is still stored: the last record of each revision no tombstone follows. */
	size_t kept = 0;
	if (r == 0 && l.n) {
		rec_evlog_index_settle(&l);
		kept = l.n;
		qsort(l.k, kept, sizeof *l.k, by_id_newest);
	}
	/* The newest revision of each id, then in commit order (which gave the old seqs). */
	size_t n = kept;
	kept = 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		if (!kept || strcmp(l.k[kept - 1].id, l.k[i].id))
			l.k[kept++] = l.k[i];
	if (r == 0 && kept)
		qsort(l.k, kept, sizeof *l.k, by_commit);
	for (size_t i = 0; r == 0 && i < kept; i += EVENT_BATCH) {
		struct cat_txn *t;
		r = cat_begin(cat, 1, &t);
		for (size_t j = i; r == 0 && j < kept && j < i + EVENT_BATCH; j++) {
			r = store_event(t, dirfd, &l.k[j], res);
			if (r < 0)
				kp_err("rebuild: event %s revision %u: %s", l.k[j].id, l.k[j].revision, strerror(-r));
		}
		if (r == 0)
			r = cat_commit(t);
		else if (t)
			cat_abort(t);
	}
	free(l.k);
	if (r == 0) {
		struct cat_txn *t;
		r = cat_begin(cat, 1, &t);
		if (r == 0 && (r = cat_meta_set(t, "event_records", 1)) == 0)
			r = cat_commit(t);
		else if (r < 0 && t)
			cat_abort(t);
	}
	return r;
}

static int count_camera(void *arg, const char *name, uint32_t id, uint32_t days)
{
	(void)name;
	(void)id;
	(void)days;
	(*(unsigned *)arg)++;
	return 0;
}

int rec_rebuild_into(struct cat *cat, int data_dirfd, struct rec_rebuild_result *ret)
{
	struct rec_rebuild_result res = {0};
	int r = rebuild_recordings(cat, data_dirfd, &res);
	if (r == 0)
		r = rebuild_events(cat, data_dirfd, &res);
	struct cat_txn *t;
	if (r == 0 && (r = cat_begin(cat, 0, &t)) == 0) {
		r = cat_each_camera(t, count_camera, &res.cameras);
		cat_abort(t);
	}
	if (r == 0)
		*ret = res;
	return r;
}

#define NEW_DIR "catalog.rebuild"

/* What an interrupted rebuild left. */
static int remove_new_dir(int dirfd)
{
	static const char *const files[] = {NEW_DIR "/data.mdb", NEW_DIR "/lock.mdb"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		if (unlinkat(dirfd, files[i], 0) < 0 && errno != ENOENT)
			return -errno;
	return unlinkat(dirfd, NEW_DIR, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int rec_rebuild(int data_dirfd, const char *data_dir, size_t map_size, const char *tag, struct rec_rebuild_result *ret,
		char *why, size_t cap)
{
	int r = remove_new_dir(data_dirfd);
	if (r == 0 && mkdirat(data_dirfd, NEW_DIR, 0700) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(why, cap, "making %s/%s failed: %s", data_dir, NEW_DIR, strerror(-r));
		return r;
	}
	char path[1100];
	snprintf(path, sizeof path, "%s/%s", data_dir, NEW_DIR);
	struct cat *cat;
	r = cat_open_bulk(path, map_size, &cat);
	if (r < 0) {
		snprintf(why, cap, "a new catalog in %s cannot be made: %s", path, strerror(-r));
		remove_new_dir(data_dirfd);
		return r;
	}
	struct rec_rebuild_result res;
	r = rec_rebuild_into(cat, data_dirfd, &res);
	if (r < 0)
		snprintf(why, cap, "reading the files into the new catalog failed: %s", strerror(-r));
	if (r == 0 && (r = cat_sync(cat)) < 0)
		snprintf(why, cap, "syncing the new catalog failed: %s", strerror(-r));
	cat_close(cat);
	if (r == 0 && (r = rec_fsync_dir(data_dirfd, NEW_DIR)) < 0)
		snprintf(why, cap, "syncing %s failed: %s", path, strerror(-r));
	if (r < 0) {
		remove_new_dir(data_dirfd);
		return r;
	}
	/* The old data file aside (never deleted), the new one in its place. */
	res.moved_to[0] = '\0';
	if (mkdirat(data_dirfd, REC_CATALOG_DIR, 0700) < 0 && errno != EEXIST)
		r = -errno;
	if (r == 0 && faccessat(data_dirfd, DATA_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		char stamp[32], to[CAT_PATH_MAX];
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
		for (int i = 0;; i++) {
			if (i)
				snprintf(res.moved_to, sizeof res.moved_to, "data.mdb.%s-%s.%d", tag, stamp, i);
			else
				snprintf(res.moved_to, sizeof res.moved_to, "data.mdb.%s-%s", tag, stamp);
			snprintf(to, sizeof to, "%s/%s", REC_CATALOG_DIR, res.moved_to);
			if (faccessat(data_dirfd, to, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
				break;
		}
		if (renameat(data_dirfd, DATA_FILE, data_dirfd, to) < 0)
			r = -errno;
	}
	if (r == 0 && renameat(data_dirfd, NEW_DIR "/data.mdb", data_dirfd, DATA_FILE) < 0)
		r = -errno;
	if (r == 0)
		r = rec_fsync_dir(data_dirfd, REC_CATALOG_DIR);
	if (r < 0) {
		snprintf(why, cap, "moving the new catalog into %s/%s failed: %s", data_dir, REC_CATALOG_DIR,
			 strerror(-r));
		return r;
	}
	remove_new_dir(data_dirfd);
	rec_fsync_dir(data_dirfd, ".");
	*ret = res;
	return 0;
}
