/* tierd's lanes (lane.h): the thread and queue of each, and the reports of all of them
 * to the loop thread. */
#include "lane.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

struct tier_queued {
	struct tier_job job;
	unsigned gen;
	struct tier_queued *next;
};

struct out_msg {
	struct out_msg *next;
	struct tier_lane *lane;
	unsigned gen;
	kp_Envelope env;
};

static struct {
	pthread_mutex_t lock;
	struct out_msg *head, *tail;
	uv_async_t async;
	tier_report_fn report;
	int ready;
} O = {.lock = PTHREAD_MUTEX_INITIALIZER};

static unsigned lane_gen(struct tier_lane *l)
{
	pthread_mutex_lock(&l->lock);
	unsigned gen = l->gen;
	pthread_mutex_unlock(&l->lock);
	return gen;
}

static void on_async(uv_async_t *a)
{
	(void)a;
	pthread_mutex_lock(&O.lock);
	struct out_msg *m = O.head;
	O.head = O.tail = NULL;
	pthread_mutex_unlock(&O.lock);
	while (m) {
		struct out_msg *next = m->next;
		if (m->gen == lane_gen(m->lane))
			O.report(&m->env);
		free(m);
		m = next;
	}
}

int tier_lanes_init(uv_loop_t *loop, tier_report_fn report)
{
	O.report = report;
	int r = uv_async_init(loop, &O.async, on_async);
	if (r == 0)
		O.ready = 1;
	return r;
}

void tier_lanes_done(void)
{
	if (!O.ready)
		return;
	uv_close((uv_handle_t *)&O.async, NULL);
	struct out_msg *m = O.head;
	while (m) {
		struct out_msg *next = m->next;
		free(m);
		m = next;
	}
	O.head = O.tail = NULL;
	O.ready = 0;
}

void tier_lane_post(struct tier_lane *l, unsigned gen, const kp_Envelope *env)
{
	struct out_msg *m = malloc(sizeof *m);
	if (!m) {
		kp_err("%s: a report for recorderd dropped: out of memory", l->name);
		return;
	}
	m->next = NULL;
	m->lane = l;
	m->gen = gen;
	m->env = *env;
	pthread_mutex_lock(&O.lock);
	if (O.tail)
		O.tail->next = m;
	else
		O.head = m;
	O.tail = m;
	pthread_mutex_unlock(&O.lock);
	uv_async_send(&O.async);
}

int tier_lane_cancelled(struct tier_lane *l, unsigned gen)
{
	pthread_mutex_lock(&l->lock);
	int c = gen != l->gen || l->stop;
	pthread_mutex_unlock(&l->lock);
	return c;
}

static void *thread_main(void *arg)
{
	struct tier_lane *l = arg;
	pthread_mutex_lock(&l->lock);
	for (;;) {
		while (!l->head && !l->stop)
			pthread_cond_wait(&l->cond, &l->lock);
		if (l->stop)
			break;
		struct tier_queued *q = l->head;
		l->head = q->next;
		if (!l->head)
			l->tail = NULL;
		l->nqueued--;
		l->running = 1;
		unsigned current = l->gen;
		pthread_mutex_unlock(&l->lock);
		if (q->gen == current)
			l->run(l, &q->job, q->gen);
		if (q->job.fd >= 0)
			close(q->job.fd);
		free(q);
		pthread_mutex_lock(&l->lock);
		l->running = 0;
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int tier_lane_start(struct tier_lane *l, const char *name, tier_lane_run_fn run, struct s3_client *client,
		    size_t buf_len)
{
	memset(l, 0, sizeof *l);
	l->buf = malloc(buf_len);
	if (!l->buf)
		return -ENOMEM;
	l->name = name;
	l->run = run;
	l->client = client;
	l->buf_len = buf_len;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	int r = pthread_create(&l->thread, NULL, thread_main, l);
	if (r != 0) {
		free(l->buf);
		l->buf = NULL;
		return -r;
	}
	l->started = 1;
	return 0;
}

int tier_lane_push(struct tier_lane *l, const struct tier_job *job)
{
	if (!l->started)
		return -ENOTCONN;
	struct tier_queued *q = malloc(sizeof *q);
	if (!q)
		return -ENOMEM;
	pthread_mutex_lock(&l->lock);
	if (l->nqueued >= TIER_QUEUE_MAX) {
		pthread_mutex_unlock(&l->lock);
		free(q);
		return -EBUSY;
	}
	q->job = *job;
	q->gen = l->gen;
	q->next = NULL;
	if (l->tail)
		l->tail->next = q;
	else
		l->head = q;
	l->tail = q;
	l->nqueued++;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return 0;
}

void tier_lane_cancel_all(struct tier_lane *l)
{
	if (!l->started)
		return;
	pthread_mutex_lock(&l->lock);
	struct tier_queued *q = l->head;
	l->head = l->tail = NULL;
	l->nqueued = 0;
	l->gen++;
	pthread_mutex_unlock(&l->lock);
	while (q) {
		struct tier_queued *next = q->next;
		if (q->job.fd >= 0)
			close(q->job.fd);
		free(q);
		q = next;
	}
}

unsigned tier_lane_pending(struct tier_lane *l)
{
	if (!l->started)
		return 0;
	pthread_mutex_lock(&l->lock);
	unsigned n = l->nqueued + l->running;
	pthread_mutex_unlock(&l->lock);
	return n;
}

void tier_lane_stop(struct tier_lane *l)
{
	if (!l->started)
		return;
	tier_lane_cancel_all(l);
	pthread_mutex_lock(&l->lock);
	l->stop = 1;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	l->started = 0;
	s3_client_free(l->client);
	l->client = NULL;
	free(l->buf);
	l->buf = NULL;
}
