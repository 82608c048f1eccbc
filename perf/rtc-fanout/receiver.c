/* rtc-fanout receiver: N headless WebRTC receivers in one process, for the rtc-fanout
 * benchmark (perf/rtc-fanout/run.py drives signaling and hands SDP over stdin/stdout).
 * Each receiver is a controlling libnice agent on 127.0.0.1, an OpenSSL DTLS 1.2 client
 * with use_srtp (rtcd's certificate checked against the answer's fingerprint) and a
 * libsrtp2 inbound session; it counts decrypted RTP packets and bytes, frames (marker
 * bit), H.264 IDR starts and RTP sequence gaps. It sends no RTCP (no NACK, no PLI), so
 * a lost packet stays lost and is counted.
 *
 * Protocol, one line each ("\n" inside an SDP is written as the two characters \n):
 *   out: offer I SDP           once receiver I has gathered its candidates
 *   in:  answer I SDP          rtcd's answer for receiver I
 *   in:  stats                 out: "stats {json}" per receiver, then "end"
 *   in:  quit (or EOF)         exits */
#include <errno.h>
#include <glib.h>
#include <nice/agent.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <srtp2/srtp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RECEIVERS 1024
#define MTU           1200
#define SRTP_KEY      16
#define SRTP_SALT     14

enum state { GATHERING, OFFERED, ANSWERED, SECURING, STREAMING, FAILED };
static const char *const state_names[] = {"gathering", "offered", "answered", "securing", "streaming", "failed"};

struct receiver {
	unsigned idx;
	enum state state;
	char why[160];
	NiceAgent *agent;
	guint stream;
	SSL *ssl;
	BIO *rbio;
	uint8_t server_fp[32];
	srtp_t srtp;
	gint64 answer_us, secure_us;
	uint64_t packets, bytes, frames, idr_starts, srtp_failures, rtcp, duplicates;
	bool seq_init;
	uint64_t ext_first, ext_max;
};

static struct receiver *rx;
static unsigned nrx;
static SSL_CTX *ctx;
static BIO_METHOD *out_method;
static char fingerprint[32 * 3];
static GMainLoop *loop;

static void fail(struct receiver *r, const char *why)
{
	if (r->state == FAILED)
		return;
	r->state = FAILED;
	snprintf(r->why, sizeof r->why, "%s", why);
	fprintf(stderr, "receiver %u: %s\n", r->idx, why);
}

static int out_write(BIO *b, const char *data, int len)
{
	struct receiver *r = BIO_get_data(b);
	if (len > 0 && nice_agent_send(r->agent, r->stream, 1, (guint)len, data) < 0)
		fprintf(stderr, "receiver %u: sending a DTLS datagram failed\n", r->idx);
	return len;
}

static long out_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int out_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static int accept_any(int ok, X509_STORE_CTX *store)
{
	(void)ok;
	(void)store;
	return 1; /* the certificate is checked against the answer's fingerprint instead */
}

static int tls_init(void)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *cert = X509_new();
	if (!key || !cert)
		return -1;
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
	X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
	X509_set_pubkey(cert, key);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC, (const unsigned char *)"rtc-fanout",
				   -1, -1, 0);
	X509_set_issuer_name(cert, X509_get_subject_name(cert));
	if (!X509_sign(cert, key, EVP_sha256()))
		return -1;
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	X509_digest(cert, EVP_sha256(), md, &mdlen);
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(fingerprint + 3 * i, 4, i + 1 < mdlen ? "%02X:" : "%02X", md[i]);
	ctx = SSL_CTX_new(DTLS_client_method());
	if (!ctx || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
	    SSL_CTX_set_tlsext_use_srtp(ctx, "SRTP_AES128_CM_SHA1_80") != 0)
		return -1;
	SSL_CTX_set_max_proto_version(ctx, DTLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
	X509_free(cert);
	EVP_PKEY_free(key);
	out_method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rtc-fanout-out");
	if (!out_method)
		return -1;
	BIO_meth_set_write(out_method, out_write);
	BIO_meth_set_ctrl(out_method, out_ctrl);
	BIO_meth_set_create(out_method, out_create);
	return 0;
}

