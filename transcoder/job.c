/* The job table and each job's thread and queues (see job.h). */
#include "job.h"

#include <errno.h>
#include <libavutil/mathematics.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio.h"
#include "kp_limits.h"
#include "log.h"
#include "picture.h"
#include "video.h"

#define WALL_RING 64 /* input pts -> wall clock of recent frames */

struct item {
	uint8_t *data;
	size_t len;
	bool keyframe;
	int64_t pts, wall_ms;
	unsigned width, height, rate, channels;
};

struct job {
	struct job *next;
	kp_Peer peer;
	uint32_t id;
	kp_TranscodeKind kind;
	char name[96];
	unsigned rate, channels;
	uint8_t config[64];
	size_t config_len;
	unsigned width, codec; /* picture */
	int64_t out_clock;     /* output pts units per second */

	/* Loop thread only. */
	bool stopping, joined;
	uv_async_t async;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock. */
	struct item in[TX_IN_MAX];
	unsigned in_head, in_len;
	size_t in_bytes;
	bool in_wait_key; /* dropping input up to the next keyframe */
	struct item out[TX_OUT_MAX];
	unsigned out_head, out_len;
	bool force_key;
	bool stop, exited;
	int error; /* why the thread exited on its own */
	struct {
		int64_t pts, wall; /* pts on the output clock */
	} walls[WALL_RING];
	unsigned wall_next;
	uint64_t dropped_in, dropped_out;
};

static uv_loop_t *loop;
static struct tx_job_hooks hooks;
static struct job *jobs;
static unsigned max_video = 2, max_audio = KP_TRANSCODE_AUDIO_JOBS;

void tx_jobs_init(uv_loop_t *l, const struct tx_job_hooks *h)
{
	loop = l;
	hooks = *h;
}

void tx_jobs_set_max(unsigned video, unsigned audio)
{
	max_video = video;
	max_audio = audio;
}

unsigned tx_jobs_running(kp_TranscodeKind kind)
{
	unsigned n = 0;
	for (struct job *j = jobs; j; j = j->next)
		n += j->kind == kind && !j->stopping;
	return n;
}

static struct job *find(kp_Peer peer, uint32_t id)
{
	for (struct job *j = jobs; j; j = j->next)
		if (j->peer == peer && j->id == id && !j->stopping)
			return j;
	return NULL;
}

static void item_free(struct item *it)
{
	free(it->data);
	it->data = NULL;
}

/* The job's thread: called by its codec for every encoded frame. */
static void on_encoded(void *arg, const struct tx_packet *p)
{
	struct job *j = arg;
	uint8_t *copy = malloc(p->len ? p->len : 1);
	if (!copy) {
		kp_err("job %s: no memory for a %zu-byte output frame", j->name, p->len);
		return;
	}
	memcpy(copy, p->data, p->len);
	pthread_mutex_lock(&j->lock);
	/* The wall clock of the latest input at or before this pts, moved on by the difference. */
	int64_t wall = 0, best = INT64_MIN;
	for (unsigned i = 0; i < WALL_RING; i++)
		if (j->walls[i].pts != INT64_MIN && j->walls[i].pts <= p->pts && j->walls[i].pts > best) {
			best = j->walls[i].pts;
			wall = j->walls[i].wall + (p->pts - best) * 1000 / j->out_clock;
		}
	if (j->out_len == TX_OUT_MAX) {
		/* The loop is behind: drop, and restart the video at an IDR. */
		free(copy);
		j->force_key = true;
		j->dropped_out++;
	} else {
		j->out[(j->out_head + j->out_len++) % TX_OUT_MAX] = (struct item){
		    .data = copy,
		    .len = p->len,
		    .keyframe = p->keyframe,
		    .pts = p->pts,
		    .wall_ms = wall,
		    .width = p->width,
		    .height = p->height,
		    .rate = p->rate,
		    .channels = p->channels,
		};
	}
	pthread_mutex_unlock(&j->lock);
	uv_async_send(&j->async);
}

