/* libnice agents on a dedicated GLib thread, events handed to the libuv loop thread
 * through a bounded queue (see ice.h). */
#include "ice.h"

#include <agent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "kp_limits.h"
#include "log.h"
#include "send_msgs.h"

struct rtc_ice {
	NiceAgent *agent;
	guint stream;
	uint64_t key;
	/* The selected pair's UDP socket (a reference) and remote address, for
	 * rtc_ice_send_batch; NULL: none (no pair yet, relayed or TCP): nice_agent_send. The
	 * descriptor lives as long as the stream: libnice closes it in remove_stream. */
	GSocket *sock;
	int fd;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	bool warned;
};

/* What new-selected-pair-full tells the loop thread (the data of its event). */
struct ice_pair {
	bool udp; /* a host or server-reflexive UDP candidate: its socket may be written */
	struct sockaddr_storage peer;
	socklen_t peer_len;
};

static struct {
	GMainContext *ctx;
	GMainLoop *loop;
	pthread_t thread;
	bool running;
	uv_async_t async;
	rtc_ice_event_cb cb;
	pthread_mutex_t lock;
	struct rtc_ice_event *head, *tail;
	size_t items, bytes;
	uint64_t dropped;
	struct rtc_ice_net net;
	enum rtc_send_mode mode;
	struct rtc_ice_send_stats st; /* loop thread only */
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void push(enum rtc_ice_event_kind kind, uint64_t key, const void *data, size_t len)
{
	pthread_mutex_lock(&g.lock);
	bool full = g.items >= RTC_ICE_QUEUE_ITEMS || g.bytes + len > RTC_ICE_QUEUE_BYTES;
	if (full && kind == RTC_ICE_RECV) {
		g.dropped++;
		pthread_mutex_unlock(&g.lock);
		return;
	}
	pthread_mutex_unlock(&g.lock);
	struct rtc_ice_event *ev = malloc(sizeof *ev + len);
	if (!ev) {
		pthread_mutex_lock(&g.lock);
		g.dropped++;
		pthread_mutex_unlock(&g.lock);
		return;
	}
	ev->kind = kind;
	ev->key = key;
	ev->len = len;
	ev->next = NULL;
	if (len)
		memcpy(ev->data, data, len);
	pthread_mutex_lock(&g.lock);
	if (g.tail)
		g.tail->next = ev;
	else
		g.head = ev;
	g.tail = ev;
	g.items++;
	g.bytes += len;
	pthread_mutex_unlock(&g.lock);
	uv_async_send(&g.async);
}

static void on_async(uv_async_t *a)
{
	(void)a;
	pthread_mutex_lock(&g.lock);
	struct rtc_ice_event *ev = g.head;
	g.head = g.tail = NULL;
	g.items = 0;
	g.bytes = 0;
	pthread_mutex_unlock(&g.lock);
	while (ev) {
		struct rtc_ice_event *next = ev->next;
		g.cb(ev);
		free(ev);
		ev = next;
	}
}

static void on_recv(NiceAgent *agent, guint stream, guint comp, guint len, gchar *buf, gpointer data)
{
	(void)agent;
	(void)stream;
	(void)comp;
	push(RTC_ICE_RECV, (uint64_t)(uintptr_t)data, buf, len);
}

static void on_gathered(NiceAgent *agent, guint stream, gpointer data)
{
	(void)agent;
	(void)stream;
	push(RTC_ICE_GATHERED, (uint64_t)(uintptr_t)data, NULL, 0);
}

static void on_state(NiceAgent *agent, guint stream, guint comp, guint state, gpointer data)
{
	(void)agent;
	(void)stream;
	(void)comp;
	if (state == NICE_COMPONENT_STATE_READY)
		push(RTC_ICE_CONNECTED, (uint64_t)(uintptr_t)data, NULL, 0);
	else if (state == NICE_COMPONENT_STATE_FAILED)
		push(RTC_ICE_FAILED, (uint64_t)(uintptr_t)data, NULL, 0);
}

/* libnice selected a pair: from now on nice_agent_send sends (a DTLS flight that could
 * not go out before is sent again at once, session.c), and the pair's remote address
 * goes with the event for rtc_ice_send_batch (libnice hands copies of the candidates). */
static void on_selected(NiceAgent *agent, guint stream, guint comp, NiceCandidate *local, NiceCandidate *remote,
			gpointer data)
{
	(void)agent;
	(void)stream;
	(void)comp;
	struct ice_pair p;
	memset(&p, 0, sizeof p);
	p.udp = local->type != NICE_CANDIDATE_TYPE_RELAYED && local->transport == NICE_CANDIDATE_TRANSPORT_UDP &&
		remote->transport == NICE_CANDIDATE_TRANSPORT_UDP;
	nice_address_copy_to_sockaddr(&remote->addr, (struct sockaddr *)&p.peer);
	p.peer_len = p.peer.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (p.peer.ss_family != AF_INET && p.peer.ss_family != AF_INET6)
		p.udp = false;
	push(RTC_ICE_CONNECTED, (uint64_t)(uintptr_t)data, &p, sizeof p);
}

static void *thread_main(void *arg)
{
	(void)arg;
	g_main_context_push_thread_default(g.ctx);
	g_main_loop_run(g.loop);
	g_main_context_pop_thread_default(g.ctx);
	return NULL;
}

int rtc_ice_start(uv_loop_t *loop, rtc_ice_event_cb cb, const struct rtc_ice_net *net, enum rtc_send_mode mode)
{
	g.cb = cb;
	g.net = *net;
	g.mode = mode;
	int r = uv_async_init(loop, &g.async, on_async);
	if (r < 0) {
		kp_err("ice: uv_async_init failed: %s", uv_strerror(r));
		return r;
	}
	g.ctx = g_main_context_new();
	g.loop = g_main_loop_new(g.ctx, FALSE);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, KP_RTC_THREAD_STACK);
	r = pthread_create(&g.thread, &attr, thread_main, NULL);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		kp_err("ice: starting the libnice thread failed: %s", strerror(r));
		return -r;
	}
	g.running = true;
	return 0;
}