static void secured(struct receiver *r)
{
	X509 *peer = SSL_get1_peer_certificate(r->ssl);
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	bool match =
	    peer && X509_digest(peer, EVP_sha256(), md, &mdlen) && mdlen == 32 && memcmp(md, r->server_fp, 32) == 0;
	X509_free(peer);
	if (!match) {
		fail(r, "rtcd's certificate does not match the answer's fingerprint");
		return;
	}
	uint8_t km[2 * (SRTP_KEY + SRTP_SALT)];
	if (SSL_export_keying_material(r->ssl, km, sizeof km, "EXTRACTOR-dtls_srtp", 19, NULL, 0, 0) != 1) {
		fail(r, "exporting the DTLS-SRTP keys failed");
		return;
	}
	/* client key, server key, client salt, server salt: rtcd (server) sends with its own. */
	uint8_t master[SRTP_KEY + SRTP_SALT];
	memcpy(master, km + SRTP_KEY, SRTP_KEY);
	memcpy(master + SRTP_KEY, km + 2 * SRTP_KEY + SRTP_SALT, SRTP_SALT);
	srtp_policy_t p;
	memset(&p, 0, sizeof p);
	srtp_crypto_policy_set_rtp_default(&p.rtp);
	srtp_crypto_policy_set_rtcp_default(&p.rtcp);
	p.ssrc.type = ssrc_any_inbound;
	p.key = master;
	p.window_size = 1024;
	if (srtp_create(&r->srtp, &p) != srtp_err_status_ok) {
		fail(r, "srtp_create failed");
		return;
	}
	r->state = STREAMING;
	r->secure_us = g_get_monotonic_time();
}

static void handshake(struct receiver *r)
{
	int ret = SSL_do_handshake(r->ssl);
	if (ret == 1) {
		secured(r);
		return;
	}
	int e = SSL_get_error(r->ssl, ret);
	if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
		char msg[120];
		ERR_error_string_n(ERR_get_error(), msg, sizeof msg);
		char why[160];
		snprintf(why, sizeof why, "DTLS handshake failed: %s", msg);
		fail(r, why);
	}
}

static void on_rtp(struct receiver *r, const uint8_t *data, guint len)
{
	uint8_t buf[2048];
	if (len > sizeof buf || len < 12)
		return;
	if (data[1] >= 192 && data[1] <= 223) {
		r->rtcp++; /* sender reports */
		return;
	}
	memcpy(buf, data, len);
	int l = (int)len;
	if (srtp_unprotect(r->srtp, buf, &l) != srtp_err_status_ok) {
		r->srtp_failures++;
		return;
	}
	uint16_t seq = (uint16_t)(buf[2] << 8 | buf[3]);
	if (!r->seq_init) {
		r->seq_init = true;
		r->ext_first = r->ext_max = (uint64_t)seq + 65536 * 16; /* room for a reorder below the first */
	} else {
		int16_t d = (int16_t)(seq - (uint16_t)r->ext_max);
		uint64_t ext = r->ext_max + (uint64_t)(int64_t)d;
		if (d > 0)
			r->ext_max = ext;
		else if (d == 0)
			r->duplicates++;
		if (ext < r->ext_first)
			r->ext_first = ext;
	}
	r->packets++;
	r->bytes += (uint64_t)l;
	if (buf[1] & 0x80)
		r->frames++;
	size_t h = 12 + 4u * (buf[0] & 0x0f);
	if ((buf[0] & 0x10) && (size_t)l >= h + 4)
		h += 4 + 4u * (size_t)(buf[h + 2] << 8 | buf[h + 3]);
	if ((size_t)l < h + 2)
		return;
	unsigned nal = buf[h] & 0x1f;
	if (nal == 5 || (nal == 28 && (buf[h + 1] & 0x80) && (buf[h + 1] & 0x1f) == 5))
		r->idr_starts++;
}

static void on_recv(NiceAgent *agent, guint stream, guint component, guint len, gchar *data, gpointer arg)
{
	(void)agent;
	(void)stream;
	(void)component;
	struct receiver *r = arg;
	const uint8_t *d = (const uint8_t *)data;
	if (len >= 13 && d[0] >= 20 && d[0] <= 63) {
		if (r->state != SECURING)
			return;
		if (BIO_write(r->rbio, d, (int)len) != (int)len) {
			fail(r, "BIO_write failed");
			return;
		}
		handshake(r);
	} else if (len >= 12 && d[0] >= 128 && d[0] <= 191 && r->state == STREAMING) {
		on_rtp(r, d, len);
	}
}

static void start_dtls(struct receiver *r)
{
	r->ssl = SSL_new(ctx);
	r->rbio = BIO_new(BIO_s_mem());
	BIO *w = BIO_new(out_method);
	if (!r->ssl || !r->rbio || !w) {
		fail(r, "no memory for DTLS");
		return;
	}
	BIO_set_mem_eof_return(r->rbio, -1);
	BIO_set_data(w, r);
	SSL_set_bio(r->ssl, r->rbio, w);
	SSL_set_options(r->ssl, SSL_OP_NO_QUERY_MTU);
	SSL_set_mtu(r->ssl, MTU);
	SSL_set_connect_state(r->ssl);
	r->state = SECURING;
	handshake(r);
}