/* A picture job's one frame: the JPEG out, then the job ends (error 0). */
static int picture(struct job *j, const struct item *it)
{
	uint8_t *jpeg = NULL;
	size_t len = 0;
	int r = tx_picture_make((enum tx_picture_codec)j->codec, it->data, it->len, j->width, &jpeg, &len);
	if (r == 0) {
		on_encoded(j, &(struct tx_packet){.data = jpeg, .len = len, .keyframe = true, .pts = it->pts});
		free(jpeg);
	}
	return r;
}

static int codec_open(struct job *j, struct tx_video **v, struct tx_audio **a)
{
	if (j->kind == kp_TranscodeKind_TRANSCODE_PICTURE)
		return 0;
	if (j->kind == kp_TranscodeKind_TRANSCODE_H265_H264)
		return tx_video_open(j->name, v);
	return tx_audio_open(j->name, j->rate, j->channels, j->config, j->config_len, a);
}

static void *run(void *arg)
{
	struct job *j = arg;
	struct tx_video *v = NULL;
	struct tx_audio *a = NULL;
	int e = codec_open(j, &v, &a);
	pthread_mutex_lock(&j->lock);
	while (e == 0 && !j->stop) {
		if (!j->in_len) {
			pthread_cond_wait(&j->cond, &j->lock);
			continue;
		}
		struct item it = j->in[j->in_head];
		j->in_head = (j->in_head + 1) % TX_IN_MAX;
		j->in_len--;
		j->in_bytes -= it.len;
		bool force = j->force_key;
		j->force_key = false;
		int64_t out_pts = v ? it.pts : av_rescale(it.pts, j->out_clock, j->rate);
		j->walls[j->wall_next].pts = out_pts;
		j->walls[j->wall_next].wall = it.wall_ms;
		j->wall_next = (j->wall_next + 1) % WALL_RING;
		pthread_mutex_unlock(&j->lock);
		int r = j->kind == kp_TranscodeKind_TRANSCODE_PICTURE ? picture(j, &it)
			: v ? tx_video_push(v, it.data, it.len, it.pts, force, on_encoded, j)
			    : tx_audio_push(a, it.data, it.len, it.pts, on_encoded, j);
		item_free(&it);
		pthread_mutex_lock(&j->lock);
		if (j->kind == kp_TranscodeKind_TRANSCODE_PICTURE) {
			e = r; /* one picture, made or not */
			break;
		}
		if (r == -ENOSYS || r == -ENOTSUP || r == -ENOMEM) {
			e = r; /* nothing later will go better */
			break;
		}
		if (r < 0)
			j->in_wait_key = true;
	}
	j->error = e;
	j->exited = true;
	pthread_mutex_unlock(&j->lock);
	tx_video_free(v);
	tx_audio_free(a);
	uv_async_send(&j->async);
	return NULL;
}

static void job_free(uv_handle_t *h)
{
	struct job *j = h->data;
	for (unsigned i = 0; i < j->in_len; i++)
		item_free(&j->in[(j->in_head + i) % TX_IN_MAX]);
	for (unsigned i = 0; i < j->out_len; i++)
		item_free(&j->out[(j->out_head + i) % TX_OUT_MAX]);
	pthread_mutex_destroy(&j->lock);
	pthread_cond_destroy(&j->cond);
	free(j);
}

static void unlink_job(struct job *j)
{
	for (struct job **p = &jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			return;
		}
}

