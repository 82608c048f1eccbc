/* The S3 client over libcurl (s3.h): one signed request at a time, its answer bounded,
 * its status and S3 error code mapped to an errno. */
#include "s3.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "sigv4.h"

#define S3_ERR_BODY_MAX 4096 /* bytes of an error answer kept; the rest is dropped */
#define S3_URL_MAX      2048

struct s3_client {
	CURL *curl;
	char endpoint[256]; /* scheme://authority */
	char host[256];     /* authority, as the Host header and the signature name it */
	char bucket[64];
	char region[64];
	char access_key[128];
	char secret[128];
	long connect_ms, timeout_ms, low_bytes, low_secs;
	struct curl_slist *pin; /* CURLOPT_RESOLVE's HOST:PORT:ADDRESS, or NULL */
};

struct req {
	const char *method;
	const char *key; /* NULL: the bucket itself */
	struct sigv4_param params[3];
	size_t n_params;
	const void *body;
	size_t body_len, body_off;
	int send_md5;
	const char *content_type;
	char range[64];
	int head;
	/* The answer. */
	char *out;
	size_t out_cap, out_len;
	int overflow;
	long status;
	char err[S3_ERR_BODY_MAX];
	size_t err_len;
	char etag[S3_ETAG_MAX];
	int etag_bad;
	uint64_t content_length;
	int have_length;
};

static void why(struct s3_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void why(struct s3_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->why, sizeof(res->why), fmt, ap);
	va_end(ap);
}

static int copy_field(char *dst, size_t cap, const char *src)
{
	if (!src || !*src || strlen(src) >= cap)
		return -EINVAL;
	strcpy(dst, src);
	return 0;
}

/* CURLOPT_RESOLVE's "HOST:PORT:ADDRESS" for c->host (the port from the scheme when the
 * endpoint names none); address an IP literal. */
static int pin_address(struct s3_client *c, const char *endpoint, const char *address)
{
	char host[256], entry[400];
	const char *port = strncmp(endpoint, "https://", 8) == 0 ? "443" : "80";
	size_t hlen = c->host[0] == '[' ? strcspn(c->host, "]") + 1 : strcspn(c->host, ":");
	if (hlen >= sizeof(host) || strpbrk(address, ":") == NULL) {
		unsigned char a4[4];
		if (hlen >= sizeof(host) || inet_pton(AF_INET, address, a4) != 1)
			return -EINVAL;
	} else {
		unsigned char a6[16];
		if (inet_pton(AF_INET6, address, a6) != 1)
			return -EINVAL;
	}
	memcpy(host, c->host, hlen);
	host[hlen] = '\0';
	if (c->host[hlen] == ':')
		port = c->host + hlen + 1;
	int n = strchr(address, ':') ? snprintf(entry, sizeof(entry), "%s:%s:[%s]", host, port, address)
				     : snprintf(entry, sizeof(entry), "%s:%s:%s", host, port, address);
	if (n < 0 || (size_t)n >= sizeof(entry))
		return -EINVAL;
	c->pin = curl_slist_append(NULL, entry);
	return c->pin ? 0 : -ENOMEM;
}

