/* The recording core of recorderd (see recorder.h). */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "commit.h"
#include "event_record.h"
#include "kp_build_config.h"
#include "kp_limits.h"
#include "kp_time.h"
#include "log.h"
#include "event_sweep.h"
#include "events.h"
#include "picture.h"
#include "tier.h"
#include "queries.h"
#include "rebuild.h"
#include "recovery.h"
#include "requests.h"
#include "stream.h"

struct camera {
	char name[KP_CAMERA_NAME_MAX + 1];
	uint32_t id;
	uint32_t streams; /* bit 0 main, bit 1 sub */
	uint32_t record;  /* 0 continuous, 1 events, 2 off */
	uint32_t retention_days;
	uint32_t rollover_ms; /* 0: the default */
	struct rec_stream s[2];
};

/* The camera tables: megabytes, zero at start, so kept apart from R's initialised
 * fields (an initialiser would put all of it in the binary's data section). */
static struct {
	struct camera cams[KP_MAX_CAMERAS];
	kp_CameraConfig incoming[KP_MAX_CAMERAS];
	/* While failed, the configured cameras, reported as not recording. */
	kp_CameraConfig unrecorded[KP_MAX_CAMERAS];
} T;

static struct {
	struct cat *cat;
	int data_dirfd;
	struct rec_env env;
	unsigned ncams;
	unsigned nincoming;
	uv_timer_t retention_timer;
	struct rec_backfill *backfill; /* event records for events stored before they existed */
	int started;
	int failed;
	/* Whether recording is possible, for CatalogStatus: "ok", "newer-schema" (the
	 * catalog was written by a newer KeepPeek), "error" (the catalog is damaged, or gone
	 * while files are on disk: keeppeekctl check --rebuild) or "failed" (error says
	 * why). */
	const char *catalog_state;
	uint64_t catalog_version;     /* in use; as found when unusable; 0 when not read */
	const char *unrecorded_state; /* RecordingStatus.state of every stream meanwhile */
	char error[160];
	unsigned nunrecorded;
	uint32_t max_days;
	uint64_t max_bytes;
} R = {.data_dirfd = -1, .catalog_state = "failed"};

static struct camera *camera(const char *name)
{
	for (unsigned i = 0; i < R.ncams; i++)
		if (!strcmp(T.cams[i].name, name))
			return &T.cams[i];
	return NULL;
}

void rec_config_item(struct kp_worker *w, const kp_Envelope *env)
{
	(void)w;
	if (env->which_msg != kp_Envelope_camera_config_tag)
		return;
	if (R.nincoming < KP_MAX_CAMERAS)
		T.incoming[R.nincoming++] = env->msg.camera_config;
}

static int valid_name(const char *s)
{
	if (!s[0])
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
		      *s == '_'))
			return 0;
	return 1;
}

/* Remembers why nothing is recorded: the catalog's state, the streams' state, and a
 * sentence for the operator. */
