/* The small XML reader for S3 answers: a pull over a bounded buffer that calls back with
 * each leaf element's path ("ListPartsResult/Part/ETag") and its text, entities decoded.
 * No DTD, no CDATA, no processing beyond the prolog; depth, name and text bounded. Then
 * the four answers tierd reads: an error, the start of a multipart upload, its parts, its
 * completion. Pure: no logging, no allocation. Fuzzed (test/fuzz/fuzz_tier_s3_xml.c). */
#ifndef TIER_S3_XML_H
#define TIER_S3_XML_H

#include <stddef.h>
#include <stdint.h>

#define S3_XML_MAX_INPUT   (1024 * 1024) /* bytes of one answer */
#define S3_XML_MAX_DEPTH   8
#define S3_XML_MAX_NAME    64
#define S3_XML_MAX_TEXT    1024
#define S3_UPLOAD_ID_MAX   256 /* bytes of an upload id, with the NUL */
#define S3_ETAG_MAX        80  /* bytes of an ETag, quotes removed, with the NUL */
#define S3_ERR_CODE_MAX    64
#define S3_LIST_PARTS_PAGE 1000 /* parts asked for in one ListParts */

/* Called at the end of every element: text is its text for an element without children,
 * NULL for one with children. Returns 0 to go on, or a negative errno that ends the parse
 * and is returned. */
typedef int (*s3_xml_cb)(void *ctx, const char *path, const char *text);

/* 0, -EPROTO (not well formed, or DTD/CDATA), -E2BIG (a ceiling above), or cb's error. */
int s3_xml_parse(const char *buf, size_t len, s3_xml_cb cb, void *ctx);

/* <Error><Code>...</Code>: code into code (empty when the body is not an S3 error). */
int s3_xml_error(const char *buf, size_t len, char code[S3_ERR_CODE_MAX]);

/* <InitiateMultipartUploadResult><UploadId>: -EPROTO when missing or empty. */
int s3_xml_initiate(const char *buf, size_t len, char upload_id[S3_UPLOAD_ID_MAX]);

struct s3_part {
	uint32_t number; /* 1 .. 10000 */
	uint64_t size;
	char etag[S3_ETAG_MAX];
};

/* <ListPartsResult>: up to cap parts, in the order given (S3 lists them ascending);
 * -E2BIG past cap; *truncated and *next_marker for the next page. */
int s3_xml_list_parts(const char *buf, size_t len, struct s3_part *parts, size_t cap, size_t *ret_n, int *truncated,
		      uint32_t *next_marker);

/* <CompleteMultipartUploadResult><ETag>: the object's ETag, "" when the element is empty
 * (Ceph RGW 16 answers so; s3_mpu_complete then asks with HEAD). A completion answered 200
 * with an <Error> body (S3 does that) is -EIO with the code in code. */
int s3_xml_complete(const char *buf, size_t len, char etag[S3_ETAG_MAX], char code[S3_ERR_CODE_MAX]);

/* An ETag as S3 writes it ("\"abc\"" or "&quot;abc&quot;", decoded): the quotes removed. */
int s3_etag_unquote(const char *in, char out[S3_ETAG_MAX]);

#endif