int s3_client_new(const struct s3_conf *conf, struct s3_client **ret)
{
	static int global_done;
	struct s3_client *c;
	const char *auth;
	size_t alen;

	if (!conf || !conf->endpoint)
		return -EINVAL;
	if (strncmp(conf->endpoint, "http://", 7) == 0)
		auth = conf->endpoint + 7;
	else if (strncmp(conf->endpoint, "https://", 8) == 0)
		auth = conf->endpoint + 8;
	else
		return -EINVAL;
	alen = strcspn(auth, "/?#");
	if (alen == 0 || auth[alen] != '\0' || strpbrk(auth, "@ \t\r\n"))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	if (copy_field(c->endpoint, sizeof(c->endpoint), conf->endpoint) < 0 ||
	    copy_field(c->host, sizeof(c->host), auth) < 0 ||
	    copy_field(c->bucket, sizeof(c->bucket), conf->bucket) < 0 ||
	    copy_field(c->region, sizeof(c->region), conf->region) < 0 ||
	    copy_field(c->access_key, sizeof(c->access_key), conf->access_key) < 0 ||
	    copy_field(c->secret, sizeof(c->secret), conf->secret) < 0) {
		s3_client_free(c);
		return -EINVAL;
	}
	/* A bucket name S3 accepts: 3..63 of [a-z0-9.-]. */
	if (strlen(c->bucket) < 3 || strspn(c->bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(c->bucket)) {
		s3_client_free(c);
		return -EINVAL;
	}
	c->connect_ms = conf->connect_timeout_ms > 0 ? conf->connect_timeout_ms : 5000;
	c->timeout_ms = conf->timeout_ms > 0 ? conf->timeout_ms : 60000;
	c->low_bytes = conf->low_speed_bytes > 0 ? conf->low_speed_bytes : 1024;
	c->low_secs = conf->low_speed_secs > 0 ? conf->low_speed_secs : 10;
	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			s3_client_free(c);
			return -EIO;
		}
		global_done = 1;
	}
	c->curl = curl_easy_init();
	if (!c->curl) {
		s3_client_free(c);
		return -ENOMEM;
	}
	if (conf->address && conf->address[0] && pin_address(c, conf->endpoint, conf->address) < 0) {
		s3_client_free(c);
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

void s3_client_free(struct s3_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->pin);
	OPENSSL_cleanse(c->secret, sizeof(c->secret));
	free(c);
}

static void md5(const void *data, size_t len, unsigned char out[16])
{
	unsigned int n = 16;
	EVP_Digest(data, len, out, &n, EVP_md5(), NULL);
}

static void hex16(const unsigned char in[16], char out[33])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[32] = '\0';
}

static int unhex16(const char *in, unsigned char out[16])
{
	for (int i = 0; i < 32; i++) {
		char ch = in[i];
		int v = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
		if (v < 0)
			return -EPROTO;
		if (i & 1)
			out[i / 2] = (unsigned char)(out[i / 2] | v);
		else
			out[i / 2] = (unsigned char)(v << 4);
	}
	return in[32] == '\0' ? 0 : -EPROTO;
}

void s3_md5_hex(const void *data, size_t len, char out[33])
{
	unsigned char sum[16];
	md5(data, len, sum);
	hex16(sum, out);
}

int s3_multipart_etag(const struct s3_part *parts, size_t n, char out[S3_ETAG_MAX])
{
	unsigned char *all, sum[16];
	char hex[33];
	if (n == 0 || n > S3_PARTS_MAX)
		return -EINVAL;
	all = malloc(n * 16);
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (unhex16(parts[i].etag, all + 16 * i) < 0) {
			free(all);
			return -EPROTO;
		}
	}
	md5(all, n * 16, sum);
	free(all);
	hex16(sum, hex);
	snprintf(out, S3_ETAG_MAX, "%s-%zu", hex, n);
	return 0;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ud)
{
	struct req *r = ud;
	size_t n = size * nmemb;
	char line[512];
	if (n >= sizeof(line))
		return n; /* a header this long is none we read */
	memcpy(line, data, n);
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (strncmp(line, "HTTP/", 5) == 0) {
		const char *sp = strchr(line, ' ');
		r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		r->etag[0] = '\0';
		r->have_length = 0;
	} else if (strncasecmp(line, "ETag:", 5) == 0) {
		const char *v = line + 5 + strspn(line + 5, " \t");
		r->etag_bad = s3_etag_unquote(v, r->etag) < 0;
	} else if (strncasecmp(line, "Content-Length:", 15) == 0) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(line + 15, &end, 10);
		if (errno == 0 && end != line + 15) {
			r->content_length = v;
			r->have_length = 1;
		}
	}
	return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ud)
{
	struct req *r = ud;
	size_t n = size * nmemb;
	if (r->status < 200 || r->status >= 300) {
		size_t room = sizeof(r->err) - 1 - r->err_len;
		size_t take = n < room ? n : room;
		memcpy(r->err + r->err_len, data, take);
		r->err_len += take;
		r->err[r->err_len] = '\0';
		return n;
	}
	if (n > r->out_cap - r->out_len) {
		r->overflow = 1;
		return 0;
	}
	memcpy(r->out + r->out_len, data, n);
	r->out_len += n;
	return n;
}

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct req *r = ud;
	size_t room = size * nmemb, left = r->body_len - r->body_off;
	size_t take = left < room ? left : room;
	memcpy(buf, (const char *)r->body + r->body_off, take);
	r->body_off += take;
	return take;
}

