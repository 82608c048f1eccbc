/* Event JSON (see event_json.h). */
#include "event_json.h"

#include <math.h>

static void num(struct jbuf *b, float f)
{
	jb_printf(b, "%.4g", isfinite(f) ? (double)f : 0.0);
}

void rec_event_json(struct jbuf *b, const kp_EventRecord *ev, const struct cat_event_row *row,
		    const struct cat_event_link *links, unsigned nlinks)
{
	jb_printf(b, "{\"id\":");
	jb_str(b, ev->event_id);
	jb_printf(b, ",\"revision\":%u,\"camera\":", (unsigned)ev->revision);
	jb_str(b, ev->camera);
	jb_printf(b, ",\"stream\":\"%s\",\"start_ms\":%lld,\"end_ms\":%lld,\"labels\":[", ev->stream ? "sub" : "main",
		  (long long)row->start_ms, (long long)row->end_ms);
	for (pb_size_t i = 0; i < ev->labels_count; i++) {
		jb_printf(b, "%s{\"name\":", i ? "," : "");
		jb_str(b, ev->labels[i].name);
		jb_printf(b, ",\"score\":");
		num(b, ev->labels[i].score);
		jb_printf(b, "}");
	}
	jb_printf(b, "],\"boxes\":[");
	for (pb_size_t i = 0; i < ev->boxes_count; i++) {
		const kp_EventBox *x = &ev->boxes[i];
		jb_printf(b, "%s{\"label\":", i ? "," : "");
		jb_str(b, x->label);
		jb_printf(b, ",\"x\":");
		num(b, x->x);
		jb_printf(b, ",\"y\":");
		num(b, x->y);
		jb_printf(b, ",\"w\":");
		num(b, x->w);
		jb_printf(b, ",\"h\":");
		num(b, x->h);
		jb_printf(b, ",\"score\":");
		num(b, x->score);
		jb_printf(b, "}");
	}
	jb_printf(b, "],\"attributes\":[");
	for (pb_size_t i = 0; i < ev->attributes_count; i++) {
		jb_printf(b, "%s{\"key\":", i ? "," : "");
		jb_str(b, ev->attributes[i].key);
		jb_printf(b, ",\"value\":");
		jb_str(b, ev->attributes[i].value);
		jb_printf(b, "}");
	}
	jb_printf(b, "],\"source\":");
	jb_str(b, ev->source);
	jb_printf(b, ",\"principal\":");
	jb_str(b, ev->principal);
	jb_printf(b, ",\"has_jpeg\":%s,\"jpeg_width\":%u,\"jpeg_height\":%u,\"jpeg_bytes\":%u,\"committed_ms\":%lld",
		  row->jpeg_len ? "true" : "false", (unsigned)ev->jpeg_width, (unsigned)ev->jpeg_height,
		  (unsigned)row->jpeg_len, (long long)row->committed_ms);
	jb_printf(b, ",\"keyframes\":[");
	for (unsigned i = 0; i < nlinks; i++)
		jb_printf(b, "%s{\"stream\":\"%s\",\"time_ms\":%lld}", i ? "," : "", links[i].stream ? "sub" : "main",
			  (long long)links[i].ms);
	jb_printf(b, "]}");
}