/* Asks the thread to stop; on_async joins it once it has exited and frees the job. */
static void stop(struct job *j)
{
	if (j->stopping)
		return;
	j->stopping = true;
	pthread_mutex_lock(&j->lock);
	j->stop = true;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

static void on_async(uv_async_t *as)
{
	struct job *j = as->data;
	if (j->joined)
		return;
	struct item out[TX_OUT_MAX];
	pthread_mutex_lock(&j->lock);
	unsigned n = j->out_len;
	for (unsigned i = 0; i < n; i++)
		out[i] = j->out[(j->out_head + i) % TX_OUT_MAX];
	j->out_head = (j->out_head + n) % TX_OUT_MAX;
	j->out_len = 0;
	bool exited = j->exited;
	int error = j->error;
	pthread_mutex_unlock(&j->lock);
	for (unsigned i = 0; i < n; i++) {
		struct tx_frame f = {
		    .peer = j->peer,
		    .job = j->id,
		    .data = out[i].data,
		    .len = out[i].len,
		    .keyframe = out[i].keyframe,
		    .pts = out[i].pts,
		    .wall_ms = out[i].wall_ms,
		    .width = out[i].width,
		    .height = out[i].height,
		    .rate = out[i].rate,
		    .channels = out[i].channels,
		    .dropped_in = j->dropped_in,
		    .dropped_out = j->dropped_out,
		};
		if (!j->stopping && !hooks.out(hooks.arg, &f)) {
			pthread_mutex_lock(&j->lock);
			j->dropped_out++;
			j->force_key = true;
			pthread_mutex_unlock(&j->lock);
		}
		item_free(&out[i]);
	}
	if (!exited)
		return;
	int e = pthread_join(j->thread, NULL);
	if (e)
		kp_err("job %s: joining its thread: %s", j->name, strerror(e));
	if (j->dropped_in || j->dropped_out)
		kp_notice("job %s: %llu input and %llu output frames dropped (too slow)", j->name,
			  (unsigned long long)j->dropped_in, (unsigned long long)j->dropped_out);
	j->joined = true;
	unlink_job(j);
	if (!j->stopping && j->kind == kp_TranscodeKind_TRANSCODE_PICTURE) {
		if (error)
			kp_warn("job %s: the keyframe made no picture: %s", j->name, strerror(-error));
		j->stopping = true;
		hooks.ended(hooks.arg, j->peer, j->id, error, error ? "the keyframe did not decode" : "done");
	} else if (!j->stopping) {
		kp_warn("job %s ended: its codec failed (%s)", j->name, strerror(-error));
		j->stopping = true;
		hooks.ended(hooks.arg, j->peer, j->id, error, "its codec failed");
	}
	uv_close((uv_handle_t *)&j->async, job_free);
}

int tx_job_open(const struct tx_job_open *o, char *why, size_t whylen)
{
	why[0] = '\0';
	bool video = o->kind == kp_TranscodeKind_TRANSCODE_H265_H264;
	bool pic = o->kind == kp_TranscodeKind_TRANSCODE_PICTURE;
	if (!video && !pic && o->kind != kp_TranscodeKind_TRANSCODE_AAC_OPUS) {
		snprintf(why, whylen, "unknown job kind %d", (int)o->kind);
		return -EINVAL;
	}
	if (o->config_len > sizeof((struct job *)0)->config) {
		snprintf(why, whylen, "AudioSpecificConfig of %zu bytes", o->config_len);
		return -EINVAL;
	}
	if (pic && o->codec != TX_PICTURE_H264 && o->codec != TX_PICTURE_H265) {
		snprintf(why, whylen, "a picture of codec %u", o->codec);
		return -EINVAL;
	}
	if (find(o->peer, o->job)) {
		snprintf(why, whylen, "job %u is already open", (unsigned)o->job);
		return -EEXIST;
	}
	unsigned max = video ? max_video : pic ? KP_TRANSCODE_PICTURE_JOBS : max_audio;
	const char *what = video ? "video" : pic ? "picture" : "audio";
	if (tx_jobs_running(o->kind) >= max) {
		snprintf(why, whylen, "%u %s jobs run, the most allowed", max, what);
		return -EBUSY;
	}
	if (!video && !pic && (o->rate < 8000 || o->rate > 96000 || o->channels < 1 || o->channels > 8)) {
		snprintf(why, whylen, "audio of %u Hz and %u channels", o->rate, o->channels);
		return -EINVAL;
	}
	struct job *j = calloc(1, sizeof *j);
	if (!j)
		return -ENOMEM;
	j->peer = o->peer;
	j->id = o->job;
	j->kind = o->kind;
	j->width = o->width;
	j->codec = o->codec;
	snprintf(j->name, sizeof j->name, "%u (%s)", (unsigned)o->job, o->name);
	j->rate = o->rate;
	j->channels = o->channels;
	if (o->config_len)
		memcpy(j->config, o->config, o->config_len);
	j->config_len = o->config_len;
	j->out_clock = video || pic ? 90000 : TX_OPUS_RATE;
	j->in_wait_key = true;
	for (unsigned i = 0; i < WALL_RING; i++)
		j->walls[i].pts = INT64_MIN;
	int e = pthread_mutex_init(&j->lock, NULL);
	if (e == 0 && (e = pthread_cond_init(&j->cond, NULL)) != 0)
		pthread_mutex_destroy(&j->lock);
	if (e) {
		free(j);
		return -e;
	}
	j->async.data = j;
	e = uv_async_init(loop, &j->async, on_async);
	if (e < 0) {
		pthread_mutex_destroy(&j->lock);
		pthread_cond_destroy(&j->cond);
		free(j);
		return e;
	}
	pthread_attr_t attr;
	e = pthread_attr_init(&attr);
	if (e == 0) {
		e = pthread_attr_setstacksize(&attr, KP_RTC_THREAD_STACK);
		if (e == 0)
			e = pthread_create(&j->thread, &attr, run, j);
		pthread_attr_destroy(&attr);
	}
	if (e) {
		snprintf(why, whylen, "starting its thread: %s", strerror(e));
		j->joined = true;
		uv_close((uv_handle_t *)&j->async, job_free);
		return -e;
	}
	j->next = jobs;
	jobs = j;
	kp_info("job %s started (%u %s jobs of at most %u)", j->name, tx_jobs_running(o->kind), what, max);
	return 0;
}

void tx_job_input(kp_Peer peer, uint32_t id, const uint8_t *data, size_t len, int64_t pts, int64_t wall_ms,
		  bool keyframe, bool force_key)
{
	struct job *j = find(peer, id);
	if (!j)
		return;
	pthread_mutex_lock(&j->lock);
	if (force_key)
		j->force_key = true;
	if (j->in_wait_key && !keyframe) {
		pthread_mutex_unlock(&j->lock);
		return;
	}
	if (j->in_len == TX_IN_MAX || j->in_bytes + len > TX_IN_BYTES_MAX) {
		j->in_wait_key = true;
		j->dropped_in++;
		pthread_mutex_unlock(&j->lock);
		return;
	}
	uint8_t *copy = malloc(len ? len : 1);
	if (!copy) {
		j->in_wait_key = true;
		pthread_mutex_unlock(&j->lock);
		kp_err("job %s: no memory for a %zu-byte input frame", j->name, len);
		return;
	}
	memcpy(copy, data, len);
	j->in_wait_key = false;
	j->in[(j->in_head + j->in_len++) % TX_IN_MAX] = (struct item){
	    .data = copy,
	    .len = len,
	    .keyframe = keyframe,
	    .pts = pts,
	    .wall_ms = wall_ms,
	};
	j->in_bytes += len;
	pthread_cond_signal(&j->cond);
	pthread_mutex_unlock(&j->lock);
}

void tx_job_close(kp_Peer peer, uint32_t id)
{
	struct job *j = find(peer, id);
	if (j)
		stop(j);
}

void tx_jobs_close_all(kp_Peer peer)
{
	for (struct job *j = jobs; j; j = j->next)
		if (peer == kp_Peer_PEER_NONE || j->peer == peer)
			stop(j);
}