/* libcurl rewinds a body to send it again on a new connection when a kept-alive one was
 * closed under it (a gateway restarted). */
static int on_seek(void *ud, curl_off_t offset, int origin)
{
	struct req *r = ud;
	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > r->body_len)
		return CURL_SEEKFUNC_FAIL;
	r->body_off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s: %s", name, value);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -E2BIG;
	struct curl_slist *l = curl_slist_append(*list, line);
	if (!l)
		return -ENOMEM;
	*list = l;
	return 0;
}

/* The path, encoded as signed: /bucket[/key]. */
static int build_path(struct s3_client *c, const char *key, char *raw, size_t raw_cap, char *enc, size_t enc_cap)
{
	int n = key ? snprintf(raw, raw_cap, "/%s/%s", c->bucket, key) : snprintf(raw, raw_cap, "/%s", c->bucket);
	if (n < 0 || (size_t)n >= raw_cap)
		return -E2BIG;
	return sigv4_encode(raw, 1, enc, enc_cap) < 0 ? -E2BIG : 0;
}

static int map_status(struct req *r, struct s3_result *res)
{
	if (r->status >= 200 && r->status < 300)
		return 0;
	res->code[0] = '\0';
	if (r->err_len)
		s3_xml_error(r->err, r->err_len, res->code);
	why(res, "%s answered %ld %s", r->method, r->status, res->code[0] ? res->code : "(no S3 error code)");
	if (r->status == 403)
		return -EACCES;
	if (r->status == 404)
		return -ENOENT;
	if (r->status == 416)
		return -ERANGE;
	if (strcmp(res->code, "BadDigest") == 0 || strcmp(res->code, "XAmzContentSHA256Mismatch") == 0 ||
	    strcmp(res->code, "InvalidDigest") == 0)
		return -EBADMSG;
	return -EIO;
}