static gboolean quit_in_thread(gpointer data)
{
	(void)data;
	g_main_loop_quit(g.loop);
	return G_SOURCE_REMOVE;
}

void rtc_ice_stop(void)
{
	if (!g.running)
		return;
	g_main_context_invoke(g.ctx, quit_in_thread, NULL);
	pthread_join(g.thread, NULL);
	g.running = false;
	uv_close((uv_handle_t *)&g.async, NULL);
}

struct rtc_ice *rtc_ice_new(uint64_t key, const char *remote_ufrag, const char *remote_pwd)
{
	struct rtc_ice *ice = calloc(1, sizeof *ice);
	if (!ice)
		return NULL;
	ice->key = key;
	ice->fd = -1;
	ice->agent = nice_agent_new_full(g.ctx, NICE_COMPATIBILITY_RFC5245, NICE_AGENT_OPTION_ICE_TRICKLE);
	if (!ice->agent) {
		free(ice);
		errno = ENOMEM;
		return NULL;
	}
	g_object_set(ice->agent, "controlling-mode", FALSE, "ice-tcp", FALSE, "ice-udp", TRUE, NULL);
	if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice->agent), "upnp"))
		g_object_set(ice->agent, "upnp", FALSE, NULL);
	/* RFC 7675: a browser that went away without a bye fails the agent within ~30 s. */
	if (g_object_class_find_property(G_OBJECT_GET_CLASS(ice->agent), "consent-freshness"))
		g_object_set(ice->agent, "consent-freshness", TRUE, NULL);
	if (g.net.stun_ip[0])
		g_object_set(ice->agent, "stun-server", g.net.stun_ip, "stun-server-port", g.net.stun_port, NULL);
	for (unsigned i = 0; i < g.net.nlocal; i++) {
		NiceAddress a;
		nice_address_init(&a);
		if (nice_address_set_from_string(&a, g.net.local_ips[i]))
			nice_agent_add_local_address(ice->agent, &a);
	}
	gpointer data = (gpointer)(uintptr_t)key;
	g_signal_connect(ice->agent, "candidate-gathering-done", G_CALLBACK(on_gathered), data);
	g_signal_connect(ice->agent, "component-state-changed", G_CALLBACK(on_state), data);
	g_signal_connect(ice->agent, "new-selected-pair-full", G_CALLBACK(on_selected), data);
	ice->stream = nice_agent_add_stream(ice->agent, 1);
	if (ice->stream == 0)
		goto fail;
	if (g.net.port_min && g.net.port_max >= g.net.port_min)
		nice_agent_set_port_range(ice->agent, ice->stream, 1, g.net.port_min, g.net.port_max);
	if (!nice_agent_set_remote_credentials(ice->agent, ice->stream, remote_ufrag, remote_pwd))
		goto fail;
	nice_agent_attach_recv(ice->agent, ice->stream, 1, g.ctx, on_recv, data);
	if (!nice_agent_gather_candidates(ice->agent, ice->stream)) {
		kp_warn("ice: gathering candidates failed (UDP ports %u-%u exhausted?)", g.net.port_min,
			g.net.port_max);
		goto fail;
	}
	return ice;
