/* The event JSON of docs/queries.md (see event_json.h), through the common writer. */
#include "event_json.h"

const char *kp_stream_name(uint32_t stream)
{
	return stream == 1 ? "sub" : "main";
}

void kp_event_json(struct json_w *w, const kp_EventRecord *e, size_t jpeg_bytes, const kp_EventKeyframe *kf, size_t nkf)
{
	jw_obj(w);
	jw_key(w, "id");
	jw_str(w, e->event_id);
	jw_key(w, "revision");
	jw_int(w, e->revision);
	jw_key(w, "camera");
	jw_str(w, e->camera);
	jw_key(w, "stream");
	jw_str(w, kp_stream_name(e->stream));
	jw_key(w, "start_ms");
	jw_int(w, e->start_ms);
	jw_key(w, "end_ms");
	jw_int(w, e->end_ms ? e->end_ms : e->start_ms);
	jw_key(w, "labels");
	jw_arr(w);
	for (pb_size_t i = 0; i < e->labels_count; i++) {
		jw_obj(w);
		jw_key(w, "name");
		jw_str(w, e->labels[i].name);
		jw_key(w, "score");
		jw_double(w, e->labels[i].score);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "boxes");
	jw_arr(w);
	for (pb_size_t i = 0; i < e->boxes_count; i++) {
		const kp_EventBox *b = &e->boxes[i];
		jw_obj(w);
		jw_key(w, "label");
		jw_str(w, b->label);
		jw_key(w, "x");
		jw_double(w, b->x);
		jw_key(w, "y");
		jw_double(w, b->y);
		jw_key(w, "w");
		jw_double(w, b->w);
		jw_key(w, "h");
		jw_double(w, b->h);
		jw_key(w, "score");
		jw_double(w, b->score);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "attributes");
	jw_arr(w);
	for (pb_size_t i = 0; i < e->attributes_count; i++) {
		jw_obj(w);
		jw_key(w, "key");
		jw_str(w, e->attributes[i].key);
		jw_key(w, "value");
		jw_str(w, e->attributes[i].value);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "source");
	jw_str(w, e->source);
	jw_key(w, "principal");
	jw_str(w, e->principal);
	jw_key(w, "has_jpeg");
	jw_bool(w, jpeg_bytes > 0);
	jw_key(w, "jpeg_width");
	jw_int(w, e->jpeg_width);
	jw_key(w, "jpeg_height");
	jw_int(w, e->jpeg_height);
	jw_key(w, "jpeg_bytes");
	jw_int(w, (int64_t)jpeg_bytes);
	jw_key(w, "committed_ms");
	jw_int(w, e->committed_ms);
	jw_key(w, "keyframes");
	jw_arr(w);
	for (size_t i = 0; i < nkf; i++) {
		jw_obj(w);
		jw_key(w, "stream");
		jw_str(w, kp_stream_name(kf[i].stream));
		jw_key(w, "time_ms");
		jw_int(w, kf[i].time_ms);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
}
