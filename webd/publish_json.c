/* POST /api/v1/events as JSON: SPEC 7's shape read into an EventRecord, the JPEG from
 * "jpeg_base64" decoded into the caller's bounded buffer. Attributes are an object
 * ({"zone":"porch"}) or a list of {"key","value"}. In the base64 text the JSON escapes
 * "\/", "\n" and "\r" are accepted (encoders that escape slashes or wrap lines). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "kp_limits.h"
#include "publish.h"

#define PUBLISH_TOKS 2048
#define COUNT(a)     (sizeof(a) / sizeof((a)[0]))

int webd_publish_fail(struct publish_err *e, int status, const char *code, const char *fmt, ...)
{
	e->status = status;
	e->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->why, sizeof(e->why), fmt, ap);
	va_end(ap);
	return -1;
}

int webd_publish_stream(const char *name, uint32_t *stream)
{
	if (!name[0] || strcmp(name, "main") == 0 || strcmp(name, "0") == 0)
		*stream = 0;
	else if (strcmp(name, "sub") == 0 || strcmp(name, "1") == 0)
		*stream = 1;
	else
		return -1;
	return 0;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Decodes base64 text (JSON-escaped as above) into p->jpeg_buf. */
static int decode_base64(const char *s, size_t n, struct webd_publish *p, struct publish_err *e)
{
	/* First pass: count the sextets, so that a JPEG over the ceiling is refused unread. */
	size_t sextets = 0, pad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\') {
			if (i + 1 < n && s[i + 1] == '/') {
				sextets++;
				i++;
				continue;
			}
			if (i + 1 < n && (s[i + 1] == 'n' || s[i + 1] == 'r')) {
				i++;
				continue;
			}
			return webd_publish_fail(e, 400, "bad_base64",
						 "jpeg_base64 has an escape other than \\/, \\n, \\r");
		}
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad || b64_value(c) < 0)
			return webd_publish_fail(e, 400, "bad_base64", "jpeg_base64 is not base64 (byte %zu)", i);
		sextets++;
	}
	if (pad > 2 || (pad && (sextets + pad) % 4) || sextets % 4 == 1)
		return webd_publish_fail(e, 400, "bad_base64", "jpeg_base64 has a bad length or padding");
	size_t bytes = sextets / 4 * 3 + (sextets % 4 ? sextets % 4 - 1 : 0);
	if (bytes > KP_ANALYSIS_JPEG_MAX || bytes > p->jpeg_cap)
		return webd_publish_fail(e, 413, "jpeg_too_large", "the JPEG has %zu bytes, more than %u", bytes,
					 (unsigned)KP_ANALYSIS_JPEG_MAX);
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\') {
			i++;
			if (s[i] != '/')
				continue;
			c = '/';
		}
		if (c == '=')
			break;
		acc = (acc << 6) | (uint32_t)b64_value(c);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			p->jpeg_buf[o++] = (uint8_t)(acc >> bits);
		}
	}
	p->jpeg = o ? p->jpeg_buf : NULL;
	p->jpeg_len = o;
	return 0;
}

static int get_string(const struct json_doc *d, int obj, const char *key, char *buf, size_t cap, bool required,
		      struct publish_err *e)
{
	int t = json_obj_get(d, obj, key);
	if (t < 0 || d->toks[t].type == JSON_NULL) {
		if (required)
			return webd_publish_fail(e, 400, "bad_event", "\"%s\" is required", key);
		buf[0] = 0;
		return 0;
	}
	int rc = json_get_str(d, t, buf, cap);
	if (rc == -ENAMETOOLONG)
		return webd_publish_fail(e, 400, "bad_event", "\"%s\" is longer than %zu bytes", key, cap - 1);
	if (rc == -EILSEQ)
		return webd_publish_fail(e, 400, "bad_event", "\"%s\" must not hold \\u0000", key);
	if (rc < 0)
		return webd_publish_fail(e, 400, "bad_event", "\"%s\" must be a string", key);
	return 0;
}

static int get_int(const struct json_doc *d, int obj, const char *key, int64_t *v, bool required, struct publish_err *e)
{
	int t = json_obj_get(d, obj, key);
	if (t < 0 || d->toks[t].type == JSON_NULL) {
		if (required)
			return webd_publish_fail(e, 400, "bad_event", "\"%s\" is required", key);
		*v = 0;
		return 0;
	}
	if (json_get_int(d, t, v) < 0)
		return webd_publish_fail(e, 400, "bad_event", "\"%s\" must be an integer", key);
	return 0;
}

static int get_float(const struct json_doc *d, int obj, const char *key, float *v, struct publish_err *e)
{
	int t = json_obj_get(d, obj, key);
	double x = 0;
	if (t >= 0 && d->toks[t].type != JSON_NULL && json_get_double(d, t, &x) < 0)
		return webd_publish_fail(e, 400, "bad_event", "\"%s\" must be a number", key);
	*v = (float)x;
	return 0;
}

static int get_array(const struct json_doc *d, int obj, const char *key, size_t max, int *arr, unsigned *n,
		     struct publish_err *e)
{
	*arr = json_obj_get(d, obj, key);
	*n = 0;
	if (*arr < 0 || d->toks[*arr].type == JSON_NULL)
		return 0;
	if (d->toks[*arr].type != JSON_ARRAY)
		return webd_publish_fail(e, 400, "bad_event", "\"%s\" must be a list", key);
	*n = d->toks[*arr].size;
	if (*n > max)
		return webd_publish_fail(e, 400, "bad_event", "\"%s\" has more than %zu entries", key, max);
	return 0;
}

