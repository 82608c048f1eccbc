/* WebRTC signaling of site cameras through a hub (docs/decisions/0033): a browser's
 * offer on /api/v1/rtc for SITE/CAMERA goes to that site's /api/v1/rtc over one
 * WebSocket per browser WebSocket and site (hub_ws.c, with the site's token), the
 * camera renamed CAMERA; every later message of that sid follows it; the site's
 * messages come back read and written again, their camera renamed SITE/CAMERA. The
 * answer's candidates are the site's, so media flows from the site to the browser; the
 * hub carries signaling only. A link that ends tells each of its sessions why (an
 * "error" and a "closed", as rtcd's own), so a page shows the site's state, not a
 * black tile. The MSE fallback is not offered for site cameras (its media would
 * cross the hub). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub.h"
#include "hub_merge.h"
#include "hub_ws.h"
#include "json.h"
#include "log.h"
#include "webd.h"

#define HUB_RTC_SIDS 64 /* sessions of one page on sites (rtcd's per-principal bound) */
#define HUB_RTC_TOKS 64

struct hub_rtc;
struct link_arg {
	struct hub_rtc *h;
	unsigned site;
};
struct hub_rtc {
	uint64_t ws_id;
	struct hub_ws *link[KP_MAX_SITES];
	struct link_arg args[KP_MAX_SITES];
	struct {
		char sid[33];
		unsigned site;
	} r[HUB_RTC_SIDS];
	unsigned n;
};

static void to_browser(struct hub_rtc *h, const char *text, size_t len)
{
	struct web_ws *ws = web_ws_find(h->ws_id);
	if (!ws)
		return;
	int r = web_ws_send(ws, false, text, len, RELAY_QUEUE_ITEMS, RELAY_QUEUE_BYTES);
	if (r < 0) {
		kp_warn("hub rtc: WebSocket %llu does not drain its signaling (%s); closing it",
			(unsigned long long)h->ws_id, strerror(-r));
		web_ws_close(ws, 1008, "signaling queue full");
	}
}

static void send_error(struct hub_rtc *h, const char *sid, const char *code, const char *message, bool closed)
{
	char buf[512];
	struct json_w w;
	jw_init(&w, buf, sizeof buf);
	jw_obj(&w);
	jw_key(&w, "type");
	jw_str(&w, "error");
	jw_key(&w, "sid");
	jw_str(&w, sid);
	jw_key(&w, "code");
	jw_str(&w, code);
	jw_key(&w, "message");
	jw_str(&w, message);
	jw_obj_end(&w);
	size_t len;
	if (jw_finish(&w, &len) == 0)
		to_browser(h, buf, len);
	if (!closed)
		return;
	jw_init(&w, buf, sizeof buf);
	jw_obj(&w);
	jw_key(&w, "type");
	jw_str(&w, "closed");
	jw_key(&w, "sid");
	jw_str(&w, sid);
	jw_key(&w, "reason");
	jw_str(&w, message);
	jw_obj_end(&w);
	if (jw_finish(&w, &len) == 0)
		to_browser(h, buf, len);
}

static int route_of(const struct hub_rtc *h, const char *sid)
{
	for (unsigned i = 0; i < h->n; i++)
		if (!strcmp(h->r[i].sid, sid))
			return (int)i;
	return -1;
}

static void route_drop(struct hub_rtc *h, int i)
{
	h->r[i] = h->r[--h->n];
}

static void link_message(void *arg, const char *text, size_t len)
{
	struct link_arg *a = arg;
	struct hub_rtc *h = a->h;
	struct json_tok toks[HUB_RTC_TOKS];
	struct json_doc d;
	char type[16] = "", sid[40] = "", cam[KP_CAMERA_NAME_MAX + 1] = "";
	if (json_parse(&d, text, len, toks, HUB_RTC_TOKS) < 0 || toks[0].type != JSON_OBJECT) {
		kp_warn("hub rtc: site %s sent signaling that is not a JSON object; dropped",
			webd_hub_site_name(a->site));
		return;
	}
	int t = json_obj_get(&d, 0, "type"), s = json_obj_get(&d, 0, "sid"), c = json_obj_get(&d, 0, "camera");
	if (t >= 0)
		json_get_str(&d, t, type, sizeof type);
	int ri = -1;
	if (s >= 0 && toks[s].type == JSON_STRING) {
		if (json_get_str(&d, s, sid, sizeof sid) < 0 || (ri = route_of(h, sid)) < 0 || h->r[ri].site != a->site)
			return; /* a site speaks for its own sessions only */
	}
	char full[KP_SITE_NAME_MAX + KP_CAMERA_NAME_MAX + 2] = "";
	if (c >= 0 && json_get_str(&d, c, cam, sizeof cam) >= 0 && hub_camera_name_ok(cam))
		snprintf(full, sizeof full, "%s/%s", webd_hub_site_name(a->site), cam);
	static char out[KP_CONTROL_MESSAGE_MAX + 1024];
	struct json_w w;
	jw_init(&w, out, sizeof out);
	size_t olen;
	if (hub_copy_with(&d, 0, c >= 0 ? "camera" : "", full[0] ? full : "", &w) < 0 || jw_finish(&w, &olen) < 0) {
		kp_warn("hub rtc: site %s sent signaling that cannot be passed on; dropped",
			webd_hub_site_name(a->site));
		return;
	}
	to_browser(h, out, olen);
	if (ri >= 0 && !strcmp(type, "closed") && route_of(h, sid) == ri)
		route_drop(h, ri);
}

