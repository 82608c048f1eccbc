/* H.265 -> H.264 transcodes for viewers whose browser cannot decode H.265 (see
 * media.h): one per camera stream, shared by its subscribers, at most max_transcodes at
 * once. Each runs transcode_codec.c on its own thread (4 MiB stack) fed through a
 * bounded queue (when full, input is dropped up to the next keyframe); encoded access
 * units come back to the libuv loop thread (uv_default_loop, the worker's loop) through
 * a bounded queue and a uv_async, and go to every subscriber's callback. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kp_limits.h"
#include "log.h"
#include "media.h"
#include "transcode_codec.h"

#define DEFAULT_MAX  2
#define IN_MAX       32                 /* access units waiting for the thread */
#define IN_BYTES_MAX (16 * 1024 * 1024) /* and their bytes */
#define OUT_MAX      32                 /* encoded access units waiting for the loop */
#define WALL_RING    64                 /* pts -> wall clock of recent input */

struct item {
	uint8_t *data;
	size_t len;
	bool keyframe;
	int64_t pts_90k, wall_ms;
	uint32_t width, height;
};

struct sub {
	rtc_au_cb au;
	void *arg;
};

struct rtc_transcode {
	struct rtc_transcode *nextt;
	char camera[65];
	unsigned stream;
	char name[96];

	/* Loop thread only. */
	struct sub *subs;
	unsigned nsubs, subs_cap;
	bool delivering, stopping, joined, closed;
	uv_async_t async;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under lock. */
	struct item in[IN_MAX];
	unsigned in_head, in_len;
	size_t in_bytes;
	bool in_wait_key; /* dropping input up to the next keyframe */
	struct item out[OUT_MAX];
	unsigned out_head, out_len;
	bool force_key; /* a new subscriber or dropped output: next picture an IDR */
	bool stop, exited;
	struct {
		int64_t pts, wall;
	} walls[WALL_RING];
	unsigned wall_next;
	uint64_t dropped_in, dropped_out;
};

static struct rtc_transcode *list; /* running and stopping */
static unsigned max_transcodes = DEFAULT_MAX;
static unsigned running;

void rtc_transcode_set_max(unsigned max_concurrent)
{
	max_transcodes = max_concurrent ? max_concurrent : DEFAULT_MAX;
}

unsigned rtc_transcodes_running(void)
{
	return running;
}

static void item_free(struct item *it)
{
	free(it->data);
	it->data = NULL;
}

/* Transcode thread: called by the codec for every encoded access unit. */
static void on_encoded(void *arg, const uint8_t *data, size_t len, bool keyframe, int64_t pts_90k, unsigned width,
		       unsigned height)
{
	struct rtc_transcode *t = arg;
	uint8_t *copy = malloc(len);
	if (!copy) {
		kp_err("transcode of %s: no memory for a %zu-byte access unit", t->name, len);
		return;
	}
	memcpy(copy, data, len);
	pthread_mutex_lock(&t->lock);
	int64_t wall = 0;
	for (unsigned i = 0; i < WALL_RING; i++)
		if (t->walls[i].pts == pts_90k)
			wall = t->walls[i].wall;
	if (t->out_len == OUT_MAX) {
		/* The loop is behind: drop, and restart the viewers at an IDR. */
		free(copy);
		t->force_key = true;
		t->dropped_out++;
	} else {
		t->out[(t->out_head + t->out_len++) % OUT_MAX] = (struct item){
		    .data = copy,
		    .len = len,
		    .keyframe = keyframe,
		    .pts_90k = pts_90k,
		    .wall_ms = wall,
		    .width = width,
		    .height = height,
		};
	}
	pthread_mutex_unlock(&t->lock);
	uv_async_send(&t->async);
}

static void *run(void *arg)
{
	struct rtc_transcode *t = arg;
	struct rtc_tc_codec *codec = NULL;
	int e = rtc_tc_codec_open(t->name, &codec);
	pthread_mutex_lock(&t->lock);
	while (e == 0 && !t->stop) {
		if (!t->in_len) {
			pthread_cond_wait(&t->cond, &t->lock);
			continue;
		}
		struct item it = t->in[t->in_head];
		t->in_head = (t->in_head + 1) % IN_MAX;
		t->in_len--;
		t->in_bytes -= it.len;
		bool force = t->force_key;
		t->force_key = false;
		t->walls[t->wall_next] = (typeof(t->walls[0])){it.pts_90k, it.wall_ms};
		t->wall_next = (t->wall_next + 1) % WALL_RING;
		pthread_mutex_unlock(&t->lock);
		int r = rtc_tc_codec_push(codec, it.data, it.len, it.pts_90k, force, on_encoded, t);
		item_free(&it);
		pthread_mutex_lock(&t->lock);
		if (r == -ENOSYS || r == -ENOTSUP || r == -ENOMEM)
			break; /* nothing later will go better */
		if (r < 0)
			t->in_wait_key = true;
	}
	t->exited = true;
	pthread_mutex_unlock(&t->lock);
	rtc_tc_codec_free(codec);
	uv_async_send(&t->async);
	return NULL;
}