fail:
	rtc_ice_free(ice);
	errno = EADDRNOTAVAIL;
	return NULL;
}

int rtc_ice_local(struct rtc_ice *ice, char *ufrag, size_t ufrag_cap, char *pwd, size_t pwd_cap,
		  char cands[][RTC_ICE_CANDIDATE_MAX], unsigned max, unsigned *ret_n)
{
	gchar *u = NULL, *p = NULL;
	if (!nice_agent_get_local_credentials(ice->agent, ice->stream, &u, &p))
		return -EIO;
	snprintf(ufrag, ufrag_cap, "%s", u);
	snprintf(pwd, pwd_cap, "%s", p);
	g_free(u);
	g_free(p);
	GSList *list = nice_agent_get_local_candidates(ice->agent, ice->stream, 1);
	unsigned n = 0;
	for (GSList *l = list; l; l = l->next) {
		NiceCandidate *c = l->data;
		gchar *line = nice_agent_generate_local_candidate_sdp(ice->agent, c);
		const char *s = line;
		if (s && strncmp(s, "a=", 2) == 0)
			s += 2;
		if (s && n < max && strlen(s) < RTC_ICE_CANDIDATE_MAX)
			snprintf(cands[n++], RTC_ICE_CANDIDATE_MAX, "%s", s);
		g_free(line);
		nice_candidate_free(c);
	}
	g_slist_free(list);
	*ret_n = n;
	return n ? 0 : -EADDRNOTAVAIL;
}

int rtc_ice_add_remote(struct rtc_ice *ice, const char *candidate)
{
	char line[RTC_ICE_CANDIDATE_MAX + 8];
	int n = snprintf(line, sizeof line, "a=%s", candidate);
	if (n < 0 || (size_t)n >= sizeof line)
		return -EINVAL;
	NiceCandidate *c = nice_agent_parse_remote_candidate_sdp(ice->agent, ice->stream, line);
	if (!c)
		return -EINVAL;
	if (c->transport != NICE_CANDIDATE_TRANSPORT_UDP) {
		nice_candidate_free(c);
		return -EINVAL;
	}
	GSList *l = g_slist_append(NULL, c);
	int added = nice_agent_set_remote_candidates(ice->agent, ice->stream, 1, l);
	g_slist_free(l);
	nice_candidate_free(c);
	return added > 0 ? 0 : -EINVAL;
}

int rtc_ice_send(struct rtc_ice *ice, const uint8_t *data, size_t len)
{
	gint r = nice_agent_send(ice->agent, ice->stream, 1, (guint)len, (const gchar *)data);
	if (r != (gint)len)
		return -EAGAIN; /* socket full, or no selected pair yet */
	g.st.unbatched++;
	return 0;
}

static void drop_socket(struct rtc_ice *ice)
{
	if (ice->sock)
		g_object_unref(ice->sock);
	ice->sock = NULL;
	ice->fd = -1;
}

void rtc_ice_on_connected(struct rtc_ice *ice, const struct rtc_ice_event *ev)
{
	if (ev->kind != RTC_ICE_CONNECTED || ev->len != sizeof(struct ice_pair))
		return; /* a component state change: the pair's event carries the address */
	struct ice_pair p;
	memcpy(&p, ev->data, sizeof p);
	drop_socket(ice);
	if (!p.udp || g.mode == RTC_SEND_NICE)
		return;
	GSocket *gs = nice_agent_get_selected_socket(ice->agent, ice->stream, 1);
	if (!gs)
		return; /* relayed or TCP after all, or the pair went away meanwhile */
	GSocketFamily fam = g_socket_get_family(gs);
	if ((fam == G_SOCKET_FAMILY_IPV4 && p.peer.ss_family != AF_INET) ||
	    (fam == G_SOCKET_FAMILY_IPV6 && p.peer.ss_family != AF_INET6) ||
	    (fam != G_SOCKET_FAMILY_IPV4 && fam != G_SOCKET_FAMILY_IPV6)) {
		g_object_unref(gs); /* another pair was selected since: its own event follows */
		return;
	}
	ice->sock = gs;
	ice->fd = g_socket_get_fd(gs);
	ice->peer = p.peer;
	ice->peer_len = p.peer_len;
}