static int perform(struct s3_client *c, struct req *r, struct s3_result *res)
{
	char raw[S3_KEY_MAX + 128], path[3 * (S3_KEY_MAX + 128)], url[S3_URL_MAX], date[17], hash[65], authz[1024];
	char md5b64[32] = "";
	struct sigv4_header hdrs[8];
	size_t nh = 0;
	struct curl_slist *list = NULL;
	int ret;

	memset(res, 0, sizeof(*res));
	if (r->key && (strlen(r->key) == 0 || strlen(r->key) >= S3_KEY_MAX)) {
		why(res, "object key empty or of %zu bytes or more", (size_t)S3_KEY_MAX);
		return -EINVAL;
	}
	if ((ret = build_path(c, r->key, raw, sizeof(raw), path, sizeof(path))) < 0) {
		why(res, "object path too long");
		return ret;
	}
	int n = snprintf(url, sizeof(url), "%s%s", c->endpoint, path);
	for (size_t i = 0; i < r->n_params && n > 0 && (size_t)n < sizeof(url); i++) {
		char en[128], ev[S3_UPLOAD_ID_MAX * 3];
		if (sigv4_encode(r->params[i].name, 0, en, sizeof(en)) < 0 ||
		    sigv4_encode(r->params[i].value, 0, ev, sizeof(ev)) < 0) {
			why(res, "query parameter too long");
			return -E2BIG;
		}
		n += snprintf(url + n, sizeof(url) - (size_t)n, "%c%s=%s", i ? '&' : '?', en, ev);
	}
	if (n < 0 || (size_t)n >= sizeof(url)) {
		why(res, "URL too long");
		return -E2BIG;
	}

	sigv4_sha256_hex(r->body ? r->body : "", r->body_len, hash);
	if ((ret = sigv4_amz_date((int64_t)time(NULL), date)) < 0) {
		why(res, "clock out of range");
		return ret;
	}
	hdrs[nh++] = (struct sigv4_header){"Host", c->host};
	hdrs[nh++] = (struct sigv4_header){"x-amz-content-sha256", hash};
	hdrs[nh++] = (struct sigv4_header){"x-amz-date", date};
	if (r->send_md5) {
		unsigned char sum[16];
		md5(r->body ? r->body : "", r->body_len, sum);
		EVP_EncodeBlock((unsigned char *)md5b64, sum, 16);
		hdrs[nh++] = (struct sigv4_header){"Content-MD5", md5b64};
	}
	if (r->range[0])
		hdrs[nh++] = (struct sigv4_header){"Range", r->range};
	if (r->content_type)
		hdrs[nh++] = (struct sigv4_header){"Content-Type", r->content_type};
	struct sigv4_request sreq = {r->method, raw, r->params, r->n_params, hdrs, nh, hash};
	struct sigv4_key skey = {c->access_key, c->secret, c->region, "s3"};
	if ((ret = sigv4_authorization(&sreq, &skey, date, authz, sizeof(authz))) < 0) {
		why(res, "cannot sign the request (%s)", strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < nh; i++)
		if ((ret = add_header(&list, hdrs[i].name, hdrs[i].value)) < 0)
			goto out_free_list;
	if ((ret = add_header(&list, "Authorization", authz)) < 0)
		goto out_free_list;
	struct curl_slist *l2 = curl_slist_append(list, "Expect:");
	if (l2)
		list = l2;
	if (!r->content_type && (l2 = curl_slist_append(list, "Content-Type:")))
		list = l2;

	CURL *e = c->curl;
	curl_easy_reset(e);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	if (c->pin)
		curl_easy_setopt(e, CURLOPT_RESOLVE, c->pin);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->connect_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, c->low_bytes);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, c->low_secs);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	if (strcmp(r->method, "PUT") == 0) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(e, CURLOPT_READDATA, r);
		curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(e, CURLOPT_SEEKDATA, r);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	} else if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "DELETE") == 0) {
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
	}
	CURLcode cc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &res->status);
	r->status = res->status;
	if (cc != CURLE_OK) {
		if (r->overflow) {
			why(res, "%s answer larger than %zu bytes", r->method, r->out_cap);
			ret = -E2BIG;
		} else if (cc == CURLE_OPERATION_TIMEDOUT) {
			why(res, "%s timed out (%ld ms in all, or under %ld bytes/s for %ld s): %s", r->method,
			    c->timeout_ms, c->low_bytes, c->low_secs, curl_easy_strerror(cc));
			ret = -ETIMEDOUT;
		} else if (cc == CURLE_COULDNT_CONNECT) {
			why(res, "cannot connect to %s: %s", c->host, curl_easy_strerror(cc));
			ret = -ECONNREFUSED;
		} else {
			why(res, "%s failed: %s", r->method, curl_easy_strerror(cc));
			ret = -EIO;
		}
		goto out_free_list;
	}
	ret = map_status(r, res);
	if (ret == 0 && r->etag_bad) {
		why(res, "%s answered an ETag we cannot read", r->method);
		ret = -EPROTO;
	}
out_free_list:
	curl_slist_free_all(list);
	return ret;
}

