/* The event JSON of docs/queries.md (see event_json.h), through the common writer. */
#include "event_json.h"

const char *kp_stream_name(uint32_t stream)
{
	return stream == 1 ? "sub" : "main";
}

static void key_str(struct json_w *w, const char *key, const char *v)
{
	jw_key(w, key);
	jw_str(w, v);
}

static void key_int(struct json_w *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_int(w, v);
}

static void key_num(struct json_w *w, const char *key, float v)
{
	jw_key(w, key);
	jw_double(w, v);
}

static void labels(struct json_w *w, const kp_EventRecord *e)
{
	jw_key(w, "labels");
	jw_arr(w);
	for (pb_size_t i = 0; i < e->labels_count; i++) {
		jw_obj(w);
		key_str(w, "name", e->labels[i].name);
		key_num(w, "score", e->labels[i].score);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void boxes(struct json_w *w, const kp_EventRecord *e)
{
	jw_key(w, "boxes");
	jw_arr(w);
	for (pb_size_t i = 0; i < e->boxes_count; i++) {
		const kp_EventBox *b = &e->boxes[i];
		jw_obj(w);
		key_str(w, "label", b->label);
		key_num(w, "x", b->x);
		key_num(w, "y", b->y);
		key_num(w, "w", b->w);
		key_num(w, "h", b->h);
		key_num(w, "score", b->score);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void attributes(struct json_w *w, const kp_EventRecord *e)
{
	jw_key(w, "attributes");
	jw_arr(w);
	for (pb_size_t i = 0; i < e->attributes_count; i++) {
		jw_obj(w);
		key_str(w, "key", e->attributes[i].key);
		key_str(w, "value", e->attributes[i].value);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void keyframes(struct json_w *w, const kp_EventKeyframe *kf, size_t nkf)
{
	jw_key(w, "keyframes");
	jw_arr(w);
	for (size_t i = 0; i < nkf; i++) {
		jw_obj(w);
		key_str(w, "stream", kp_stream_name(kf[i].stream));
		key_int(w, "time_ms", kf[i].time_ms);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void kp_event_json(struct json_w *w, const kp_EventRecord *e, size_t jpeg_bytes, const kp_EventKeyframe *kf, size_t nkf)
{
	jw_obj(w);
	key_str(w, "id", e->event_id);
	key_int(w, "revision", e->revision);
	key_str(w, "camera", e->camera);
	key_str(w, "stream", kp_stream_name(e->stream));
	key_int(w, "start_ms", e->start_ms);
	key_int(w, "end_ms", e->end_ms ? e->end_ms : e->start_ms);
	labels(w, e);
	boxes(w, e);
	attributes(w, e);
	key_str(w, "source", e->source);
	key_str(w, "principal", e->principal);
	jw_key(w, "has_jpeg");
	jw_bool(w, jpeg_bytes > 0);
	key_int(w, "jpeg_width", e->jpeg_width);
	key_int(w, "jpeg_height", e->jpeg_height);
	key_int(w, "jpeg_bytes", (int64_t)jpeg_bytes);
	key_int(w, "committed_ms", e->committed_ms);
	keyframes(w, kf, nkf);
	jw_obj_end(w);
}
