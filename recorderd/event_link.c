/* Late event->keyframe links at fragment commit (see event_link.h). */
#include "event_link.h"

#include <errno.h>

#include "catalog_events.h"
#include "catalog_int.h"
#include "catalog_keys.h"
#include "keyframe.h"

#define BATCH 32 /* events gathered per walk; the walk resumes after the last */

struct gather {
	int64_t from_ms;
	unsigned n;
	int64_t start[BATCH];
	uint64_t seq[BATCH];
};

static int gather(void *arg, int64_t start_ms, uint64_t seq, const char *id)
{
	struct gather *g = arg;
	(void)id;
	if (start_ms < g->from_ms || g->n == BATCH)
		return CAT_WALK_END;
	g->start[g->n] = start_ms;
	g->seq[g->n++] = seq;
	return 0;
}

static int link_one(struct cat_txn *t, uint32_t stream_id, uint32_t stream, int64_t start_ms, uint64_t seq)
{
	struct cat_event_link l;
	int r = cat_event_link_get(t, seq, stream, &l);
	if (r != -ENOENT)
		return r;
	struct rec_keyframe k;
	r = rec_keyframe_find_txn(t, stream_id, start_ms, &k);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	l = (struct cat_event_link){.ms = k.ms, .recording_id = k.recording_id, .seq = k.seq, .stream = stream};
	return cat_event_link_put(t, seq, &l);
}

int rec_event_link_fragment(struct cat_txn *t, const struct cat_recording *rec, const struct cat_fragment *f)
{
	uint32_t camera_id = rec->stream_id >> 8, stream = rec->stream_id & 0xff;
	if (stream > 1 || !camera_id)
		return 0;
	int64_t before_ms = f->end_ms;
	uint64_t before_seq = 0;
	for (;;) {
		struct gather g = {.from_ms = f->start_ms};
		int r = cat_each_event_back(t, camera_id, before_ms, before_seq, gather, &g);
		for (unsigned i = 0; i < g.n && r == 0; i++)
			r = link_one(t, rec->stream_id, stream, g.start[i], g.seq[i]);
		if (r < 0 || g.n < BATCH)
			return r;
		before_ms = g.start[BATCH - 1];
		before_seq = g.seq[BATCH - 1];
	}
}
