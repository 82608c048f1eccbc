/* POST /api/v1/events as application/x-protobuf: keeppeek.analysis.PublishEvent read
 * with nanopb into an EventRecord; its jpeg field arrives through a decode callback
 * that reads it into the caller's bounded buffer (or refuses it, over the ceiling). */
#include <string.h>

#include <pb_decode.h>

#include "analysis.pb.h"
#include "kp_limits.h"
#include "publish.h"

struct jpeg_sink {
	struct webd_publish *p;
	size_t too_large; /* the length of a JPEG over the ceiling, else 0 */
	unsigned count;
};

static bool read_jpeg(pb_istream_t *stream, const pb_field_t *field, void **arg)
{
	(void)field;
	struct jpeg_sink *sink = *arg;
	struct webd_publish *p = sink->p;
	size_t n = stream->bytes_left;
	if (sink->count++ > 0) {
		PB_SET_ERROR(stream, "jpeg given twice");
		return false;
	}
	if (n > KP_ANALYSIS_JPEG_MAX || n > p->jpeg_cap) {
		sink->too_large = n;
		return pb_read(stream, NULL, n);
	}
	if (!pb_read(stream, p->jpeg_buf, n))
		return false;
	p->jpeg = n ? p->jpeg_buf : NULL;
	p->jpeg_len = n;
	return true;
}

int webd_publish_proto(const uint8_t *body, size_t len, struct webd_publish *p, struct publish_err *e)
{
	static keeppeek_analysis_PublishEvent m;
	memset(&m, 0, sizeof(m));
	struct jpeg_sink sink = {.p = p};
	m.jpeg.funcs.decode = read_jpeg;
	m.jpeg.arg = &sink;
	pb_istream_t in = pb_istream_from_buffer(body, len);
	if (!pb_decode(&in, keeppeek_analysis_PublishEvent_fields, &m)) {
		if (sink.too_large)
			return webd_publish_fail(e, 413, "jpeg_too_large", "the JPEG has %zu bytes, more than %u",
						 sink.too_large, (unsigned)KP_ANALYSIS_JPEG_MAX);
		return webd_publish_fail(e, 400, "bad_protobuf", "the body is not a PublishEvent: %s",
					 PB_GET_ERROR(&in));
	}
	if (sink.too_large)
		return webd_publish_fail(e, 413, "jpeg_too_large", "the JPEG has %zu bytes, more than %u",
					 sink.too_large, (unsigned)KP_ANALYSIS_JPEG_MAX);
	kp_EventRecord *ev = &p->ev;
	if (!m.id[0])
		return webd_publish_fail(e, 400, "bad_event", "id is required");
	if (!m.camera[0])
		return webd_publish_fail(e, 400, "bad_event", "camera is required");
	if (m.revision < 1)
		return webd_publish_fail(e, 400, "bad_revision", "revision must be 1 or more");
	if (webd_publish_stream(m.stream, &ev->stream) < 0)
		return webd_publish_fail(e, 400, "bad_event", "stream must be \"main\" or \"sub\"");
	memcpy(ev->event_id, m.id, sizeof(ev->event_id));
	memcpy(ev->camera, m.camera, sizeof(ev->camera));
	ev->revision = m.revision;
	ev->start_ms = m.start_ms;
	ev->end_ms = m.end_ms;
	ev->labels_count = m.labels_count;
	for (pb_size_t i = 0; i < m.labels_count; i++) {
		memcpy(ev->labels[i].name, m.labels[i].name, sizeof(ev->labels[i].name));
		ev->labels[i].score = m.labels[i].score;
	}
	ev->boxes_count = m.boxes_count;
	for (pb_size_t i = 0; i < m.boxes_count; i++) {
		kp_EventBox *b = &ev->boxes[i];
		memcpy(b->label, m.boxes[i].label, sizeof(b->label));
		b->x = m.boxes[i].x;
		b->y = m.boxes[i].y;
		b->w = m.boxes[i].w;
		b->h = m.boxes[i].h;
		b->score = m.boxes[i].score;
	}
	ev->attributes_count = m.attributes_count;
	for (pb_size_t i = 0; i < m.attributes_count; i++) {
		if (!m.attributes[i].key[0])
			return webd_publish_fail(e, 400, "bad_event", "attribute keys must not be empty");
		memcpy(ev->attributes[i].key, m.attributes[i].key, sizeof(ev->attributes[i].key));
		memcpy(ev->attributes[i].value, m.attributes[i].value, sizeof(ev->attributes[i].value));
	}
	return 0;
}