static void transcode_free(uv_handle_t *h)
{
	struct rtc_transcode *t = h->data;
	for (unsigned i = 0; i < t->in_len; i++)
		item_free(&t->in[(t->in_head + i) % IN_MAX]);
	for (unsigned i = 0; i < t->out_len; i++)
		item_free(&t->out[(t->out_head + i) % OUT_MAX]);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	free(t->subs);
	free(t);
}

static void unlink_transcode(struct rtc_transcode *t)
{
	for (struct rtc_transcode **p = &list; *p; p = &(*p)->nextt)
		if (*p == t) {
			*p = t->nextt;
			return;
		}
}

/* Asks the thread to stop; the async callback joins it once it has exited and frees
 * the transcode. A transcode whose thread has already been joined is freed now. */
static void stop(struct rtc_transcode *t)
{
	if (t->joined && !t->closed) {
		t->closed = true;
		uv_close((uv_handle_t *)&t->async, transcode_free);
		return;
	}
	if (t->stopping)
		return;
	t->stopping = true;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void compact_subs(struct rtc_transcode *t)
{
	unsigned n = 0;
	for (unsigned i = 0; i < t->nsubs; i++)
		if (t->subs[i].au)
			t->subs[n++] = t->subs[i];
	t->nsubs = n;
	if (!n)
		stop(t);
}

static void on_async(uv_async_t *a)
{
	struct rtc_transcode *t = a->data;
	struct item out[OUT_MAX];
	pthread_mutex_lock(&t->lock);
	unsigned n = t->out_len;
	for (unsigned i = 0; i < n; i++)
		out[i] = t->out[(t->out_head + i) % OUT_MAX];
	t->out_head = (t->out_head + n) % OUT_MAX;
	t->out_len = 0;
	bool exited = t->exited;
	pthread_mutex_unlock(&t->lock);
	t->delivering = true;
	for (unsigned i = 0; i < n; i++) {
		struct rtc_au au = {
		    .data = out[i].data,
		    .len = out[i].len,
		    .codec = kp_Codec_CODEC_H264,
		    .keyframe = out[i].keyframe,
		    .pts_90k = out[i].pts_90k,
		    .wall_ms = out[i].wall_ms,
		    .width = out[i].width,
		    .height = out[i].height,
		};
		for (unsigned s = 0; s < t->nsubs && !t->stopping; s++)
			if (t->subs[s].au)
				t->subs[s].au(t->subs[s].arg, &au);
		item_free(&out[i]);
	}
	t->delivering = false;
	if (!exited || t->joined) {
		compact_subs(t);
		return;
	}
	if (!t->stopping)
		kp_warn("transcode of %s stopped: its codec failed (see above)", t->name);
	int e = pthread_join(t->thread, NULL);
	if (e)
		kp_err("transcode of %s: joining its thread: %s", t->name, strerror(e));
	if (t->dropped_in || t->dropped_out)
		kp_notice("transcode of %s: %llu input and %llu output access units dropped (too slow)", t->name,
			  (unsigned long long)t->dropped_in, (unsigned long long)t->dropped_out);
	unlink_transcode(t);
	running--;
	t->joined = true;
	/* Freed now when nobody watches, else by the last release. */
	compact_subs(t);
}

static struct rtc_transcode *find(const char *camera, unsigned stream)
{
	for (struct rtc_transcode *t = list; t; t = t->nextt)
		if (!t->stopping && !t->joined && t->stream == stream && !strcmp(t->camera, camera))
			return t;
	return NULL;
}

static int add_sub(struct rtc_transcode *t, rtc_au_cb au, void *arg)
{
	if (t->nsubs == t->subs_cap) {
		unsigned cap = t->subs_cap ? t->subs_cap * 2 : 4;
		struct sub *s = realloc(t->subs, cap * sizeof *s);
		if (!s)
			return -ENOMEM;
		t->subs = s;
		t->subs_cap = cap;
	}
	t->subs[t->nsubs++] = (struct sub){au, arg};
	pthread_mutex_lock(&t->lock);
	t->force_key = true; /* the new viewer starts at an IDR */
	pthread_mutex_unlock(&t->lock);
	return 0;
}

static struct rtc_transcode *start(const char *camera, unsigned stream)
{
	struct rtc_transcode *t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	snprintf(t->camera, sizeof t->camera, "%s", camera);
	t->stream = stream;
	snprintf(t->name, sizeof t->name, "%s stream %u", camera, stream);
	t->in_wait_key = true;
	for (unsigned i = 0; i < WALL_RING; i++)
		t->walls[i].pts = INT64_MIN;
	int e = pthread_mutex_init(&t->lock, NULL);
	if (e == 0 && (e = pthread_cond_init(&t->cond, NULL)) != 0)
		pthread_mutex_destroy(&t->lock);
	if (e) {
		free(t);
		errno = e;
		return NULL;
	}
	t->async.data = t;
	e = uv_async_init(uv_default_loop(), &t->async, on_async);
	if (e < 0) {
		pthread_mutex_destroy(&t->lock);
		pthread_cond_destroy(&t->cond);
		free(t);
		errno = -e;
		return NULL;
	}
	pthread_attr_t attr;
	e = pthread_attr_init(&attr);
	if (e == 0) {
		e = pthread_attr_setstacksize(&attr, KP_RTC_THREAD_STACK);
		if (e == 0)
			e = pthread_create(&t->thread, &attr, run, t);
		pthread_attr_destroy(&attr);
	}
	if (e) {
		kp_err("transcode of %s: starting its thread: %s", t->name, strerror(e));
		uv_close((uv_handle_t *)&t->async, transcode_free);
		errno = e;
		return NULL;
	}
	t->nextt = list;
	list = t;
	running++;
	kp_info("transcode of %s started (%u of at most %u)", t->name, running, max_transcodes);
	return t;
}

struct rtc_transcode *rtc_transcode_acquire(const char *camera, unsigned stream, rtc_au_cb au, void *arg)
{
	if (strlen(camera) >= sizeof((struct rtc_transcode *)0)->camera || !au) {
		errno = EINVAL;
		return NULL;
	}
	struct rtc_transcode *t = find(camera, stream);
	if (!t) {
		if (running >= max_transcodes) {
			kp_notice("transcode of %s stream %u refused: %u transcodes run, the most [rtc] max_transcodes "
				  "allows",
				  camera, stream, running);
			errno = EBUSY;
			return NULL;
		}
		t = start(camera, stream);
		if (!t)
			return NULL;
	}
	int e = add_sub(t, au, arg);
	if (e < 0) {
		if (!t->nsubs)
			stop(t);
		errno = -e;
		return NULL;
	}
	return t;
}

void rtc_transcode_release(struct rtc_transcode *t, void *arg)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->nsubs; i++)
		if (t->subs[i].au && t->subs[i].arg == arg) {
			t->subs[i].au = NULL;
			break;
		}
	if (!t->delivering)
		compact_subs(t);
}

void rtc_transcode_feed(const char *camera, unsigned stream, const struct rtc_au *au)
{
	if (au->codec != kp_Codec_CODEC_H265)
		return;
	struct rtc_transcode *t = find(camera, stream);
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	if (t->in_wait_key && !au->keyframe) {
		pthread_mutex_unlock(&t->lock);
		return;
	}
	if (t->in_len == IN_MAX || t->in_bytes + au->len > IN_BYTES_MAX) {
		t->in_wait_key = true;
		t->dropped_in++;
		pthread_mutex_unlock(&t->lock);
		return;
	}
	uint8_t *copy = malloc(au->len ? au->len : 1);
	if (!copy) {
		t->in_wait_key = true;
		pthread_mutex_unlock(&t->lock);
		kp_err("transcode of %s: no memory for a %zu-byte access unit", t->name, au->len);
		return;
	}
	memcpy(copy, au->data, au->len);
	t->in_wait_key = false;
	t->in[(t->in_head + t->in_len++) % IN_MAX] = (struct item){
	    .data = copy,
	    .len = au->len,
	    .keyframe = au->keyframe,
	    .pts_90k = au->pts_90k,
	    .wall_ms = au->wall_ms,
	};
	t->in_bytes += au->len;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}
