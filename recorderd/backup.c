/* recorderd's part of keeppeekctl backup (see backup.h). */
#include "backup.h"

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "catalog_events.h"
#include "kp_time.h"

static struct {
	struct cat *cat;
	rec_backup_done_fn done_fn;
	uv_async_t done;
	int open;
	/* the copy that runs, if any */
	int running;
	pthread_t thread;
	uint32_t id;
	int fd;
	int err;
	struct rec_backup_result res;
} B = {.fd = -1};

/* copy thread */
static void *copy_thread(void *arg)
{
	(void)arg;
	uint64_t start = kp_mono_ms();
	struct cat_txn *t;
	int r = cat_begin(B.cat, 0, &t);
	if (r == 0) {
		r = cat_recording_count(t, &B.res.recordings);
		if (r == 0)
			r = cat_event_count(t, &B.res.events);
		cat_abort(t);
	}
	if (r == 0)
		r = cat_copy_to(B.cat, B.fd);
	struct stat st;
	if (r == 0 && fstat(B.fd, &st) < 0)
		r = -errno;
	if (r == 0)
		B.res.catalog_bytes = (uint64_t)st.st_size;
	B.res.ms = kp_mono_ms() - start;
	B.err = r;
	uv_async_send(&B.done);
	return NULL;
}

/* loop thread, when the copy is done */
static void on_copy_done(uv_async_t *h)
{
	(void)h;
	if (!B.running)
		return;
	pthread_join(B.thread, NULL);
	B.running = 0;
	close(B.fd);
	B.fd = -1;
	B.done_fn(B.id, B.err, &B.res);
}

void rec_backup_open(uv_loop_t *loop, struct cat *cat, rec_backup_done_fn done)
{
	B.cat = cat;
	B.done_fn = done;
	uv_async_init(loop, &B.done, on_copy_done);
	B.open = 1;
}

int rec_backup_start(uint32_t id, int fd)
{
	if (!B.open || B.running) {
		close(fd);
		return B.open ? -EBUSY : -ESHUTDOWN;
	}
	B.id = id;
	B.fd = fd;
	B.err = 0;
	B.res = (struct rec_backup_result){0};
	int r = -pthread_create(&B.thread, NULL, copy_thread, NULL);
	if (r < 0) {
		close(fd);
		B.fd = -1;
		return r;
	}
	B.running = 1;
	return 0;
}

void rec_backup_close(void)
{
	if (!B.open)
		return;
	if (B.running) {
		pthread_join(B.thread, NULL);
		B.running = 0;
		close(B.fd);
		B.fd = -1;
	}
	uv_close((uv_handle_t *)&B.done, NULL);
	B.open = 0;
}
