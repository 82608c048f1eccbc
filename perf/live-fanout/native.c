/* live-fanout native client: the producer and the N subscribers of perf/live-fanout in
 * one C process (run.py --native drives it), so that the client is not the limit.
 *
 * Producer: envelope-only events (keeppeek.analysis.PublishEvent, no JPEG) POSTed as
 * application/x-protobuf on --conns keep-alive connections, at most --depth requests in
 * flight on each (HTTP/1.1 pipelining); event i is due at t0 + i/rate. Each answer must
 * be 200 with a PublishAck naming the event; lateness (send - due) and publish->ack
 * latency are kept per event. Subscribers: N WebSockets on /api/v1/live; each text
 * message naming one of our events is counted in a per-subscriber table (duplicates,
 * events never published, binary messages, resync and error notices counted apart) and
 * folded into an order hash, so that all subscribers can be shown to have seen the same
 * order. All sockets run in one epoll loop on one thread.
 *
 * Protocol (stdout/stdin lines):
 *   out: "subscribed"            all N WebSocket upgrades answered 101
 *   in:  "go T0"                 T0: CLOCK_MONOTONIC seconds of event 0's due time
 *   out: "summary {json}"        after the producer finished and deliveries drained
 * Usage: live-fanout-native PORT TOKEN CAMERA TAG RATE EVENTS CONNS DEPTH SUBSCRIBERS
 *        WINDOW_FIRST WINDOW_EVENTS DRAIN_S */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS  256
#define MAX_SUBS   256
#define IN_CAP     (1 << 20)
#define REQ_CAP    1024
#define SUB_WAVE   32
#define LATE_LIMIT 1.0 /* s: a publication sent later than this is not "on time" */

struct conn {
	int fd;
	bool sub;
	bool upgraded;
	unsigned idx;
	uint8_t *in;
	size_t in_len;
	/* producer: the events in flight, oldest first */
	uint32_t fly[64];
	unsigned nfly;
	bool dead; /* closed by the server */
	/* subscriber */
	uint8_t *seen; /* per event: times received */
	uint64_t received, dup, foreign, binary, resyncs, errors, closed;
	uint64_t order_hash;
};

static struct {
	int ep;
	const char *token, *camera, *tag;
	double rate, t0;
	uint32_t events, win_first, win_events;
	unsigned nconns, depth, nsubs;
	struct conn conns[MAX_CONNS], subs[MAX_SUBS];
	double *due_sent, *acked;
	uint16_t *status;
	uint32_t next;
	uint32_t sent; /* events sent: G.next, or fewer when the schedule was abandoned */
	uint64_t answers, bad_answers, closed_conns;
	char id_prefix[96];
	size_t id_prefix_len;
	struct sockaddr_in addr;
} G;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "live-fanout-native: %s: %s\n", what, strerror(errno));
	exit(2);
}

static int connect_one(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("socket");
	int one = 1;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
		die("TCP_NODELAY");
	if (connect(fd, (struct sockaddr *)&G.addr, sizeof G.addr) < 0)
		die("connect");
	return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			die("send");
		b += w;
		n -= (size_t)w;
	}
}