int s3_bucket_create(struct s3_client *c, struct s3_result *res)
{
	struct req r = {.method = "PUT", .body = "", .body_len = 0};
	int ret = perform(c, &r, res);
	if (ret == -EIO && r.status == 409 && strcmp(res->code, "BucketAlreadyOwnedByYou") == 0)
		return 0;
	return ret;
}

/* The answer's ETag must be the hex MD5 of what we sent. */
static int check_md5_etag(struct req *r, const void *body, size_t len, char etag[S3_ETAG_MAX], struct s3_result *res)
{
	unsigned char sum[16];
	char hex[33];
	md5(body, len, sum);
	hex16(sum, hex);
	if (strcmp(r->etag, hex) != 0) {
		why(res, "%s answered ETag \"%s\", the body's MD5 is %s", r->method, r->etag, hex);
		return -EBADMSG;
	}
	memcpy(etag, r->etag, S3_ETAG_MAX);
	return 0;
}

int s3_put(struct s3_client *c, const char *key, const void *body, size_t len, char etag[S3_ETAG_MAX],
	   struct s3_result *res)
{
	if (len > S3_PART_MAX || (!body && len)) {
		memset(res, 0, sizeof(*res));
		why(res, "PUT of %zu bytes: more than %u", len, S3_PART_MAX);
		return -E2BIG;
	}
	struct req r = {.method = "PUT", .key = key, .body = body ? body : "", .body_len = len, .send_md5 = 1};
	int ret = perform(c, &r, res);
	return ret < 0 ? ret : check_md5_etag(&r, r.body, len, etag, res);
}

int s3_get(struct s3_client *c, const char *key, uint64_t off, size_t len, void *buf, size_t *ret_len,
	   struct s3_result *res)
{
	uint64_t last;
	memset(res, 0, sizeof(*res));
	if (len == 0 || __builtin_add_overflow(off, (uint64_t)len - 1, &last)) {
		why(res, "GET of %zu bytes at %" PRIu64 ": empty or past 2^64", len, off);
		return -EINVAL;
	}
	struct req r = {.method = "GET", .key = key, .out = buf, .out_cap = len};
	snprintf(r.range, sizeof(r.range), "bytes=%" PRIu64 "-%" PRIu64, off, last);
	int ret = perform(c, &r, res);
	if (ret < 0)
		return ret;
	if (r.status != 206 && !(r.status == 200 && off == 0)) {
		why(res, "GET with a Range answered %ld", r.status);
		return -EPROTO;
	}
	if (r.have_length && r.content_length != r.out_len) {
		why(res, "GET answered %zu bytes of the %" PRIu64 " it announced", r.out_len, r.content_length);
		return -EIO;
	}
	*ret_len = r.out_len;
	return 0;
}

int s3_head(struct s3_client *c, const char *key, uint64_t *ret_size, char etag[S3_ETAG_MAX], struct s3_result *res)
{
	struct req r = {.method = "HEAD", .key = key, .head = 1};
	int ret = perform(c, &r, res);
	if (ret < 0)
		return ret;
	if (!r.have_length || !r.etag[0]) {
		why(res, "HEAD answered no Content-Length or ETag");
		return -EPROTO;
	}
	*ret_size = r.content_length;
	memcpy(etag, r.etag, S3_ETAG_MAX);
	return 0;
}

int s3_delete(struct s3_client *c, const char *key, struct s3_result *res)
{
	struct req r = {.method = "DELETE", .key = key};
	int ret = perform(c, &r, res);
	return ret == -ENOENT && strcmp(res->code, "NoSuchBucket") != 0 ? 0 : ret;
}

/* An XML answer into a buffer of its own, bounded. */
/* How many leading bytes of an answer can go in a log line as they are. */
static size_t printable(const char *s, size_t len, size_t max)
{
	size_t i = 0;
	while (i < len && i < max && s[i] >= 0x20 && s[i] < 0x7f)
		i++;
	return i;
}

