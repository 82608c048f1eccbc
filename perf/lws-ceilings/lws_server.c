/* One-off decision measurement (docs/decisions/0005-own-http-server.md): a plain
 * HTTP/1.1 server on libwebsockets 4.1.6 that tries to enforce KeepPeek's header
 * ceilings (SPEC section 12) with the API lws 4.1.6 offers, and reports in its answer
 * what its LWS_CALLBACK_HTTP could see. Not part of the meson build, not a CI test.
 *
 * Usage: lws_server PORT [HEADER_BUFFER_BYTES]   (default 65536)
 * Every request that lws hands to the callback gets one text line, e.g.
 *   verdict=200 known_lines=1 known_bytes=22 max_known_line=20 uri_len=1 ...
 * verdict is what the callback decided from what it could see: 431 or 414 (answered,
 * then the connection is closed) or 200. Unknown headers can only be looked up by a
 * name the callback already knows (lws_hdr_custom_length); 4.1.6 has no call that
 * enumerates them or counts them, so the names the probe uses are asked for here only
 * to show what the callback would see if it knew them; they are not enforced. */
#include <libwebsockets.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 8192  /* request line and each header line, without CRLF */
#define HEAD_MAX_BYTES 65536 /* all header lines, CRLF included */
#define HEADERS_MAX    100

struct pss {
	char body[512];
	int len;
	int status;
};

static int interrupted;
static char fragbuf[HEAD_MAX_BYTES + 16];

/* Tokens that belong to the request line (or HTTP/2), not to header lines. */
static int request_line_token(int t)
{
	switch (t) {
	case WSI_TOKEN_GET_URI:
	case WSI_TOKEN_POST_URI:
	case WSI_TOKEN_OPTIONS_URI:
	case WSI_TOKEN_PUT_URI:
	case WSI_TOKEN_PATCH_URI:
	case WSI_TOKEN_DELETE_URI:
	case WSI_TOKEN_CONNECT:
	case WSI_TOKEN_HEAD_URI:
	case WSI_TOKEN_HTTP:
	case WSI_TOKEN_HTTP_URI_ARGS:
	case WSI_TOKEN_HTTP_COLON_AUTHORITY:
	case WSI_TOKEN_HTTP_COLON_METHOD:
	case WSI_TOKEN_HTTP_COLON_PATH:
	case WSI_TOKEN_HTTP_COLON_SCHEME:
	case WSI_TOKEN_HTTP_COLON_STATUS:
	case WSI_TOKEN_COLON_PROTOCOL:
		return 1;
	}
	return t >= _WSI_TOKEN_CLIENT_SENT_PROTOCOLS;
}

static int analyse(struct lws *wsi, struct pss *pss)
{
	int lines = 0, maxline = 0, t, f, n;
	long bytes = 0;

	/* Known headers: every line of a known header is one "fragment" of its token,
	 * so lines and their value lengths can be walked. The stored value has its
	 * leading whitespace removed; the line is rebuilt as "name: value". */
	for (t = 0; t < WSI_TOKEN_COUNT; t++) {
		if (request_line_token(t))
			continue;
		const unsigned char *name = lws_token_to_string((enum lws_token_indexes)t);
		int nlen = name ? (int)strlen((const char *)name) : 0;
		for (f = 0;; f++) {
			n = lws_hdr_copy_fragment(wsi, fragbuf, sizeof fragbuf, (enum lws_token_indexes)t, f);
			if (n < 0)
				break;
			int line = nlen + 1 + n; /* "name:" + " " + value */
			lines++;
			bytes += line + 2;
			if (line > maxline)
				maxline = line;
		}
	}
	/* The request line as well as it can be rebuilt: lws stores the path
	 * percent-decoded and with "/../" and "//" collapsed, and the query split into
	 * decoded arguments ("&" and "?" dropped), so this is only an estimate of the
	 * bytes the client sent. Only GET is served here. */
	int uri = lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI);
	int args = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS);
	int version = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP);
	int reqline = 3 + 1 + uri + (args ? 1 + args : 0) + 1 + version;

	pss->status = 200;
	if (reqline > LINE_MAX_BYTES)
		pss->status = 414;
	else if (lines > HEADERS_MAX || maxline > LINE_MAX_BYTES || bytes > HEAD_MAX_BYTES)
		pss->status = 431;

	pss->len =
	    lws_snprintf(pss->body, sizeof pss->body,
			 "verdict=%d known_lines=%d known_bytes=%ld max_known_line=%d request_line~%d "
			 "cookie_total=%d custom[x-pad:]=%d custom[x-a:]=%d custom[x-h0001:]=%d "
			 "custom[x-h0100:]=%d unknown_count=unavailable\n",
			 pss->status, lines, bytes, maxline, reqline, lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_COOKIE),
			 lws_hdr_custom_length(wsi, "x-pad:", 6), lws_hdr_custom_length(wsi, "x-a:", 4),
			 lws_hdr_custom_length(wsi, "x-h0001:", 8), lws_hdr_custom_length(wsi, "x-h0100:", 8));
	return 0;
}