static int read_labels(const struct json_doc *d, kp_EventRecord *ev, struct publish_err *e)
{
	int arr;
	unsigned n;
	if (get_array(d, 0, "labels", COUNT(ev->labels), &arr, &n, e) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int t = json_arr_get(d, arr, i);
		if (d->toks[t].type != JSON_OBJECT)
			return webd_publish_fail(e, 400, "bad_event", "labels are objects {\"name\",\"score\"}");
		if (get_string(d, t, "name", ev->labels[i].name, sizeof(ev->labels[i].name), true, e) < 0 ||
		    get_float(d, t, "score", &ev->labels[i].score, e) < 0)
			return -1;
	}
	ev->labels_count = (pb_size_t)n;
	return 0;
}

static int read_boxes(const struct json_doc *d, kp_EventRecord *ev, struct publish_err *e)
{
	int arr;
	unsigned n;
	if (get_array(d, 0, "boxes", COUNT(ev->boxes), &arr, &n, e) < 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int t = json_arr_get(d, arr, i);
		kp_EventBox *b = &ev->boxes[i];
		if (d->toks[t].type != JSON_OBJECT)
			return webd_publish_fail(e, 400, "bad_event",
						 "boxes are objects {\"label\",\"x\",\"y\",\"w\",\"h\"}");
		if (get_string(d, t, "label", b->label, sizeof(b->label), false, e) < 0 ||
		    get_float(d, t, "x", &b->x, e) < 0 || get_float(d, t, "y", &b->y, e) < 0 ||
		    get_float(d, t, "w", &b->w, e) < 0 || get_float(d, t, "h", &b->h, e) < 0 ||
		    get_float(d, t, "score", &b->score, e) < 0)
			return -1;
	}
	ev->boxes_count = (pb_size_t)n;
	return 0;
}

static int read_attributes(const struct json_doc *d, kp_EventRecord *ev, struct publish_err *e)
{
	int t = json_obj_get(d, 0, "attributes");
	if (t < 0 || d->toks[t].type == JSON_NULL)
		return 0;
	bool object = d->toks[t].type == JSON_OBJECT;
	if (!object && d->toks[t].type != JSON_ARRAY)
		return webd_publish_fail(e, 400, "bad_event", "\"attributes\" must be an object");
	unsigned n = d->toks[t].size;
	if (n > COUNT(ev->attributes))
		return webd_publish_fail(e, 400, "bad_event", "\"attributes\" has more than %zu entries",
					 COUNT(ev->attributes));
	int next = t + 1; /* object: the next key; list: the next element */
	for (unsigned i = 0; i < n; i++) {
		kp_EventAttribute *a = &ev->attributes[i];
		int k, v;
		if (object) {
			k = next;
			v = k + 1;
		} else {
			k = json_obj_get(d, next, "key");
			v = json_obj_get(d, next, "value");
		}
		next = object ? (int)d->toks[v].next : (int)d->toks[next].next;
		if (json_get_str(d, k, a->key, sizeof(a->key)) < 1)
			return webd_publish_fail(e, 400, "bad_event", "attribute keys are strings of 1 to %zu bytes",
						 sizeof(a->key) - 1);
		if (json_get_str(d, v, a->value, sizeof(a->value)) < 0)
			return webd_publish_fail(e, 400, "bad_event",
						 "attribute \"%s\": the value must be a string of at most %zu bytes",
						 a->key, sizeof(a->value) - 1);
	}
	ev->attributes_count = (pb_size_t)n;
	return 0;
}

int webd_publish_json(const uint8_t *body, size_t len, struct webd_publish *p, struct publish_err *e)
{
	static struct json_tok toks[PUBLISH_TOKS];
	struct json_doc d;
	kp_EventRecord *ev = &p->ev;
	int rc = json_parse(&d, (const char *)body, len, toks, PUBLISH_TOKS);
	if (rc < 0)
		return webd_publish_fail(e, 400, "bad_json", "the event is not JSON: %s at byte %zu", d.err_why,
					 d.err_at);
	if (d.toks[0].type != JSON_OBJECT)
		return webd_publish_fail(e, 400, "bad_json", "the event must be a JSON object");
	int64_t revision, start, end;
	char stream[8];
	if (get_string(&d, 0, "id", ev->event_id, sizeof(ev->event_id), true, e) < 0 ||
	    get_int(&d, 0, "revision", &revision, true, e) < 0 ||
	    get_string(&d, 0, "camera", ev->camera, sizeof(ev->camera), true, e) < 0 ||
	    get_string(&d, 0, "stream", stream, sizeof(stream), false, e) < 0 ||
	    get_int(&d, 0, "start_ms", &start, true, e) < 0 || get_int(&d, 0, "end_ms", &end, false, e) < 0 ||
	    read_labels(&d, ev, e) < 0 || read_boxes(&d, ev, e) < 0 || read_attributes(&d, ev, e) < 0)
		return -1;
	if (revision < 1 || revision > UINT32_MAX)
		return webd_publish_fail(e, 400, "bad_revision", "\"revision\" must be 1 to %u", UINT32_MAX);
	ev->revision = (uint32_t)revision;
	if (webd_publish_stream(stream, &ev->stream) < 0)
		return webd_publish_fail(e, 400, "bad_event", "\"stream\" must be \"main\" or \"sub\"");
	ev->start_ms = start;
	ev->end_ms = end;
	int jt = json_obj_get(&d, 0, "jpeg_base64");
	if (jt >= 0 && d.toks[jt].type != JSON_NULL) {
		const char *b64;
		size_t b64_len;
		if (json_get_raw(&d, jt, &b64, &b64_len) < 0)
			return webd_publish_fail(e, 400, "bad_base64", "\"jpeg_base64\" must be a string");
		if (decode_base64(b64, b64_len, p, e) < 0)
			return -1;
	}
	return 0;
}