static int perform_xml(struct s3_client *c, struct req *r, struct s3_result *res, char **ret_buf)
{
	r->out_cap = S3_XML_MAX_INPUT;
	r->out = malloc(r->out_cap);
	if (!r->out) {
		memset(res, 0, sizeof(*res));
		why(res, "out of memory for an answer");
		return -ENOMEM;
	}
	int ret = perform(c, r, res);
	if (ret < 0) {
		free(r->out);
		return ret;
	}
	*ret_buf = r->out;
	return 0;
}

int s3_mpu_initiate(struct s3_client *c, const char *key, char upload_id[S3_UPLOAD_ID_MAX], struct s3_result *res)
{
	struct req r = {.method = "POST", .key = key, .params = {{"uploads", ""}}, .n_params = 1};
	char *xml;
	int ret = perform_xml(c, &r, res, &xml);
	if (ret < 0)
		return ret;
	ret = s3_xml_initiate(xml, r.out_len, upload_id);
	free(xml);
	if (ret < 0)
		why(res, "initiate answered no upload id we can read (%s)", strerror(-ret));
	return ret < 0 ? -EPROTO : 0;
}

int s3_mpu_part(struct s3_client *c, const char *key, const char *upload_id, uint32_t number, const void *body,
		size_t len, char etag[S3_ETAG_MAX], struct s3_result *res)
{
	char num[12];
	if (number < 1 || number > S3_PARTS_MAX || len > S3_PART_MAX || !body) {
		memset(res, 0, sizeof(*res));
		why(res, "part %" PRIu32 " of %zu bytes: number out of 1..%u or more than %u bytes", number, len,
		    S3_PARTS_MAX, S3_PART_MAX);
		return -EINVAL;
	}
	snprintf(num, sizeof(num), "%" PRIu32, number);
	struct req r = {.method = "PUT",
			.key = key,
			.params = {{"partNumber", num}, {"uploadId", upload_id}},
			.n_params = 2,
			.body = body,
			.body_len = len,
			.send_md5 = 1};
	int ret = perform(c, &r, res);
	return ret < 0 ? ret : check_md5_etag(&r, body, len, etag, res);
}

