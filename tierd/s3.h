/* The S3 client tierd uploads and reads with: one blocking request at a time on one
 * libcurl easy handle (kept alive between requests), path-style addressing, every request
 * signed with SigV4 over its real payload hash (RGW refuses a request without
 * x-amz-content-sha256), Content-MD5 on every body and the answer's ETag checked against
 * it, timeouts of our own (connect, whole request, and a low-speed floor for a store that
 * stalls without an error), answers bounded in bytes. Not thread-safe: one client per
 * thread. Library code: no logging; the caller logs s3_result.why. */
#ifndef TIER_S3_H
#define TIER_S3_H

#include <stddef.h>
#include <stdint.h>

#include "s3_xml.h"

#define S3_PART_MIN     (5u * 1024 * 1024)   /* S3's smallest part but the last */
#define S3_PART_MAX     (64u * 1024 * 1024)  /* our largest part (S3 allows 5 GiB) */
#define S3_PARTS_MAX    10000u               /* S3's most parts in one upload */
#define S3_KEY_MAX      512                  /* bytes of an object key, with the NUL */
#define S3_XML_BODY_MAX (S3_PARTS_MAX * 96u) /* a CompleteMultipartUpload body */

struct s3_conf {
	const char *endpoint; /* "http://127.0.0.1:7480" or https://..., no path */
	const char *region;   /* "us-east-1" unless the store says otherwise */
	const char *bucket;
	const char *access_key;
	const char *secret;
	long connect_timeout_ms; /* 0: 5000 */
	long timeout_ms;         /* the whole request; 0: 60000 */
	long low_speed_bytes;    /* fewer bytes per second than this ... (0: 1024) */
	long low_speed_secs;     /* ... for this long ends the request (0: 10) */
	/* NULL or "": the endpoint's host is resolved by libcurl; else the IP literal every
	 * connection goes to (CURLOPT_RESOLVE pins the host to it: tierd resolves nothing). */
	const char *address;
};

/* What the last request got: HTTP status (0 when none came), S3 error code, why. */
struct s3_result {
	long status;
	char code[S3_ERR_CODE_MAX];
	char why[192];
};

struct s3_client;

/* -EINVAL for a missing or malformed field (endpoint not http(s)://host[:port]). The
 * first call initialises libcurl (curl_global_init): make it before starting threads. */
int s3_client_new(const struct s3_conf *conf, struct s3_client **ret);
void s3_client_free(struct s3_client *c);

/* Errors of every call: -ETIMEDOUT (a timeout or the low-speed floor), -ECONNREFUSED (no
 * connection), -EIO (transport or a 5xx), -EACCES (403), -ENOENT (404 NoSuchKey,
 * NoSuchUpload, NoSuchBucket), -EBADMSG (a checksum the store or we found wrong),
 * -EPROTO (an answer we cannot read), -E2BIG (an answer past its bound), -EINVAL. */

/* Creates the bucket; one we already own is success. */
int s3_bucket_create(struct s3_client *c, struct s3_result *res);

/* PUT of one object from memory (len <= S3_PART_MAX); etag (hex MD5) checked. */
int s3_put(struct s3_client *c, const char *key, const void *body, size_t len, char etag[S3_ETAG_MAX],
	   struct s3_result *res);

/* GET of bytes [off, off + len) into buf (a Range request); *ret_len is how many came
 * (fewer at the object's end). -ERANGE when off is past the end. */
int s3_get(struct s3_client *c, const char *key, uint64_t off, size_t len, void *buf, size_t *ret_len,
	   struct s3_result *res);

/* HEAD: the object's size and ETag. */
int s3_head(struct s3_client *c, const char *key, uint64_t *ret_size, char etag[S3_ETAG_MAX], struct s3_result *res);

/* DELETE; an object already gone is success (S3 answers 204 either way). */
int s3_delete(struct s3_client *c, const char *key, struct s3_result *res);

/* Multipart upload: initiate (POST ?uploads=), one part (PUT ?partNumber&uploadId, ETag
 * checked against the part's MD5), complete (parts ascending; the answer's ETag checked
 * against the MD5 of the parts' MD5s, "-N"), abort (an upload already gone is success),
 * list the parts the store holds (every page, up to cap parts). */
int s3_mpu_initiate(struct s3_client *c, const char *key, char upload_id[S3_UPLOAD_ID_MAX], struct s3_result *res);
int s3_mpu_part(struct s3_client *c, const char *key, const char *upload_id, uint32_t number, const void *body,
		size_t len, char etag[S3_ETAG_MAX], struct s3_result *res);
int s3_mpu_complete(struct s3_client *c, const char *key, const char *upload_id, const struct s3_part *parts, size_t n,
		    char etag[S3_ETAG_MAX], struct s3_result *res);
int s3_mpu_abort(struct s3_client *c, const char *key, const char *upload_id, struct s3_result *res);
int s3_mpu_list(struct s3_client *c, const char *key, const char *upload_id, struct s3_part *parts, size_t cap,
		size_t *ret_n, struct s3_result *res);

/* Whether the object at key is the completion of an upload of these parts (HEAD, its
 * ETag the parts' multipart ETag): 0 when it is, -ENOENT when there is no object, -EBADMSG
 * when another object is there. For a resume that finds its upload gone (NoSuchUpload,
 * or 404 NoSuchKey from Ceph RGW): a completion whose answer never came may have
 * completed (seen with Ceph 18 after an OSD restart). */
int s3_mpu_completed(struct s3_client *c, const char *key, const struct s3_part *parts, size_t n,
		     char etag[S3_ETAG_MAX], struct s3_result *res);

/* Lower-case hex MD5: the ETag S3 gives an object or part sent in one piece. */
void s3_md5_hex(const void *data, size_t len, char out[33]);

/* The ETag S3 gives a multipart object: hex MD5 of the parts' binary MD5s, "-", count. */
int s3_multipart_etag(const struct s3_part *parts, size_t n, char out[S3_ETAG_MAX]);

#endif