static int callback_http(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct pss *pss = user;
	uint8_t buf[LWS_PRE + 1024], *start = &buf[LWS_PRE], *p = start, *end = &buf[sizeof(buf) - 1];

	switch (reason) {
	case LWS_CALLBACK_HTTP:
		analyse(wsi, pss);
		if (lws_add_http_common_headers(wsi, (unsigned int)pss->status, "text/plain", (lws_filepos_t)pss->len,
						&p, end))
			return 1;
		if (pss->status != 200 &&
		    lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION, (const unsigned char *)"close", 5, &p, end))
			return 1;
		if (lws_finalize_write_http_header(wsi, start, &p, end))
			return 1;
		lws_callback_on_writable(wsi);
		return 0;

	case LWS_CALLBACK_HTTP_WRITEABLE:
		memcpy(start, pss->body, (size_t)pss->len);
		if (lws_write(wsi, start, (size_t)pss->len, LWS_WRITE_HTTP_FINAL) != pss->len)
			return 1;
		if (pss->status != 200)
			return -1; /* over a ceiling: answered, now close */
		if (lws_http_transaction_completed(wsi))
			return -1;
		return 0;

	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {{"http", callback_http, sizeof(struct pss), 0, 0, NULL, 0},
						 {NULL, NULL, 0, 0, 0, NULL, 0}};

static void sigint_handler(int sig)
{
	(void)sig;
	interrupted = 1;
}

int main(int argc, char **argv)
{
	struct lws_context_creation_info info;
	struct lws_context *context;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s PORT [HEADER_BUFFER_BYTES]\n", argv[0]);
		return 2;
	}
	signal(SIGINT, sigint_handler);
	signal(SIGTERM, sigint_handler);
	/* Errors and warnings only: that is where lws says why it dropped a head. */
	lws_set_log_level(LLL_ERR | LLL_WARN, NULL);

	memset(&info, 0, sizeof info);
	info.port = atoi(argv[1]);
	info.iface = "127.0.0.1";
	info.protocols = protocols;
	/* The closest setting to SPEC's 64 KiB of header lines: the header buffer
	 * ("ah") of 65536 bytes. max_http_header_data is an unsigned short (65535 at
	 * most); 4.1.6 also has the unsigned int max_http_header_data2, used when the
	 * short one is 0. The buffer holds the stored URI, known header values and
	 * unknown names and values (plus 8 bytes of list entry each), not the raw
	 * lines, so it is not the same measure as SPEC's. */
	info.max_http_header_data = 0;
	info.max_http_header_data2 = argc == 3 ? (unsigned int)atoi(argv[2]) : HEAD_MAX_BYTES;
	info.max_http_header_pool = 16;
	info.options = LWS_SERVER_OPTION_DISABLE_IPV6;

	context = lws_create_context(&info);
	if (!context) {
		fprintf(stderr, "lws_create_context failed\n");
		return 1;
	}
	fprintf(stderr,
		"lws %s listening on 127.0.0.1:%d, header buffer %u bytes "
		"(WSI_TOKEN_COUNT=%d)\n",
		lws_get_library_version(), info.port, info.max_http_header_data2, (int)WSI_TOKEN_COUNT);

	while (!interrupted)
		if (lws_service(context, 0) < 0)
			break;

	lws_context_destroy(context);
	return 0;
}