static void link_closed(void *arg, const char *why)
{
	struct link_arg *a = arg;
	struct hub_rtc *h = a->h;
	h->link[a->site] = NULL;
	char msg[256];
	snprintf(msg, sizeof msg, "Site %s is not reachable: %s.", webd_hub_site_name(a->site), why);
	for (unsigned i = h->n; i-- > 0;)
		if (h->r[i].site == a->site) {
			char sid[33];
			snprintf(sid, sizeof sid, "%s", h->r[i].sid);
			route_drop(h, (int)i);
			send_error(h, sid, "unavailable", msg, true);
		}
}

static const struct hub_ws_ops link_ops = {.on_message = link_message, .on_close = link_closed};

static int to_site(struct hub_rtc *h, unsigned site, const char *text, size_t len)
{
	if (!h->link[site]) {
		char why[256];
		h->args[site] = (struct link_arg){h, site};
		h->link[site] = webd_hub_link_open(site, &link_ops, &h->args[site], why, sizeof why);
		if (!h->link[site]) {
			kp_warn("hub rtc: no signaling link to site %s: %s", webd_hub_site_name(site), why);
			return -ENOTCONN;
		}
	}
	return hub_ws_send(h->link[site], text, len);
}

bool webd_hub_rtc_message(struct web_ws *ws, void **state, const uint8_t *data, size_t len)
{
	if (!webd_hub_enabled())
		return false;
	struct json_tok toks[HUB_RTC_TOKS];
	struct json_doc d;
	if (json_parse(&d, (const char *)data, len, toks, HUB_RTC_TOKS) < 0 || toks[0].type != JSON_OBJECT)
		return false; /* rtcd answers what cannot be read */
	char type[16] = "", sid[40] = "", full[KP_SITE_NAME_MAX + KP_CAMERA_NAME_MAX + 2] = "";
	int t = json_obj_get(&d, 0, "type"), s = json_obj_get(&d, 0, "sid"), c = json_obj_get(&d, 0, "camera");
	if (t < 0 || s < 0 || json_get_str(&d, t, type, sizeof type) < 0 || json_get_str(&d, s, sid, sizeof sid) < 0 ||
	    strlen(sid) > 32)
		return false;
	struct hub_rtc *h = *state;
	bool opens = !strcmp(type, "offer") || !strcmp(type, "mse");
	bool remote = opens && c >= 0 && json_get_str(&d, c, full, sizeof full) > 0 && strchr(full, '/');
	int ri = h ? route_of(h, sid) : -1;
	if (!remote) {
		if (ri >= 0 && opens) { /* the sid now names a camera of the hub's own */
			static const char bye[] = "{\"type\":\"bye\",\"sid\":\"%s\"}";
			char b[80];
			int n = snprintf(b, sizeof b, bye, sid);
			if (h->link[h->r[ri].site])
				hub_ws_send(h->link[h->r[ri].site], b, (size_t)n);
			route_drop(h, ri);
			return false;
		}
		if (ri < 0)
			return false;
		unsigned site = h->r[ri].site;
		if (!strcmp(type, "bye"))
			route_drop(h, ri);
		if (to_site(h, site, (const char *)data, len) < 0)
			send_error(h, sid, "unavailable", "The site's signaling link is full or down; offer again.",
				   false);
		return true;
	}
	if (!h) {
		h = calloc(1, sizeof *h);
		if (!h) {
			web_ws_close(ws, 1011, "out of memory");
			return true;
		}
		h->ws_id = web_ws_id(ws);
		*state = h;
	}
	char site_name[KP_SITE_NAME_MAX + 1], cam[KP_CAMERA_NAME_MAX + 1];
	int site = -1;
	if (hub_split_camera(full, site_name, sizeof site_name, cam, sizeof cam) == 0 && hub_camera_name_ok(cam))
		site = webd_hub_site_find(site_name);
	if (site < 0) {
		send_error(h, sid, "not_found", "No such site camera.", false);
		return true;
	}
	if (!strcmp(type, "mse")) {
		send_error(h, sid, "codec", "The MSE fallback is not offered for cameras of other sites.", false);
		return true;
	}
	if (ri < 0) {
		if (h->n >= HUB_RTC_SIDS) {
			send_error(h, sid, "admission", "This page already watches 64 cameras of other sites.", false);
			return true;
		}
		ri = (int)h->n++;
		snprintf(h->r[ri].sid, sizeof h->r[ri].sid, "%s", sid);
	} else if (h->r[ri].site != (unsigned)site && h->link[h->r[ri].site]) {
		char b[80];
		int n = snprintf(b, sizeof b, "{\"type\":\"bye\",\"sid\":\"%s\"}", sid);
		hub_ws_send(h->link[h->r[ri].site], b, (size_t)n);
	}
	h->r[ri].site = (unsigned)site;
	static char out[KP_CONTROL_MESSAGE_MAX + 1024];
	struct json_w w;
	jw_init(&w, out, sizeof out);
	size_t olen;
	if (hub_copy_with(&d, 0, "camera", cam, &w) < 0 || jw_finish(&w, &olen) < 0 || olen > KP_CONTROL_MESSAGE_MAX) {
		route_drop(h, ri);
		send_error(h, sid, "bad_request", "The offer cannot be passed on.", false);
		return true;
	}
	if (to_site(h, (unsigned)site, out, olen) < 0) {
		route_drop(h, ri);
		char msg[160];
		snprintf(msg, sizeof msg, "Site %s is not reachable right now; offer again.", site_name);
		send_error(h, sid, "unavailable", msg, false);
	}
	return true;
}

void webd_hub_rtc_end(void *state)
{
	struct hub_rtc *h = state;
	if (!h)
		return;
	for (unsigned i = 0; i < KP_MAX_SITES; i++)
		hub_ws_close(h->link[i]);
	free(h);
}
