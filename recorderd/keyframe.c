/* Keyframe lookup and exact read (see keyframe.h). */
#include "keyframe.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "catalog_events.h"
#include "catalog_keys.h"
#include "kp_io.h"

/* Whether ms lies in the keyframe's fragment or in the fragments without a keyframe that
 * continue its GOP (a GOP too long for one fragment); *until_ms is where the GOP's
 * fragments end. */
static int covers(struct cat_txn *t, const struct cat_keyframe *kf, int64_t ms, int64_t *until_ms)
{
	struct cat_fragment f;
	int found = 0;
	for (uint32_t seq = kf->seq;; seq++) {
		int r = cat_get_fragment(t, kf->recording_id, seq, &f);
		if (r == -ENOENT && found)
			return 0;
		if (r < 0)
			return r;
		if (seq != kf->seq && f.keyframe_length)
			return found ? 0 : -ENOENT;
		found |= ms >= f.start_ms && ms < f.end_ms;
		*until_ms = f.end_ms;
	}
}

static int find(struct cat_txn *t, uint32_t stream_id, int64_t ms, struct rec_keyframe *ret)
{
	int64_t kms, until = 0;
	struct cat_keyframe kf;
	int r = cat_keyframe_at(t, stream_id, ms, &kms, &kf);
	if (r == 0)
		r = covers(t, &kf, ms, &until);
	struct cat_recording rec;
	if (r == 0)
		r = cat_get_recording(t, kf.recording_id, &rec);
	if (r < 0)
		return r;
	*ret = (struct rec_keyframe){.ms = kms,
				     .until_ms = until,
				     .recording_id = kf.recording_id,
				     .seq = kf.seq,
				     .codec = rec.codec,
				     .offset = kf.offset,
				     .length = kf.length,
				     .rec_flags = rec.flags};
	memcpy(ret->path, rec.path, sizeof ret->path);
	return 0;
}

int rec_keyframe_find(struct cat *cat, uint32_t stream_id, int64_t ms, struct rec_keyframe *ret)
{
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	if (r < 0)
		return r;
	r = find(t, stream_id, ms, ret);
	cat_abort(t);
	return r;
}

int rec_keyframe_find_txn(struct cat_txn *t, uint32_t stream_id, int64_t ms, struct rec_keyframe *ret)
{
	return find(t, stream_id, ms, ret);
}

/* Whether the stream has a recording and none of it reaches past ms yet. */
static int not_yet(struct cat_txn *t, uint32_t stream_id, int64_t ms)
{
	uint64_t id = 0;
	struct cat_recording rec;
	return cat_stream_last_recording(t, stream_id, &id) == 0 && id && cat_get_recording(t, id, &rec) == 0 &&
	       rec.end_ms <= ms;
}

int rec_keyframe_find_event(struct cat *cat, const char *event_id, uint32_t stream, struct rec_keyframe *ret)
{
	struct cat_txn *t;
	int r = cat_begin(cat, 0, &t);
	if (r < 0)
		return r;
	struct cat_event_row e = {0};
	struct cat_event_link l;
	r = cat_event_get(t, event_id, &e, NULL);
	int linked = r == 0 ? cat_event_link_get(t, e.seq, stream, &l) : r;
	uint32_t stream_id = cat_stream_id(e.camera_id, stream);
	if (r == 0 && linked == 0) {
		/* The link names a keyframes row; it resolves to that row while its recording
		 * is kept (retention or a delete may have removed it since). */
		r = find(t, stream_id, l.ms, ret);
		if (r == 0 && (ret->recording_id != l.recording_id || ret->seq != l.seq || ret->ms != l.ms))
			r = -ENOENT;
	} else if (r == 0 && linked == -ENOENT) {
		r = find(t, stream_id, e.start_ms, ret); /* not yet indexed at the commit */
		if (r == -ENOENT && not_yet(t, stream_id, e.start_ms)) {
			r = -EAGAIN;
			ret->ms = e.start_ms;
		}
	} else if (r == 0) {
		r = linked;
	}
	cat_abort(t);
	return r;
}

int rec_keyframe_read_fd(int fd, const struct rec_keyframe *k, uint8_t *buf)
{
	/* -ENODATA: the catalog names bytes the file does not have */
	return kp_pread_all(fd, buf, k->length, k->offset);
}

int rec_keyframe_read(int data_dirfd, const struct rec_keyframe *k, uint8_t *buf)
{
	int fd = openat(data_dirfd, k->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = rec_keyframe_read_fd(fd, k, buf);
	close(fd);
	return r;
}