static size_t varint(uint8_t *o, uint64_t v)
{
	size_t n = 0;
	do {
		o[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			o[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

static size_t pb_bytes(uint8_t *o, unsigned field, const void *p, size_t len)
{
	size_t n = varint(o, field << 3 | 2);
	n += varint(o + n, len);
	memcpy(o + n, p, len);
	return n + len;
}

/* PublishEvent{id, revision 1, camera, "sub", start, end, label person 0.9, bench attribute}. */
static size_t publish_body(uint8_t *o, uint32_t i)
{
	char id[96];
	int idn = snprintf(id, sizeof id, "%s%08u", G.id_prefix, i);
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	uint64_t ms = (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
	size_t n = pb_bytes(o, 1, id, (size_t)idn);
	n += varint(o + n, 2 << 3);
	n += varint(o + n, 1);
	n += pb_bytes(o + n, 3, G.camera, strlen(G.camera));
	n += pb_bytes(o + n, 4, "sub", 3);
	n += varint(o + n, 5 << 3);
	n += varint(o + n, ms);
	n += varint(o + n, 6 << 3);
	n += varint(o + n, ms + 4000);
	uint8_t lab[32];
	size_t ln = pb_bytes(lab, 1, "person", 6);
	float score = 0.9f;
	lab[ln++] = 2 << 3 | 5;
	memcpy(lab + ln, &score, 4);
	ln += 4;
	n += pb_bytes(o + n, 7, lab, ln);
	uint8_t attr[48];
	size_t an = pb_bytes(attr, 1, "bench", 5);
	an += pb_bytes(attr + an, 2, "live-fanout", 11);
	n += pb_bytes(o + n, 9, attr, an);
	return n;
}

static void send_publish(struct conn *c, uint32_t i)
{
	uint8_t body[512], req[REQ_CAP];
	size_t bn = publish_body(body, i);
	int hn = snprintf((char *)req, sizeof req,
			  "POST /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
			  "Content-Type: application/x-protobuf\r\nContent-Length: %zu\r\n\r\n",
			  G.token, bn);
	if (hn < 0 || (size_t)hn + bn > sizeof req) {
		fprintf(stderr, "live-fanout-native: request too large\n");
		exit(2);
	}
	memcpy(req + hn, body, bn);
	G.due_sent[2 * i + 1] = now_s();
	send_all(c->fd, req, (size_t)hn + bn);
	c->fly[c->nfly++] = i;
}

/* One HTTP answer at the start of c->in: its length, 0 when incomplete. */
static size_t take_answer(struct conn *c)
{
	uint8_t *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
	if (!end)
		return 0;
	size_t head = (size_t)(end - c->in) + 4;
	unsigned status = 0;
	if (sscanf((char *)c->in, "HTTP/1.1 %u", &status) != 1) {
		fprintf(stderr, "live-fanout-native: not an HTTP answer: %.40s\n", (char *)c->in);
		exit(2);
	}
	size_t clen = 0;
	uint8_t *h = memmem(c->in, head, "\r\nContent-Length:", 17);
	if (!h)
		h = memmem(c->in, head, "\r\ncontent-length:", 17);
	if (h)
		clen = strtoul((char *)h + 17, NULL, 10);
	if (c->in_len < head + clen)
		return 0;
	if (!c->nfly) {
		fprintf(stderr, "live-fanout-native: an answer with no request in flight\n");
		exit(2);
	}
	uint32_t i = c->fly[0];
	memmove(c->fly, c->fly + 1, --c->nfly * sizeof c->fly[0]);
	G.acked[i] = now_s();
	G.status[i] = (uint16_t)status;
	G.answers++;
	char id[96];
	int idn = snprintf(id, sizeof id, "%s%08u", G.id_prefix, i);
	/* PublishAck: field 1 (the id) first. */
	if (status == 200 && (clen < (size_t)idn + 2 || c->in[head] != 0x0a || c->in[head + 1] != idn ||
			      memcmp(c->in + head + 2, id, (size_t)idn))) {
		G.bad_answers++;
		G.status[i] = 299;
	}
	return head + clen;
}

static void on_sub_text(struct conn *c, const uint8_t *p, size_t n)
{
	if (memmem(p, n, "\"type\":\"resync\"", 15)) {
		c->resyncs++;
		return;
	}
	if (memmem(p, n, "\"type\":\"error\"", 14)) {
		c->errors++;
		return;
	}
	char key[128];
	int kn = snprintf(key, sizeof key, "\"id\":\"%s", G.id_prefix);
	uint8_t *id = memmem(p, n, key, (size_t)kn);
	if (!id || !memmem(p, n, "\"jpeg_follows\":false", 20)) {
		c->foreign++;
		return;
	}
	char *e;
	unsigned long i = strtoul((char *)id + kn, &e, 10);
	if (*e != '"' || i >= G.events) {
		c->foreign++;
		return;
	}
	if (c->seen[i]++)
		c->dup++;
	else
		c->received++;
	c->order_hash = (c->order_hash ^ (i + 1)) * 1099511628211ull;
}

/* WebSocket frames at the start of c->in (server frames are not masked). */
static size_t take_frames(struct conn *c)
{
	size_t off = 0;
	for (;;) {
		uint8_t *b = c->in + off;
		size_t left = c->in_len - off;
		if (left < 2)
			break;
		unsigned op = b[0] & 0x0f;
		uint64_t len = b[1] & 0x7f;
		size_t h = 2;
		if (len == 126) {
			if (left < 4)
				break;
			len = (uint64_t)b[2] << 8 | b[3];
			h = 4;
		} else if (len == 127) {
			if (left < 10)
				break;
			len = 0;
			for (int k = 0; k < 8; k++)
				len = len << 8 | b[2 + k];
			h = 10;
		}
		if (len > IN_CAP - 16) {
			fprintf(stderr, "live-fanout-native: a %llu-byte WebSocket message\n", (unsigned long long)len);
			exit(2);
		}
		if (left < h + len)
			break;
		if (op == 1)
			on_sub_text(c, b + h, (size_t)len);
		else if (op == 2)
			c->binary++;
		else if (op == 8)
			c->closed++;
		off += h + (size_t)len;
	}
	return off;
}

static void consume(struct conn *c, size_t used)
{
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
}

static void on_readable(struct conn *c)
{
	for (;;) {
		if (c->in_len == IN_CAP) {
			fprintf(stderr, "live-fanout-native: input buffer full\n");
			exit(2);
		}
		ssize_t n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			if (c->sub) {
				c->closed++;
			} else {
				G.closed_conns++;
				c->nfly = 0; /* never answered: status 0 */
				c->dead = true;
			}
			if (epoll_ctl(G.ep, EPOLL_CTL_DEL, c->fd, NULL) < 0)
				die("epoll_ctl");
			return;
		}
		c->in_len += (size_t)n;
		if (c->sub && !c->upgraded) {
			uint8_t *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
			if (!end)
				continue;
			if (strncmp((char *)c->in, "HTTP/1.1 101", 12)) {
				fprintf(stderr, "live-fanout-native: subscriber %u refused: %.60s\n", c->idx,
					(char *)c->in);
				exit(2);
			}
			c->upgraded = true;
			consume(c, (size_t)(end - c->in) + 4);
		}
		if (c->sub) {
			consume(c, take_frames(c));
			continue;
		}
		for (size_t used; (used = take_answer(c)) > 0;)
			consume(c, used);
	}
}

static void add(struct conn *c)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
	if (epoll_ctl(G.ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
		die("epoll_ctl");
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Nearest rank. */
static double pct(double *v, size_t n, double p)
{
	if (!n)
		return -1;
	size_t k = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	return v[k - 1];
}

static void poll_once(int timeout_ms)
{
	struct epoll_event evs[64];
	int n = epoll_wait(G.ep, evs, 64, timeout_ms);
	if (n < 0 && errno != EINTR)
		die("epoll_wait");
	for (int k = 0; k < n; k++)
		on_readable(evs[k].data.ptr);
}

/* Until the first n subscribers' upgrades are answered. */
static void wait_upgraded(unsigned n)
{
	for (;;) {
		unsigned up = 0;
		for (unsigned s = 0; s < n; s++)
			up += G.subs[s].upgraded;
		if (up == n)
			return;
		poll_once(100);
	}
}

/* Sends what is due on connections with room; false when something due found none. */
static bool publish_due(void)
{
	double t = now_s();
	while (G.next < G.events && G.t0 + G.next / G.rate <= t && t < G.t0 + G.events / G.rate + LATE_LIMIT) {
		struct conn *best = NULL;
		for (unsigned k = 0; k < G.nconns; k++) {
			struct conn *c = &G.conns[(G.next + k) % G.nconns];
			if (!c->dead && c->nfly < G.depth) {
				best = c;
				break;
			}
		}
		if (!best)
			return false;
		send_publish(best, G.next++);
	}
	return true;
}

/* Publications still unsent LATE_LIMIT after the last one was due are not sent at all
 * (a producer that cannot hold the rate would otherwise go on for minutes). */
static bool producer_done(void)
{
	if (G.next < G.events && now_s() < G.t0 + G.events / G.rate + LATE_LIMIT)
		return false;
	for (unsigned k = 0; k < G.nconns; k++)
		if (G.conns[k].nfly)
			return false;
	return true;
}

static bool drained(void)
{
	for (unsigned s = 0; s < G.nsubs; s++)
		for (uint32_t i = 0; i < G.events; i++)
			if (G.status[i] == 200 && !G.subs[s].seen[i])
				return false;
	return true;
}

int main(int argc, char **argv)
{
	if (argc != 13) {
		fprintf(stderr,
			"usage: %s PORT TOKEN CAMERA TAG RATE EVENTS CONNS DEPTH SUBSCRIBERS WINDOW_FIRST "
			"WINDOW_EVENTS DRAIN_S\n",
			argv[0]);
		return 2;
	}
	G.addr.sin_family = AF_INET;
	G.addr.sin_port = htons((uint16_t)atoi(argv[1]));
	G.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	G.token = argv[2];
	G.camera = argv[3];
	G.tag = argv[4];
	G.rate = atof(argv[5]);
	G.events = (uint32_t)strtoul(argv[6], NULL, 10);
	G.nconns = (unsigned)atoi(argv[7]);
	G.depth = (unsigned)atoi(argv[8]);
	G.nsubs = (unsigned)atoi(argv[9]);
	G.win_first = (uint32_t)strtoul(argv[10], NULL, 10);
	G.win_events = (uint32_t)strtoul(argv[11], NULL, 10);
	double drain_s = atof(argv[12]);
	if (G.nconns < 1 || G.nconns > MAX_CONNS || G.nsubs > MAX_SUBS || G.depth < 1 || G.depth > 64 || G.rate <= 0 ||
	    !G.events) {
		fprintf(stderr, "live-fanout-native: bad arguments\n");
		return 2;
	}
	G.id_prefix_len = (size_t)snprintf(G.id_prefix, sizeof G.id_prefix, "lf-%s-", G.tag);
	G.due_sent = calloc(2 * (size_t)G.events, sizeof *G.due_sent);
	G.acked = calloc(G.events, sizeof *G.acked);
	G.status = calloc(G.events, sizeof *G.status);
	if (!G.due_sent || !G.acked || !G.status)
		die("calloc");
	G.ep = epoll_create1(EPOLL_CLOEXEC);
	if (G.ep < 0)
		die("epoll_create1");
	/* In waves of SUB_WAVE: webd closes a 65th anonymous connection per address, and a
	 * WebSocket counts as anonymous until its upgrade is answered. */
	for (unsigned s = 0; s < G.nsubs; s++) {
		if (s % SUB_WAVE == 0)
			wait_upgraded(s);
		struct conn *c = &G.subs[s];
		c->sub = true;
		c->idx = s;
		c->order_hash = 14695981039346656037ull;
		c->in = malloc(IN_CAP);
		c->seen = calloc(G.events, 1);
		if (!c->in || !c->seen)
			die("malloc");
		c->fd = connect_one();
		char req[1024];
		int n = snprintf(req, sizeof req,
				 "GET /api/v1/live HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
				 "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
				 "Sec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
				 G.token);
		send_all(c->fd, req, (size_t)n);
		add(c);
	}
	wait_upgraded(G.nsubs);
	printf("subscribed\n");
	fflush(stdout);
	/* Wait for "go T0" while answering nothing (the subscribers may get other events). */
	char line[128];
	if (!fgets(line, sizeof line, stdin) || sscanf(line, "go %lf", &G.t0) != 1) {
		fprintf(stderr, "live-fanout-native: expected \"go T0\" on stdin\n");
		return 2;
	}
	/* Only now: webd accepts at most 64 anonymous connections per address, and closes one
	 * that sends no request head within WEB_HEAD_SECS (the runner may wait for a quiet
	 * machine before "go"). */
	for (unsigned k = 0; k < G.nconns; k++) {
		struct conn *c = &G.conns[k];
		c->idx = k;
		c->in = malloc(IN_CAP);
		if (!c->in)
			die("malloc");
		c->fd = connect_one();
		add(c);
	}
	for (uint32_t i = 0; i < G.events; i++)
		G.due_sent[2 * i] = G.t0 + i / G.rate;
	double report = now_s() + 5;
	while (!producer_done()) {
		if (now_s() > report) {
			fprintf(stderr, "live-fanout-native: %u sent, %llu answered, %llu connections closed\n", G.next,
				(unsigned long long)G.answers, (unsigned long long)G.closed_conns);
			report += 5;
		}
		bool room = publish_due();
		double t = now_s();
		int wait = 0;
		if (!room) {
			wait = 10; /* behind: the next answer frees a connection */
		} else if (G.next < G.events) {
			double d = G.t0 + G.next / G.rate - t;
			wait = d > 0.001 ? (int)(d * 1000) : 0;
		} else {
			wait = 10;
		}
		poll_once(wait);
	}
	G.sent = G.next;
	double end = now_s() + drain_s;
	while (!drained() && now_s() < end)
		poll_once(10);
	/* Summary. */
	size_t nack = 0, nbad = 0, ontime = 0;
	double *late = malloc(G.events * sizeof(double)), *lat = malloc(G.events * sizeof(double));
	if (!late || !lat)
		die("malloc");
	size_t nlat = 0;
	unsigned codes[600] = {0};
	for (uint32_t i = 0; i < G.sent; i++) {
		double due = G.due_sent[2 * i], sent = G.due_sent[2 * i + 1];
		late[i] = sent > due ? (sent - due) * 1000 : 0;
		if (G.status[i] < 600)
			codes[G.status[i]]++;
		if (G.status[i] == 200) {
			nack++;
			lat[nlat++] = (G.acked[i] - sent) * 1000;
			if (i >= G.win_first && i < G.win_first + G.win_events && sent - due < LATE_LIMIT)
				ontime++;
		} else {
			nbad++;
		}
	}
	qsort(late, G.sent, sizeof *late, cmp_d);
	qsort(lat, nlat, sizeof *lat, cmp_d);
	printf("summary "
	       "{\"events\":%u,\"unsent\":%u,\"acked\":%zu,\"failed\":%zu,\"bad_answers\":%llu,\"closed_conns\":%llu,"
	       "\"acked_on_time_in_window\":%zu,\"window_events\":%u,"
	       "\"lateness_ms\":{\"p50\":%.3f,\"p95\":%.3f,\"max\":%.3f},"
	       "\"publish_to_ack_ms\":{\"n\":%zu,\"p50\":%.3f,\"p95\":%.3f,\"p99\":%.3f,\"max\":%.3f},\"status\":{",
	       G.events, G.events - G.sent, nack, nbad, (unsigned long long)G.bad_answers,
	       (unsigned long long)G.closed_conns, ontime, G.win_events, pct(late, G.sent, 50), pct(late, G.sent, 95),
	       G.sent ? late[G.sent - 1] : -1, nlat, pct(lat, nlat, 50), pct(lat, nlat, 95), pct(lat, nlat, 99),
	       nlat ? lat[nlat - 1] : -1);
	bool first = true;
	for (unsigned s = 0; s < 600; s++)
		if (codes[s]) {
			printf("%s\"%u\":%u", first ? "" : ",", s, codes[s]);
			first = false;
		}
	printf("},\"subscribers\":[");
	for (unsigned s = 0; s < G.nsubs; s++) {
		struct conn *c = &G.subs[s];
		uint64_t missing = 0, unacked = 0;
		for (uint32_t i = 0; i < G.events; i++) {
			if (G.status[i] == 200 && !c->seen[i])
				missing++;
			if (G.status[i] != 200 && c->seen[i])
				unacked++;
		}
		printf("%s{\"received\":%llu,\"missing\":%llu,\"duplicates\":%llu,\"not_acknowledged\":%llu,"
		       "\"foreign\":%llu,\"binary\":%llu,\"resyncs\":%llu,\"errors\":%llu,\"closed\":%llu,"
		       "\"order_hash\":\"%016llx\"}",
		       s ? "," : "", (unsigned long long)c->received, (unsigned long long)missing,
		       (unsigned long long)c->dup, (unsigned long long)unacked, (unsigned long long)c->foreign,
		       (unsigned long long)c->binary, (unsigned long long)c->resyncs, (unsigned long long)c->errors,
		       (unsigned long long)c->closed, (unsigned long long)c->order_hash);
	}
	printf("]}\n");
	fflush(stdout);
	free(late);
	free(lat);
	return 0;
}