int s3_mpu_complete(struct s3_client *c, const char *key, const char *upload_id, const struct s3_part *parts, size_t n,
		    char etag[S3_ETAG_MAX], struct s3_result *res)
{
	char want[S3_ETAG_MAX], got[S3_ETAG_MAX], *xml;
	size_t cap, len = 0;
	int ret;

	memset(res, 0, sizeof(*res));
	if (n == 0 || n > S3_PARTS_MAX) {
		why(res, "completion of %zu parts: not in 1..%u", n, S3_PARTS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (parts[i].number < 1 || parts[i].number > S3_PARTS_MAX ||
		    (i && parts[i].number <= parts[i - 1].number)) {
			why(res, "completion parts not ascending in 1..%u", S3_PARTS_MAX);
			return -EINVAL;
		}
	}
	if ((ret = s3_multipart_etag(parts, n, want)) < 0) {
		why(res, "a part's ETag is not an MD5");
		return ret;
	}
	cap = 64 + n * 160;
	char *body = malloc(cap);
	if (!body)
		return -ENOMEM;
	len += (size_t)snprintf(body + len, cap - len, "<CompleteMultipartUpload>");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(body + len, cap - len,
					"<Part><PartNumber>%" PRIu32 "</PartNumber><ETag>\"%s\"</ETag></Part>",
					parts[i].number, parts[i].etag);
	len += (size_t)snprintf(body + len, cap - len, "</CompleteMultipartUpload>");
	struct req r = {.method = "POST",
			.key = key,
			.params = {{"uploadId", upload_id}},
			.n_params = 1,
			.body = body,
			.body_len = len,
			.content_type = "application/xml"};
	ret = perform_xml(c, &r, res, &xml);
	free(body);
	if (ret < 0)
		return ret;
	ret = s3_xml_complete(xml, r.out_len, got, res->code);
	if (ret == -EIO) {
		free(xml);
		why(res, "completion answered 200 with error %s", res->code);
		return -EIO;
	}
	if (ret < 0) {
		why(res, "completion answered no ETag we can read (%s): %.*s", strerror(-ret),
		    (int)printable(xml, r.out_len, 96), xml);
		free(xml);
		return -EPROTO;
	}
	free(xml);
	if (!got[0]) {
		/* Ceph RGW 16 answers <ETag></ETag>: ask the object itself. */
		uint64_t size;
		if ((ret = s3_head(c, key, &size, got, res)) < 0)
			return ret;
	}
	if (strcmp(got, want) != 0) {
		why(res, "completion answered ETag %s, our parts make %s", got, want);
		return -EBADMSG;
	}
	memcpy(etag, got, S3_ETAG_MAX);
	return 0;
}

int s3_mpu_abort(struct s3_client *c, const char *key, const char *upload_id, struct s3_result *res)
{
	struct req r = {.method = "DELETE", .key = key, .params = {{"uploadId", upload_id}}, .n_params = 1};
	int ret = perform(c, &r, res);
	return ret == -ENOENT && strcmp(res->code, "NoSuchUpload") == 0 ? 0 : ret;
}

int s3_mpu_list(struct s3_client *c, const char *key, const char *upload_id, struct s3_part *parts, size_t cap,
		size_t *ret_n, struct s3_result *res)
{
	size_t total = 0;
	uint32_t marker = 0;
	for (;;) {
		char mk[12], max[12], *xml;
		size_t n;
		int truncated, ret;
		uint32_t next;
		snprintf(mk, sizeof(mk), "%" PRIu32, marker);
		snprintf(max, sizeof(max), "%u", S3_LIST_PARTS_PAGE);
		struct req r = {.method = "GET",
				.key = key,
				.params = {{"uploadId", upload_id}, {"part-number-marker", mk}, {"max-parts", max}},
				.n_params = 3};
		if ((ret = perform_xml(c, &r, res, &xml)) < 0)
			return ret;
		ret = s3_xml_list_parts(xml, r.out_len, parts + total, cap - total, &n, &truncated, &next);
		free(xml);
		if (ret < 0) {
			why(res, "list of parts unreadable or past %zu parts (%s)", cap, strerror(-ret));
			return ret == -E2BIG ? -E2BIG : -EPROTO;
		}
		if (n && total && parts[total].number <= parts[total - 1].number) {
			why(res, "list of parts not ascending across pages");
			return -EPROTO;
		}
		total += n;
		if (!truncated)
			break;
		if (next <= marker) {
			why(res, "list of parts does not advance (marker %" PRIu32 ")", next);
			return -EPROTO;
		}
		marker = next;
	}
	*ret_n = total;
	return 0;
}

int s3_mpu_completed(struct s3_client *c, const char *key, const struct s3_part *parts, size_t n,
		     char etag[S3_ETAG_MAX], struct s3_result *res)
{
	char want[S3_ETAG_MAX], got[S3_ETAG_MAX];
	uint64_t size, total = 0;
	int ret = s3_multipart_etag(parts, n, want);
	if (ret < 0) {
		memset(res, 0, sizeof(*res));
		why(res, "a part's ETag is not an MD5");
		return ret;
	}
	for (size_t i = 0; i < n; i++)
		if (__builtin_add_overflow(total, parts[i].size, &total))
			return -ERANGE;
	if ((ret = s3_head(c, key, &size, got, res)) < 0)
		return ret;
	if (strcmp(got, want) != 0 || size != total) {
		why(res, "the object there has ETag %s and %" PRIu64 " bytes, the upload would make %s and %" PRIu64,
		    got, size, want, total);
		return -EBADMSG;
	}
	memcpy(etag, got, S3_ETAG_MAX);
	return 0;
}