static int store_failed(int r, const char *catalog_state, const char *streams_state, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int store_failed(int r, const char *catalog_state, const char *streams_state, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(R.error, sizeof R.error, fmt, ap);
	va_end(ap);
	R.catalog_state = catalog_state;
	R.unrecorded_state = streams_state;
	return r;
}

/* The catalog cannot be used as it is: damaged, unopenable, or gone while recordings
 * are on disk. Nothing in the data directory is touched (no recovery, no sweep) until
 * the operator rebuilds it. */
static int catalog_error(int r, const char *path, const char *why)
{
	static const char hint[] = " (keeppeekctl check --rebuild)";
	kp_err("catalog %s cannot be used: %s. Not recording; nothing in the data directory is changed or "
	       "removed. `keeppeekctl check --rebuild` rebuilds the catalog from the recording files and the "
	       "event records (keeppeek-recorderd(8), Rebuilding the catalog)",
	       path, why);
	int room = (int)(sizeof R.error - sizeof "catalog: error: " - sizeof hint + 1);
	return store_failed(r, "error", "catalog-error", "catalog: error: %.*s%s", room, why, hint);
}

/* Opens the catalog and says what it found: the versions when it cannot be used, what
 * a migration changed. */
static int open_catalog(const char *path)
{
	char why[160];
	int r = rec_catalog_assess(R.data_dirfd, why, sizeof why);
	if (r < 0)
		return catalog_error(r, path, why);
	struct cat_open_report rep;
	r = cat_open_full(path, REC_CATALOG_MAP_SIZE, &rep, &R.cat);
	R.catalog_version = rep.found_version;
	if (r == -EPROTONOSUPPORT) {
		kp_err("catalog %s has schema version %llu; this build of keeppeek-recorderd (%s) reads schema "
		       "versions up to %u: it was written by a newer KeepPeek (a downgrade?). Not recording; the "
		       "catalog is left untouched. Run the newer KeepPeek again, or restore a backup made with this "
		       "version (keeppeek-recorderd(8), Upgrades and downgrades)",
		       path, (unsigned long long)rep.found_version, KP_VERSION, (unsigned)rep.version);
		return store_failed(r, "newer-schema", "catalog-unusable",
				    "catalog schema %llu is newer than this build reads (up to %u); not recording",
				    (unsigned long long)rep.found_version, (unsigned)rep.version);
	}
	if (r < 0) {
		snprintf(why, sizeof why, "%s/data.mdb cannot be opened: %s", REC_CATALOG_DIR,
			 rep.error[0] ? rep.error : strerror(-r));
		return catalog_error(r, path, why);
	}
	R.catalog_version = rep.version;
	if (rep.created)
		kp_info("catalog %s created (schema version %u)", path, (unsigned)rep.version);
	else if (rep.migrated)
		kp_notice("catalog %s migrated from schema version %llu to %u: %llu events and %llu event time "
			  "index rows of version 1 (camera alarms, in a layout that cannot be converted) dropped; "
			  "cameras, recordings, fragments, keyframes and coverage kept",
			  path, (unsigned long long)rep.found_version, (unsigned)rep.version,
			  (unsigned long long)rep.dropped_events, (unsigned long long)rep.dropped_event_times);
	else
		kp_info("catalog %s opened (schema version %u)", path, (unsigned)rep.version);
	return 0;
}

static int open_store(const kp_WorkerConfig *wc)
{
	if (R.data_dirfd < 0)
		R.data_dirfd = open(wc->data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (R.data_dirfd < 0) {
		int e = errno;
		kp_err("data directory %s cannot be opened: %s; not recording", wc->data_dir, strerror(e));
		return store_failed(-e, "failed", "failed", "data directory cannot be opened: %s; not recording",
				    strerror(e));
	}
	char path[1100];
	snprintf(path, sizeof path, "%s/%s", wc->data_dir, REC_CATALOG_DIR);
	int r = open_catalog(path);
	if (r < 0)
		return r;
	struct rec_recovery_result rr;
	r = rec_recover(R.cat, R.data_dirfd, &rr);
	if (r < 0) {
		kp_err("start-up recovery failed: %s; not recording", strerror(-r));
		return store_failed(r, "failed", "failed", "start-up recovery failed: %s; not recording", strerror(-r));
	}
	kp_info("recovery: %u files checked, %u fragments indexed, %u files truncated, %u removed, %u rows "
		"without a file removed",
		rr.files_checked, rr.fragments_indexed, rr.files_truncated, rr.files_removed, rr.rows_removed);
	struct rec_sweep_result sw;
	r = rec_events_sweep(R.cat, R.data_dirfd, &sw);
	if (r < 0)
		kp_err("start-up sweep of event JPEGs failed: %s; unreferenced files may stay", strerror(-r));
	else if (sw.files_removed)
		kp_info("recovery: %u of %u event files were not referenced by the catalog and were removed",
			sw.files_removed, sw.files_checked);
	struct cat_txn *t;
	r = cat_begin(R.cat, 0, &t);
	if (r == 0) {
		r = cat_next_recording_id(t, &R.env.next_recording_id);
		cat_abort(t);
	}
	if (r == 0)
		r = rec_commit_new(R.cat, R.data_dirfd, &R.env.commit);
	if (r < 0) {
		kp_err("starting the catalog committer failed: %s; not recording", strerror(-r));
		return store_failed(r, "failed", "failed", "starting the catalog committer failed: %s; not recording",
				    strerror(-r));
	}
	r = rec_event_records_backfill_start(R.cat, R.data_dirfd, &R.backfill);
	if (r < 0)
		kp_err("event records: cannot start writing the records of stored events: %s; tried again at the "
		       "next start",
		       strerror(-r));
	R.env.data_dirfd = R.data_dirfd;
	R.catalog_state = "ok";
	R.error[0] = '\0';
	return 0;
}

static void on_retention(uv_timer_t *t)
{
	(void)t;
	if (!R.max_days && !R.max_bytes) {
		int any = 0;
		for (unsigned i = 0; i < R.ncams; i++)
			any |= T.cams[i].retention_days != 0;
		if (!any)
			return;
	}
	struct rec_retention_policy p = {
	    .max_days = R.max_days, .max_bytes = R.max_bytes, .now_ms = kp_wall_ms(), .events = 1};
	rec_commit_retention(R.env.commit, &p);
}

/* Applies the camera list received in this batch: new cameras get catalog ids, removed
 * ones close their files, changed ones keep recording. */
static void apply_cameras(void)
{
	struct cat_txn *t;
	int r = cat_begin(R.cat, 1, &t);
	if (r < 0) {
		kp_err("catalog: updating cameras failed: %s", strerror(-r));
		return;
	}
	for (unsigned i = 0; i < R.ncams; i++) {
		int kept = 0;
		for (unsigned j = 0; j < R.nincoming; j++)
			kept |= !strcmp(T.incoming[j].name, T.cams[i].name);
		if (!kept) {
			kp_info("%s: removed from the configuration; its recordings stay", T.cams[i].name);
			rec_stream_close(&T.cams[i].s[0]);
			rec_stream_close(&T.cams[i].s[1]);
			T.cams[i] = T.cams[--R.ncams];
			i--;
		}
	}
	for (unsigned j = 0; j < R.nincoming && r == 0; j++) {
		const kp_CameraConfig *cc = &T.incoming[j];
		if (!valid_name(cc->name)) {
			kp_err("camera name \"%s\" is not usable as a directory name; not recording it", cc->name);
			continue;
		}
		struct camera *c = camera(cc->name);
		uint32_t id;
		r = cat_camera(t, cc->name, cc->retention_days, &id);
		if (r < 0)
			break;
		if (!c) {
			c = &T.cams[R.ncams++];
			memset(c, 0, sizeof *c);
			_Static_assert(sizeof c->name == sizeof cc->name, "camera name sizes");
			memcpy(c->name, cc->name, sizeof c->name);
			for (uint32_t s = 0; s < 2; s++)
				rec_stream_init(&c->s[s], &R.env, c->name, s, id);
		}
		c->id = id;
		c->streams = cc->streams;
		c->record = cc->record;
		c->retention_days = cc->retention_days;
		c->rollover_ms = cc->rollover_secs * 1000u;
		for (uint32_t s = 0; s < 2; s++) {
			c->s[s].rollover_ms = c->rollover_ms;
			c->s[s].events_only = c->record == 1;
		}
		for (uint32_t s = 0; s < 2; s++)
			if (c->record == 2 || !(c->streams & (1u << s)))
				rec_stream_close(&c->s[s]);
	}
	if (r == 0)
		r = cat_commit(t);
	else
		cat_abort(t);
	if (r < 0)
		kp_err("catalog: updating cameras failed: %s", strerror(-r));
	R.nincoming = 0;
}

/* The catalog is open and recovered: questions, publications and retention. */
static void start_store(struct kp_worker *w)
{
	R.started = 1;
	rec_requests_open(w, R.cat, R.data_dirfd);
	rec_queries_open(w, R.cat, R.data_dirfd);
	rec_events_open(w, R.cat, R.env.commit, rec_arm_camera);
	rec_picture_open(w, R.cat);
	rec_commit_on_removed(R.env.commit, rec_picture_removed);
	rec_tier_open(w, R.cat, R.env.commit, R.data_dirfd);
	uv_timer_init(kp_worker_loop(w), &R.retention_timer);
	uv_timer_start(&R.retention_timer, on_retention, 5000, REC_RETENTION_EVERY_MS);
}

static void on_timer_closed(uv_handle_t *h)
{
	(void)h;
}

/* Everything start_store and open_store began, in the order that answers what was
 * asked: the streams write their GOPs, the committer commits them and the publications
 * waiting, their askers get answers; then the catalog closes. The data directory stays. */
static void close_store(void)
{
	rec_tier_close();
	rec_requests_close();
	rec_queries_close();
	for (unsigned i = 0; i < R.ncams; i++)
		for (uint32_t s = 0; s < 2; s++)
			rec_stream_close(&T.cams[i].s[s]);
	R.ncams = 0;
	rec_commit_on_removed(R.env.commit, NULL);
	rec_commit_stop(R.env.commit);
	rec_events_finish();
	rec_events_close();
	rec_picture_close();
	rec_event_records_backfill_stop(R.backfill);
	R.backfill = NULL;
	rec_commit_free(R.env.commit);
	R.env.commit = NULL;
	uv_close((uv_handle_t *)&R.retention_timer, on_timer_closed);
	cat_close(R.cat);
	R.cat = NULL;
	R.started = 0;
}

/* The worker configuration and the camera list of this batch. */
static void apply_config(struct kp_worker *w)
{
	const kp_WorkerConfig *wc = kp_worker_config(w);
	R.env.rollover_ms = wc->record_rollover_secs ? wc->record_rollover_secs * 1000u : REC_DEFAULT_ROLLOVER_MS;
	R.max_days = wc->retention_max_days;
	R.max_bytes = (uint64_t)wc->retention_max_disk_mb * 1000000u;
	rec_commit_quota(R.env.commit, R.max_bytes);
	apply_cameras();
}

void rec_configured(struct kp_worker *w, uint32_t generation)
{
	(void)generation;
	const kp_WorkerConfig *wc = kp_worker_config(w);
	/* The cameras of this batch: reported as not recording while nothing is, recorded
	 * again after a rebuild. */
	memcpy(T.unrecorded, T.incoming, R.nincoming * sizeof T.incoming[0]);
	R.nunrecorded = R.nincoming;
	if (!R.started && !R.failed) {
		if (open_store(wc) < 0)
			R.failed = 1;
		else
			start_store(w);
	}
	if (!R.started) {
		R.nincoming = 0;
		rec_report(w);
		return;
	}
	apply_config(w);
	rec_report(w);
}

void rec_access_unit(const kp_AccessUnit *au, const uint8_t *data, size_t len)
{
	if (!R.started)
		return;
	struct camera *c = camera(au->camera);
	if (!c || au->stream > 1 || c->record == 2 || !(c->streams & (1u << au->stream)))
		return;
	if (au->codec != kp_Codec_CODEC_H264 && au->codec != kp_Codec_CODEC_H265)
		return;
	rec_stream_frame(&c->s[au->stream], au->codec == kp_Codec_CODEC_H265 ? KP_CODEC_H265 : KP_CODEC_H264,
			 au->keyframe, au->pts_90k, au->dts_90k, au->wall_us, au->width, au->height, au->seq, data,
			 len);
}

void rec_audio_unit(const kp_AudioUnit *au, const uint8_t *data, size_t len)
{
	if (!R.started)
		return;
	struct camera *c = camera(au->camera);
	if (!c || au->stream != 0 || c->record == 2 || !(c->streams & 1u))
		return;
	struct kp_audio_format fmt = {.codec = KP_AUDIO_OPUS, .rate = 48000, .channels = au->channels};
	if (au->codec == kp_AudioCodec_AUDIO_AAC) {
		if (kp_aac_config_parse(au->config.bytes, au->config.size, &fmt) < 0)
			return;
	} else if (au->codec != kp_AudioCodec_AUDIO_OPUS || au->channels < 1 || au->channels > 2) {
		return; /* Opus: RFC 7587 streams are mono or stereo */
	}
	rec_stream_audio(&c->s[0], &fmt, au->pts_90k, au->samples ? au->samples : fmt.frame_samples, data, len);
}

void rec_camera_event(const kp_CameraEvent *e)
{
	if (!R.started)
		return;
	struct camera *c = camera(e->camera);
	if (!c)
		return;
	rec_arm_camera(c->name, e->wall_ms);
	rec_event_camera(e);
}

void rec_arm_camera(const char *name, int64_t event_end_ms)
{
	struct camera *c = camera(name);
	if (!c || c->record != 1)
		return;
	/* An end in the future (a publisher's clock, a long event) arms from now only. */
	int64_t now = kp_wall_ms();
	for (uint32_t s = 0; s < 2; s++)
		rec_stream_arm(&c->s[s], (event_end_ms < now ? event_end_ms : now) + REC_EVENT_POST_MS);
}

static const char *state_name(const struct camera *c, const struct rec_stream *st)
{
	if (c->record == 2)
		return "off";
	if (c->record == 1 && st->fd < 0 && st->state == REC_RECORDING)
		return "events-idle";
	return rec_stream_state_name(st->state);
}

static void send_catalog_status(struct kp_worker *w)
{
	kp_Envelope env = kp_Envelope_init_zero;
	env.which_msg = kp_Envelope_catalog_status_tag;
	kp_CatalogStatus *cs = &env.msg.catalog_status;
	snprintf(cs->state, sizeof cs->state, "%s", R.catalog_state);
	cs->schema_version = R.catalog_version;
	cs->supported_version = CAT_SCHEMA_VERSION;
	snprintf(cs->error, sizeof cs->error, "%s", R.error);
	kp_worker_send_supervisor(w, &env);
}

/* While nothing can be recorded, every configured stream says so. */
static void report_unrecorded(struct kp_worker *w)
{
	const char *state = R.unrecorded_state ? R.unrecorded_state : "failed";
	for (unsigned i = 0; i < R.nunrecorded; i++)
		for (uint32_t s = 0; s < 2; s++) {
			const kp_CameraConfig *cc = &T.unrecorded[i];
			if (!(cc->streams & (1u << s)))
				continue;
			kp_Envelope env = kp_Envelope_init_zero;
			env.which_msg = kp_Envelope_recording_status_tag;
			kp_RecordingStatus *rs = &env.msg.recording_status;
			snprintf(rs->camera, sizeof rs->camera, "%s", cc->name);
			rs->stream = s;
			snprintf(rs->state, sizeof rs->state, "%s", cc->record == 2 ? "off" : state);
			snprintf(rs->last_error, sizeof rs->last_error, "%s", R.error);
			kp_worker_send_supervisor(w, &env);
		}
}

void rec_report(struct kp_worker *w)
{
	send_catalog_status(w);
	if (!R.started) {
		report_unrecorded(w);
		return;
	}
	for (unsigned i = 0; i < R.ncams; i++)
		for (uint32_t s = 0; s < 2; s++) {
			const struct rec_stream *st = &T.cams[i].s[s];
			if (!(T.cams[i].streams & (1u << s)))
				continue;
			kp_Envelope env = kp_Envelope_init_zero;
			env.which_msg = kp_Envelope_recording_status_tag;
			kp_RecordingStatus *rs = &env.msg.recording_status;
			snprintf(rs->camera, sizeof rs->camera, "%s", st->camera);
			rs->stream = s;
			snprintf(rs->state, sizeof rs->state, "%s", state_name(&T.cams[i], st));
			snprintf(rs->last_error, sizeof rs->last_error, "%s", st->last_error);
			rs->fragments = st->fragments;
			rs->bytes_written = st->bytes_written;
			rs->frames_dropped = st->frames_dropped;
			kp_worker_send_supervisor(w, &env);
		}
}

/* ---- keeppeekctl check --rebuild ---- */

static struct {
	struct kp_worker *w;
	int running;
	int async_open;
	uv_async_t done;
	pthread_t thread;
	uint32_t id;
	int json;
	char tag[16];
	char data_dir[sizeof(((kp_WorkerConfig *)0)->data_dir)];
	uint64_t t0_ms;
	int err;
	char why[200];
	struct rec_rebuild_result res;
} RB;

static void *rebuild_thread(void *arg)
{
	(void)arg;
	RB.err = rec_rebuild(R.data_dirfd, RB.data_dir, REC_CATALOG_MAP_SIZE, RB.tag, &RB.res, RB.why, sizeof RB.why);
	uv_async_send(&RB.done);
	return NULL;
}

/* After the rebuild (or its failure): open what is there, as at start. */
static void on_rebuild_done(uv_async_t *h)
{
	(void)h;
	if (!RB.running)
		return;
	pthread_join(RB.thread, NULL);
	RB.running = 0;
	long ms = (long)(kp_mono_ms() - RB.t0_ms);
	const struct rec_rebuild_result *res = &RB.res;
	if (RB.err == 0)
		kp_notice("rebuild: catalog rebuilt from the files in %ld ms: %u cameras; %u recordings (%llu "
			  "fragments) from %u files, %u set aside; %u events from %u records (%u without their "
			  "JPEG), %u event files set aside; event log: %u segments, %u tombstones, %llu bytes "
			  "not whole items ignored, %u segments and %u records refused; old data file: %s",
			  ms, res->cameras, res->recordings, (unsigned long long)res->fragments, res->files,
			  res->files_set_aside, res->events, res->records, res->events_jpeg_gone,
			  res->event_files_set_aside, res->log_segments, res->tombstones,
			  (unsigned long long)res->log_bytes_ignored, res->log_segments_refused,
			  res->log_records_refused, res->moved_to[0] ? res->moved_to : "none");
	else
		kp_err("rebuild: failed: %s; the catalog is as it was", RB.why);
	R.failed = 0;
	const kp_WorkerConfig *wc = kp_worker_config(RB.w);
	if (open_store(wc) < 0) {
		R.failed = 1;
	} else {
		start_store(RB.w);
		memcpy(T.incoming, T.unrecorded, R.nunrecorded * sizeof T.incoming[0]);
		R.nincoming = R.nunrecorded;
		apply_config(RB.w);
	}
	rec_report(RB.w);
	struct jbuf b;
	jb_init(&b, 16384);
	int code = RB.err == 0 && R.started ? 0 : 1;
	if (RB.json) {
		jb_printf(&b, "{\"rebuilt\":%s,\"error\":", RB.err == 0 ? "true" : "false");
		jb_str(&b, RB.err == 0 ? "" : RB.why);
		jb_printf(&b,
			  ",\"ms\":%ld,\"cameras\":%u,\"files\":%u,\"recordings\":%u,\"fragments\":%llu,"
			  "\"remote\":%u,\"files_set_aside\":%u,\"records\":%u,\"events\":%u,\"events_jpeg_gone\":%u,"
			  "\"event_files_set_aside\":%u,\"log_segments\":%u,\"tombstones\":%u,"
			  "\"log_bytes_ignored\":%llu,\"log_segments_refused\":%u,\"log_records_refused\":%u,"
			  "\"moved_to\":",
			  ms, res->cameras, res->files, res->recordings, (unsigned long long)res->fragments,
			  res->remote, res->files_set_aside, res->records, res->events, res->events_jpeg_gone,
			  res->event_files_set_aside, res->log_segments, res->tombstones,
			  (unsigned long long)res->log_bytes_ignored, res->log_segments_refused,
			  res->log_records_refused);
		if (res->moved_to[0])
			jb_printf(&b, "\"%s/%s\"", REC_CATALOG_DIR, res->moved_to);
		else
			jb_printf(&b, "null");
		jb_printf(&b, ",\"recording\":%s,\"catalog_error\":", R.started ? "true" : "false");
		jb_str(&b, R.started ? "" : R.error);
		jb_printf(&b, "}\n");
	} else if (RB.err == 0) {
		jb_printf(&b,
			  "catalog rebuilt from the files in %ld ms\n"
			  "recordings: %u from %u files (%llu fragments, %u with their media in the store); %u "
			  "files set aside in %s/\n"
			  "events: %u from %u records (%u without their JPEG, which is gone); %u event files set "
			  "aside in %s/\n"
			  "event log: %u segments, %u tombstones; %llu bytes that are not whole items ignored (torn "
			  "tails); %u segments and %u records refused\n"
			  "cameras: %u\n",
			  ms, res->recordings, res->files, (unsigned long long)res->fragments, res->remote,
			  res->files_set_aside, REC_UNINDEXED_DIR, res->events, res->records, res->events_jpeg_gone,
			  res->event_files_set_aside, REC_UNINDEXED_DIR, res->log_segments, res->tombstones,
			  (unsigned long long)res->log_bytes_ignored, res->log_segments_refused,
			  res->log_records_refused, res->cameras);
		if (res->moved_to[0])
			jb_printf(&b, "the old data file is now %s/%s (kept: remove it when the catalog is good)\n",
				  REC_CATALOG_DIR, res->moved_to);
		jb_printf(&b, "%s%s\n", R.started ? "recording" : "still not recording: ", R.started ? "" : R.error);
	} else {
		jb_printf(&b, "rebuild failed: %s; the catalog is as it was\n%s%s\n", RB.why,
			  R.started ? "recording" : "not recording: ", R.started ? "" : R.error);
	}
	if (b.failed)
		rec_send_text(RB.w, RB.id, 1, "rebuild: %s; out of memory for the answer\n",
			      RB.err == 0 ? "done" : "failed");
	else
		rec_send_answer(RB.w, RB.id, code, b.p, b.len);
	jb_free(&b);
}

void rec_rebuild_request(struct kp_worker *w, uint32_t id, int json)
{
	if (RB.running) {
		rec_send_text(w, id, 1, "a rebuild is already running\n");
		return;
	}
	if (R.data_dirfd < 0) {
		rec_send_text(w, id, 1, "recorderd cannot rebuild: %s\n", R.error);
		return;
	}
	if (!strcmp(R.catalog_state, "newer-schema")) {
		rec_send_text(w, id, 1,
			      "not rebuilt: the catalog is not damaged, it was written by a newer KeepPeek (%s); run "
			      "that again, or restore a backup (keeppeek-recorderd(8), Upgrades and downgrades)\n",
			      R.error);
		return;
	}
	if (R.started) {
		/* A catalog in use is rebuilt only when every stored event has its record. */
		uint64_t records = 0;
		struct cat_txn *t;
		int r = cat_begin(R.cat, 0, &t);
		if (r == 0) {
			r = cat_meta_get(t, "event_records", &records);
			cat_abort(t);
		}
		if (r < 0 || !records) {
			rec_send_text(
			    w, id, 1,
			    "not rebuilt: the records of the events stored before this version are still being "
			    "written (see the log); try again when that is done\n");
			return;
		}
	}
	RB.w = w;
	if (!RB.async_open) {
		uv_async_init(kp_worker_loop(w), &RB.done, on_rebuild_done);
		RB.async_open = 1;
	}
	snprintf(RB.tag, sizeof RB.tag, "%s", R.started ? "replaced" : "damaged");
	snprintf(RB.data_dir, sizeof RB.data_dir, "%s", kp_worker_config(w)->data_dir);
	RB.id = id;
	RB.json = json;
	memset(&RB.res, 0, sizeof RB.res);
	RB.why[0] = '\0';
	if (R.started) {
		kp_notice("rebuild: recording stops while the catalog is rebuilt from the files");
		close_store();
	} else if (R.cat) { /* opened, then recovery or the committer failed */
		cat_close(R.cat);
		R.cat = NULL;
	}
	R.failed = 1; /* no opening at a reload meanwhile */
	store_failed(0, "rebuilding", "catalog-rebuilding",
		     "catalog: rebuilding from the files (keeppeekctl check --rebuild)");
	RB.t0_ms = kp_mono_ms();
	int r = -pthread_create(&RB.thread, NULL, rebuild_thread, NULL);
	if (r < 0) {
		snprintf(RB.why, sizeof RB.why, "cannot start its thread: %s", strerror(-r));
		RB.err = r;
		RB.running = 1;
		uv_async_send(&RB.done);
		return;
	}
	RB.running = 1;
	kp_notice("rebuild: building a new catalog from the recording files and event records");
	rec_report(w);
}

static void rebuild_stop(void)
{
	if (RB.running)
		kp_warn("rebuild: stopping in the middle of it; data.mdb is refused at the next start until "
			"keeppeekctl check --rebuild runs again");
	if (RB.async_open)
		uv_close((uv_handle_t *)&RB.done, NULL);
	RB.async_open = 0;
}

void rec_stop(struct kp_worker *w)
{
	(void)w;
	rebuild_stop();
	if (!R.started)
		return;
	close_store();
	close(R.data_dirfd);
	R.data_dirfd = -1;
}

const char *rec_catalog_error(void)
{
	return R.error;
}

void rec_metrics(struct jbuf *b, struct cat *cat)
{
	static const char *const states[] = {"idle",   "recording", "waiting-keyframe", "disk-full",
					     "failed", "off",       "events-idle"};
	jb_printf(b, "# HELP keeppeek_recorderd_recording_state Recording state of each stream (1: current).\n"
		     "# TYPE keeppeek_recorderd_recording_state gauge\n");
	for (unsigned i = 0; i < R.ncams; i++)
		for (uint32_t s = 0; s < 2; s++) {
			if (!(T.cams[i].streams & (1u << s)))
				continue;
			const char *now = state_name(&T.cams[i], &T.cams[i].s[s]);
			for (unsigned k = 0; k < sizeof states / sizeof states[0]; k++)
				jb_printf(
				    b,
				    "keeppeek_recorderd_recording_state{camera=\"%s\",stream=\"%s\",state=\"%s\"} %d\n",
				    T.cams[i].name, s ? "sub" : "main", states[k], !strcmp(now, states[k]));
		}
	static const struct {
		const char *name, *help;
		int counter;
	} per[] = {
	    {"fragments_total", "Fragments written since recorderd started.", 1},
	    {"bytes_written_total", "Media bytes written since recorderd started.", 1},
	    {"frames_dropped_total", "Access units not recorded (waiting for a keyframe, disk full, errors).", 1},
	    {"disk_full", "1 while the stream cannot write because the disk is full.", 0},
	};
	for (unsigned m = 0; m < sizeof per / sizeof per[0]; m++) {
		jb_printf(b, "# HELP keeppeek_recorderd_%s %s\n# TYPE keeppeek_recorderd_%s %s\n", per[m].name,
			  per[m].help, per[m].name, per[m].counter ? "counter" : "gauge");
		for (unsigned i = 0; i < R.ncams; i++)
			for (uint32_t s = 0; s < 2; s++) {
				const struct rec_stream *st = &T.cams[i].s[s];
				if (!(T.cams[i].streams & (1u << s)))
					continue;
				uint64_t v = m == 0   ? st->fragments
					     : m == 1 ? st->bytes_written
					     : m == 2 ? st->frames_dropped
						      : st->state == REC_DISK_FULL;
				jb_printf(b, "keeppeek_recorderd_%s{camera=\"%s\",stream=\"%s\"} %llu\n", per[m].name,
					  T.cams[i].name, s ? "sub" : "main", (unsigned long long)v);
			}
	}
	if (!R.env.commit)
		return;
	struct rec_commit_stats cs;
	rec_commit_get_stats(R.env.commit, &cs);
	static const char *const le[REC_COMMIT_BUCKETS] = {"0.005", "0.01", "0.025", "0.05", "0.1",
							   "0.25",  "0.5",  "1",     "2.5"};
	jb_printf(b, "# HELP keeppeek_recorderd_commit_seconds Group commit latency (media sync + catalog "
		     "transaction).\n# TYPE keeppeek_recorderd_commit_seconds histogram\n");
	for (int i = 0; i < REC_COMMIT_BUCKETS; i++)
		jb_printf(b, "keeppeek_recorderd_commit_seconds_bucket{le=\"%s\"} %llu\n", le[i],
			  (unsigned long long)cs.le[i]);
	jb_printf(b,
		  "keeppeek_recorderd_commit_seconds_bucket{le=\"+Inf\"} %llu\n"
		  "keeppeek_recorderd_commit_seconds_sum %.6f\nkeeppeek_recorderd_commit_seconds_count %llu\n",
		  (unsigned long long)cs.commits, (double)cs.sum_us / 1e6, (unsigned long long)cs.commits);
	uint64_t size = 0, media = 0, events = 0;
	struct cat_txn *t;
	if (cat_size(cat, &size) == 0 && cat_begin(cat, 0, &t) == 0) {
		cat_total_bytes(t, &media);
		cat_event_count(t, &events);
		cat_abort(t);
	}
	jb_printf(b,
		  "# HELP keeppeek_recorderd_catalog_bytes Bytes of the LMDB catalog in use.\n"
		  "# TYPE keeppeek_recorderd_catalog_bytes gauge\nkeeppeek_recorderd_catalog_bytes %llu\n"
		  "# HELP keeppeek_recorderd_catalog_recorded_bytes Media bytes the catalog indexes.\n"
		  "# TYPE keeppeek_recorderd_catalog_recorded_bytes gauge\n"
		  "keeppeek_recorderd_catalog_recorded_bytes %llu\n"
		  "# HELP keeppeek_recorderd_catalog_events Events in the catalog.\n"
		  "# TYPE keeppeek_recorderd_catalog_events gauge\nkeeppeek_recorderd_catalog_events %llu\n",
		  (unsigned long long)size, (unsigned long long)media, (unsigned long long)events);
	rec_tier_metrics(b);
}