static void on_state(NiceAgent *agent, guint stream, guint component, guint st, gpointer arg)
{
	(void)agent;
	(void)stream;
	(void)component;
	struct receiver *r = arg;
	if ((st == NICE_COMPONENT_STATE_CONNECTED || st == NICE_COMPONENT_STATE_READY) && r->state == ANSWERED)
		start_dtls(r);
	else if (st == NICE_COMPONENT_STATE_FAILED && r->state < STREAMING)
		fail(r, "ICE failed");
}

static void print_sdp(const char *kind, unsigned idx, const char *sdp)
{
	printf("%s %u ", kind, idx);
	for (const char *p = sdp; *p; p++) {
		if (*p == '\r')
			continue;
		if (*p == '\n')
			fputs("\\n", stdout);
		else
			putchar(*p);
	}
	putchar('\n');
}

static void on_gathered(NiceAgent *agent, guint stream, gpointer arg)
{
	struct receiver *r = arg;
	gchar *ufrag = NULL, *pwd = NULL;
	if (!nice_agent_get_local_credentials(agent, stream, &ufrag, &pwd)) {
		fail(r, "no local ICE credentials");
		return;
	}
	GString *s = g_string_new(NULL);
	g_string_append_printf(s,
			       "v=0\r\no=- %u 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
			       "m=video 9 UDP/TLS/RTP/SAVPF 102\r\nc=IN IP4 0.0.0.0\r\na=ice-ufrag:%s\r\n"
			       "a=ice-pwd:%s\r\na=fingerprint:sha-256 %s\r\na=setup:active\r\na=mid:0\r\n"
			       "a=recvonly\r\na=rtcp-mux\r\na=rtpmap:102 H264/90000\r\n"
			       "a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n",
			       r->idx + 1, ufrag, pwd, fingerprint);
	GSList *cands = nice_agent_get_local_candidates(agent, stream, 1);
	for (GSList *i = cands; i; i = i->next) {
		gchar *line = nice_agent_generate_local_candidate_sdp(agent, i->data);
		g_string_append_printf(s, "%s\r\n", line);
		g_free(line);
	}
	g_slist_free_full(cands, (GDestroyNotify)nice_candidate_free);
	g_string_append(s, "a=end-of-candidates\r\n");
	r->state = OFFERED;
	print_sdp("offer", r->idx, s->str);
	g_string_free(s, TRUE);
	g_free(ufrag);
	g_free(pwd);
}