static unsigned send_nice(struct rtc_ice *ice, const struct rtc_ice_pkt *pkts, unsigned n, int *ret_err)
{
	unsigned i;
	for (i = 0; i < n; i++) {
		gint r = nice_agent_send(ice->agent, ice->stream, 1, (guint)pkts[i].len, (const gchar *)pkts[i].data);
		if (r != (gint)pkts[i].len) {
			*ret_err = EAGAIN; /* libnice says no more than that */
			g.st.err_full++;
			break;
		}
	}
	g.st.unbatched += i;
	return i;
}

unsigned rtc_ice_send_batch(struct rtc_ice *ice, const struct rtc_ice_pkt *pkts, unsigned n, int *ret_err)
{
	*ret_err = 0;
	if (n > RTC_ICE_BATCH_MAX)
		n = RTC_ICE_BATCH_MAX;
	unsigned sent;
	if (!ice->sock || g.mode == RTC_SEND_NICE) {
		sent = send_nice(ice, pkts, n, ret_err);
	} else {
		struct mmsghdr m[RTC_ICE_BATCH_MAX];
		struct iovec iov[RTC_ICE_BATCH_MAX];
		char cm[RTC_ICE_BATCH_MAX][RTC_SEND_CMSG];
		unsigned end[RTC_ICE_BATCH_MAX];
		unsigned nm =
		    rtc_send_msgs(pkts, n, g.mode == RTC_SEND_GSO, &ice->peer, ice->peer_len, m, iov, cm, end);
		unsigned done = 0; /* messages */
		sent = 0;
		while (done < nm) {
			int r = sendmmsg(ice->fd, m + done, nm - done, MSG_DONTWAIT);
			g.st.syscalls++;
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && g.mode == RTC_SEND_GSO && m[done].msg_hdr.msg_iovlen > 1 &&
			    (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP)) {
				/* The kernel or the device cannot segment: one datagram per message from now on. */
				kp_warn("ice: UDP GSO refused (%s); sending one datagram per message from now on",
					strerror(errno));
				g.mode = RTC_SEND_MMSG;
				g.st.gso_off++;
				nm = done + rtc_send_msgs(pkts + sent, n - sent, false, &ice->peer, ice->peer_len,
							  m + done, iov + sent, cm + done, end + done);
				for (unsigned k = done; k < nm; k++)
					end[k] += sent;
				continue;
			}
			if (r < 0) {
				*ret_err = errno;
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) {
					g.st.err_full++;
				} else {
					g.st.err_other++;
					if (!ice->warned)
						kp_warn("ice: sendmmsg of %u datagrams failed: %s", n - sent,
							strerror(errno));
					ice->warned = true;
				}
				break;
			}
			for (unsigned k = done; k < done + (unsigned)r; k++)
				if (m[k].msg_hdr.msg_iovlen > 1)
					g.st.gso_messages++;
			done += (unsigned)r;
			sent = end[done - 1];
		}
		g.st.batched += sent;
	}
	if (sent < n)
		g.st.dropped += n - sent;
	return sent;
}

static gboolean free_in_thread(gpointer data)
{
	NiceAgent *agent = data;
	g_object_unref(agent);
	return G_SOURCE_REMOVE;
}

void rtc_ice_free(struct rtc_ice *ice)
{
	if (!ice)
		return;
	drop_socket(ice);
	if (ice->stream)
		nice_agent_attach_recv(ice->agent, ice->stream, 1, g.ctx, NULL, NULL);
	g_signal_handlers_disconnect_matched(ice->agent, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL,
					     (gpointer)(uintptr_t)ice->key);
	if (ice->stream)
		nice_agent_remove_stream(ice->agent, ice->stream);
	/* Dropped on the GLib thread so no callback of it is running meanwhile. */
	g_main_context_invoke(g.ctx, free_in_thread, ice->agent);
	free(ice);
}

uint64_t rtc_ice_events_dropped(void)
{
	pthread_mutex_lock(&g.lock);
	uint64_t d = g.dropped;
	pthread_mutex_unlock(&g.lock);
	return d;
}

void rtc_ice_send_stats(struct rtc_ice_send_stats *ret)
{
	*ret = g.st;
}
