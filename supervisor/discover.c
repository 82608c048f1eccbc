/* Cameras found on the local segments, for `keeppeekctl cameras discover` and the
 * Settings page: the supervisor asks ingestd (which has the network and the protocols;
 * DiscoverRequest), gathers its DiscoverFound pieces and answers every asker that
 * waits for that search, as a table or JSON, each camera with a URL to start from (its
 * password left as ${CAMERA_PASSWORD}: keeppeek.conf(5) Secrets). One search at a time;
 * askers that come while it runs wait for it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "log.h"
#include "supervisor.h"

#define DISCOVER_WAIT_MS   3000  /* ingestd listens this long */
#define DISCOVER_DEADLINE  15000 /* the answer is given by then even if ingestd is silent */
#define DISCOVER_ASKERS    8
#define DISCOVER_FOUND_MAX 64

struct asker {
	uint64_t ticket;   /* keeppeekctl */
	struct proc *webd; /* or webd's question */
	uint32_t id;
	bool json;
};

static struct {
	bool running, timer_open;
	uint32_t id;
	uv_timer_t deadline;
	struct asker askers[DISCOVER_ASKERS];
	unsigned naskers;
	kp_DiscoveredCamera found[DISCOVER_FOUND_MAX];
	unsigned nfound;
} D;

/* A URL to start from: its user and password are the user's to fill in. */
static void url_of(const kp_DiscoveredCamera *c, char *out, size_t cap)
{
	if (!strcmp(c->kind, "baichuan")) {
		snprintf(out, cap, "bcudp://admin:${CAMERA_PASSWORD}@%s/?uid=%s", c->address, c->uid);
		return;
	}
	snprintf(out, cap, "rtsp://admin:${CAMERA_PASSWORD}@%s:554/", c->address);
}

static void render(struct kp_out *o, bool json, const char *error)
{
	char url[400];
	if (json) {
		kp_out_put(o, "{\"cameras\":[");
		for (unsigned i = 0; i < D.nfound; i++) {
			const kp_DiscoveredCamera *c = &D.found[i];
			url_of(c, url, sizeof url);
			kp_out_put(o, "%s{\"kind\":", i ? "," : "");
			kp_out_json_string(o, c->kind);
			kp_out_put(o, ",\"address\":");
			kp_out_json_string(o, c->address);
			kp_out_put(o, ",\"port\":%u,\"uid\":", (unsigned)c->port);
			kp_out_json_string(o, c->uid);
			kp_out_put(o, ",\"name\":");
			kp_out_json_string(o, c->name);
			kp_out_put(o, ",\"model\":");
			kp_out_json_string(o, c->model);
			kp_out_put(o, ",\"xaddr\":");
			kp_out_json_string(o, c->xaddr);
			kp_out_put(o, ",\"url\":");
			kp_out_json_string(o, url);
			kp_out_put(o, "}");
		}
		kp_out_put(o, "],\"error\":");
		kp_out_json_string(o, error ? error : "");
		kp_out_put(o, "}\n");
		return;
	}
	if (error)
		kp_out_put(o, "%s\n", error);
	if (!D.nfound) {
		kp_out_put(o, "no camera answered within %d ms\n", DISCOVER_WAIT_MS);
		return;
	}
	kp_out_put(o, "%-9s %-16s %-18s %-24s %s\n", "KIND", "ADDRESS", "UID", "NAME / MODEL", "URL TO START FROM");
	for (unsigned i = 0; i < D.nfound; i++) {
		const kp_DiscoveredCamera *c = &D.found[i];
		char who[140];
		snprintf(who, sizeof who, "%s%s%s", c->name, c->name[0] && c->model[0] ? " / " : "", c->model);
		url_of(c, url, sizeof url);
		kp_out_put(o, "%-9s %-16s %-18s %-24s %s\n", c->kind, c->address, c->uid[0] ? c->uid : "-",
			   who[0] ? who : "-", url);
	}
}

static void answer_all(struct supervisor *s, const char *error)
{
	static char text[64 * 1024];
	for (unsigned i = 0; i < D.naskers; i++) {
		struct asker *a = &D.askers[i];
		struct kp_out o = {.buf = text, .len = sizeof text};
		text[0] = '\0';
		render(&o, a->json, error);
		if (a->webd) {
			auth_web_answer(a->webd, a->id, 0, text, strlen(text));
		} else {
			int r = control_answer(s, a->ticket, error && !D.nfound ? 1 : 0, text, strlen(text));
			if (r < 0 && r != -ENOENT)
				kp_warn("discover: answer to keeppeekctl not delivered: %s", strerror(-r));
		}
	}
	D.naskers = 0;
	D.running = false;
	uv_timer_stop(&D.deadline);
}

static void on_deadline(uv_timer_t *t)
{
	answer_all(t->data, "ingestd did not finish the search in time");
}

int discover_start(struct supervisor *s, uint64_t ticket, struct proc *webd, uint32_t id, bool json, char *err,
		   size_t errlen)
{
	if (D.naskers == DISCOVER_ASKERS) {
		snprintf(err, errlen, "%d searches are waiting already; try again", DISCOVER_ASKERS);
		return -EBUSY;
	}
	if (!D.running) {
		struct proc *p = proc_by_peer(s, kp_Peer_PEER_INGESTD);
		if (!p || p->state != PROC_RUNNING || !p->ipc) {
			snprintf(err, errlen, "ingestd is not running: no search now");
			return -ENOTCONN;
		}
		kp_Envelope env = kp_Envelope_init_zero;
		env.which_msg = kp_Envelope_discover_request_tag;
		env.msg.discover_request.id = ++D.id;
		env.msg.discover_request.timeout_ms = DISCOVER_WAIT_MS;
		int r = kp_ipc_send(p->ipc, &env, NULL, 0, NULL, 0);
		if (r < 0) {
			snprintf(err, errlen, "asking ingestd failed: %s", strerror(-r));
			return r;
		}
		if (!D.timer_open) {
			uv_timer_init(s->loop, &D.deadline);
			D.deadline.data = s;
			D.timer_open = true;
		}
		uv_timer_start(&D.deadline, on_deadline, DISCOVER_DEADLINE, 0);
		D.running = true;
		D.nfound = 0;
	}
	D.askers[D.naskers++] = (struct asker){.ticket = ticket, .webd = webd, .id = id, .json = json};
	return 0;
}

void discover_on_found(struct supervisor *s, const kp_DiscoverFound *f)
{
	if (!D.running || f->id != D.id)
		return;
	if (f->has_camera && D.nfound < DISCOVER_FOUND_MAX)
		D.found[D.nfound++] = f->camera;
	if (f->done)
		answer_all(s, NULL);
}

void discover_close(void)
{
	if (D.timer_open)
		uv_close((uv_handle_t *)&D.deadline, NULL);
	D.timer_open = false;
}