static int parse_fp(const char *text, uint8_t out[32])
{
	for (unsigned i = 0; i < 32; i++) {
		unsigned v;
		if (sscanf(text + 3 * i, "%2x", &v) != 1 || (i < 31 && text[3 * i + 2] != ':'))
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

static void on_answer(struct receiver *r, char *sdp)
{
	if (r->state != OFFERED)
		return;
	char *ufrag = NULL, *pwd = NULL;
	bool fp = false;
	GSList *cands = NULL;
	for (char *line = strtok(sdp, "\n"); line; line = strtok(NULL, "\n")) {
		line[strcspn(line, "\r")] = 0;
		if (strncmp(line, "a=ice-ufrag:", 12) == 0)
			ufrag = line + 12;
		else if (strncmp(line, "a=ice-pwd:", 10) == 0)
			pwd = line + 10;
		else if (strncmp(line, "a=fingerprint:sha-256 ", 22) == 0)
			fp = parse_fp(line + 22, r->server_fp) == 0;
		else if (strncmp(line, "a=candidate:", 12) == 0) {
			NiceCandidate *c = nice_agent_parse_remote_candidate_sdp(r->agent, r->stream, line);
			if (c)
				cands = g_slist_append(cands, c);
		}
	}
	if (!ufrag || !pwd || !fp || !cands) {
		fail(r, "the answer lacks ICE credentials, a sha-256 fingerprint or a usable candidate");
		g_slist_free_full(cands, (GDestroyNotify)nice_candidate_free);
		return;
	}
	r->answer_us = g_get_monotonic_time();
	r->state = ANSWERED;
	if (!nice_agent_set_remote_credentials(r->agent, r->stream, ufrag, pwd) ||
	    nice_agent_set_remote_candidates(r->agent, r->stream, 1, cands) < 1)
		fail(r, "libnice refused the answer's credentials or candidates");
	g_slist_free_full(cands, (GDestroyNotify)nice_candidate_free);
}

static void print_stats(void)
{
	for (unsigned i = 0; i < nrx; i++) {
		struct receiver *r = &rx[i];
		uint64_t expected = r->seq_init ? r->ext_max - r->ext_first + 1 : 0;
		uint64_t unique = r->packets - r->duplicates;
		printf("stats {\"i\":%u,\"state\":\"%s\",\"why\":\"%s\",\"packets\":%llu,\"bytes\":%llu,"
		       "\"frames\":%llu,\"idr_starts\":%llu,\"expected\":%llu,\"lost\":%llu,\"srtp_failures\":%llu,"
		       "\"rtcp\":%llu,\"connect_ms\":%.1f}\n",
		       r->idx, state_names[r->state], r->why, (unsigned long long)r->packets,
		       (unsigned long long)r->bytes, (unsigned long long)r->frames, (unsigned long long)r->idr_starts,
		       (unsigned long long)expected, (unsigned long long)(expected > unique ? expected - unique : 0),
		       (unsigned long long)r->srtp_failures, (unsigned long long)r->rtcp,
		       r->secure_us ? (double)(r->secure_us - r->answer_us) / 1000.0 : -1.0);
	}
	printf("end\n");
}

static gboolean on_stdin(GIOChannel *ch, GIOCondition cond, gpointer arg)
{
	(void)cond;
	(void)arg;
	gchar *line = NULL;
	gsize len = 0;
	GIOStatus st = g_io_channel_read_line(ch, &line, &len, NULL, NULL);
	if (st == G_IO_STATUS_AGAIN)
		return TRUE;
	if (st != G_IO_STATUS_NORMAL || strncmp(line, "quit", 4) == 0) {
		g_free(line);
		g_main_loop_quit(loop);
		return FALSE;
	}
	unsigned idx;
	int off = 0;
	if (strncmp(line, "stats", 5) == 0) {
		print_stats();
	} else if (sscanf(line, "answer %u %n", &idx, &off) == 1 && off > 0 && idx < nrx) {
		char *sdp = line + off, *w = sdp;
		for (char *p = sdp; *p; p++) {
			if (p[0] == '\\' && p[1] == 'n') {
				*w++ = '\n';
				p++;
			} else {
				*w++ = *p;
			}
		}
		*w = 0;
		on_answer(&rx[idx], sdp);
	} else {
		fprintf(stderr, "rtc-fanout-receiver: unknown command: %.60s\n", line);
	}
	g_free(line);
	return TRUE;
}

static gboolean on_timer(gpointer arg)
{
	(void)arg;
	for (unsigned i = 0; i < nrx; i++)
		if (rx[i].state == SECURING && DTLSv1_handle_timeout(rx[i].ssl) < 0)
			fail(&rx[i], "DTLS retransmission failed");
	return TRUE;
}

int main(int argc, char **argv)
{
	nrx = argc == 2 ? (unsigned)strtoul(argv[1], NULL, 10) : 0;
	if (nrx < 1 || nrx > MAX_RECEIVERS) {
		fprintf(stderr, "usage: rtc-fanout-receiver N   (1..%d receivers; protocol in the source)\n",
			MAX_RECEIVERS);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (srtp_init() != srtp_err_status_ok || tls_init() < 0) {
		fprintf(stderr, "rtc-fanout-receiver: SRTP or TLS setup failed\n");
		return 1;
	}
	rx = calloc(nrx, sizeof *rx);
	if (!rx)
		return 1;
	loop = g_main_loop_new(NULL, FALSE);
	NiceAddress lo;
	nice_address_init(&lo);
	if (!nice_address_set_from_string(&lo, "127.0.0.1"))
		return 1;
	for (unsigned i = 0; i < nrx; i++) {
		struct receiver *r = &rx[i];
		r->idx = i;
		r->agent = nice_agent_new(g_main_loop_get_context(loop), NICE_COMPATIBILITY_RFC5245);
		if (!r->agent) {
			fprintf(stderr, "rtc-fanout-receiver: nice_agent_new failed\n");
			return 1;
		}
		g_object_set(r->agent, "controlling-mode", TRUE, "ice-tcp", FALSE, "upnp", FALSE, NULL);
		nice_agent_add_local_address(r->agent, &lo);
		r->stream = nice_agent_add_stream(r->agent, 1);
		g_signal_connect(r->agent, "candidate-gathering-done", G_CALLBACK(on_gathered), r);
		g_signal_connect(r->agent, "component-state-changed", G_CALLBACK(on_state), r);
		if (!r->stream ||
		    !nice_agent_attach_recv(r->agent, r->stream, 1, g_main_loop_get_context(loop), on_recv, r) ||
		    !nice_agent_gather_candidates(r->agent, r->stream)) {
			fprintf(stderr, "rtc-fanout-receiver: receiver %u could not gather candidates\n", i);
			return 1;
		}
	}
	GIOChannel *in = g_io_channel_unix_new(0);
	g_io_add_watch(in, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, NULL);
	g_timeout_add(50, on_timer, NULL);
	g_main_loop_run(loop);
	for (unsigned i = 0; i < nrx; i++) {
		if (rx[i].ssl)
			SSL_free(rx[i].ssl);
		if (rx[i].srtp)
			srtp_dealloc(rx[i].srtp);
		g_object_unref(rx[i].agent);
	}
	free(rx);
	return 0;
}
