/* tierd/s3_xml.c: the answers RGW and S3 give (initiate, list parts, complete, errors,
 * a completion answered 200 with an error inside), entities, and every ceiling at and one
 * past its bound: depth, name, text, input, parts, upload id. */
#include "test.h"

#include <errno.h>

#include "s3_xml.h"

#define NS " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""

static int parse(const char *s, int (*cb)(void *, const char *, const char *), void *ctx)
{
	return s3_xml_parse(s, strlen(s), cb, ctx);
}

static int collect(void *ctx, const char *path, const char *text)
{
	char *out = ctx;
	size_t n = strlen(out);
	snprintf(out + n, 1024 - n, "%s=%s;", path, text ? text : "(children)");
	return 0;
}

static void test_reader(void)
{
	char out[1024] = "";
	CHECK_EQ(parse("<?xml version=\"1.0\"?>\n<a x=\"1\" y='>'><!-- hi --><b>t&lt;&#65;&#x42;&#233;&quot;</b><c/>"
		       "<d></d></a>\n",
		       collect, out),
		 0);
	CHECK_STR_EQ(out, "a/b=t<AB\xc3\xa9\";a/c=;a/d=;a=(children);");
	/* Not well formed. */
	const char *bad[] = {"",
			     "<a>",
			     "<a></b>",
			     "<a></a><b></b>",
			     "x<a/>",
			     "<a>&bogus;</a>",
			     "<a>&#0;</a>",
			     "<a>&#xD800;</a>",
			     "<a>&#x110000;</a>",
			     "<a>&amp</a>",
			     "<!DOCTYPE a><a/>",
			     "<a><![CDATA[x]]></a>",
			     "<a x=\"1></a>",
			     "<a>></a>",
			     "<a/><?pi?>",
			     "</a>",
			     "<>"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out[0] = '\0';
		int r = parse(bad[i], collect, out);
		if (r != -EPROTO)
			fprintf(stderr, "  bad[%zu] \"%s\" gave %d\n", i, bad[i], r);
		CHECK_EQ(r, -EPROTO);
	}
}

static void test_ceilings(void)
{
	char doc[256], out[1024];
	/* Depth 8 passes, 9 does not. */
	out[0] = '\0';
	CHECK_EQ(parse("<a><b><c><d><e><f><g><h>x</h></g></f></e></d></c></b></a>", collect, out), 0);
	CHECK_EQ(parse("<a><b><c><d><e><f><g><h><i>x</i></h></g></f></e></d></c></b></a>", collect, out), -E2BIG);
	/* A name of 64 bytes passes, 65 does not. */
	char name[S3_XML_MAX_NAME + 2];
	memset(name, 'n', sizeof(name));
	name[S3_XML_MAX_NAME] = '\0';
	snprintf(doc, sizeof(doc), "<%s/>", name);
	out[0] = '\0';
	CHECK_EQ(parse(doc, collect, out), 0);
	name[S3_XML_MAX_NAME] = 'n';
	name[S3_XML_MAX_NAME + 1] = '\0';
	snprintf(doc, sizeof(doc), "<%s/>", name);
	CHECK_EQ(parse(doc, collect, out), -E2BIG);
}

static int quiet(void *ctx, const char *path, const char *text)
{
	(void)ctx;
	(void)path;
	(void)text;
	return 0;
}

static void test_text_and_input_ceilings(void)
{
	static char doc[S3_XML_MAX_INPUT + 16];
	memcpy(doc, "<a>", 3);
	memset(doc + 3, 't', S3_XML_MAX_TEXT);
	memcpy(doc + 3 + S3_XML_MAX_TEXT, "</a>", 5);
	CHECK_EQ(parse(doc, quiet, NULL), 0);
	memset(doc + 3, 't', S3_XML_MAX_TEXT + 1);
	memcpy(doc + 4 + S3_XML_MAX_TEXT, "</a>", 5);
	CHECK_EQ(parse(doc, quiet, NULL), -E2BIG);
	/* An entity counts as what it decodes to: 1023 bytes and "&amp;" pass, 1024 do not. */
	memcpy(doc + 3 + S3_XML_MAX_TEXT - 1, "&amp;</a>", 10);
	CHECK_EQ(parse(doc, quiet, NULL), 0);
	doc[3 + S3_XML_MAX_TEXT - 1] = 't';
	memcpy(doc + 3 + S3_XML_MAX_TEXT, "&amp;</a>", 10);
	CHECK_EQ(parse(doc, quiet, NULL), -E2BIG);

	/* Input: exactly the ceiling (a comment fills it) passes, one more byte does not. */
	size_t n = S3_XML_MAX_INPUT;
	memcpy(doc, "<a><!--", 7);
	memset(doc + 7, 'x', n - 7 - 7);
	memcpy(doc + n - 7, "--></a>", 7);
	CHECK_EQ(s3_xml_parse(doc, n, quiet, NULL), 0);
	CHECK_EQ(s3_xml_parse(doc, n + 1, quiet, NULL), -E2BIG);
}

static void test_initiate(void)
{
	char id[S3_UPLOAD_ID_MAX];
	const char *ok = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><InitiateMultipartUploadResult" NS
			 "><Bucket>kp</Bucket><Key>a/b.mp4</Key><UploadId>2~Xyz-_.</UploadId>"
			 "</InitiateMultipartUploadResult>";
	CHECK_EQ(s3_xml_initiate(ok, strlen(ok), id), 0);
	CHECK_STR_EQ(id, "2~Xyz-_.");
	const char *none = "<InitiateMultipartUploadResult><UploadId></UploadId></InitiateMultipartUploadResult>";
	CHECK_EQ(s3_xml_initiate(none, strlen(none), id), -EPROTO);
	/* An id of 255 bytes fits, 256 does not. */
	char doc[1024], longid[S3_UPLOAD_ID_MAX + 1];
	memset(longid, 'i', S3_UPLOAD_ID_MAX - 1);
	longid[S3_UPLOAD_ID_MAX - 1] = '\0';
	snprintf(doc, sizeof(doc),
		 "<InitiateMultipartUploadResult><UploadId>%s</UploadId></InitiateMultipartUploadResult>", longid);
	CHECK_EQ(s3_xml_initiate(doc, strlen(doc), id), 0);
	CHECK_EQ(strlen(id), S3_UPLOAD_ID_MAX - 1);
	longid[S3_UPLOAD_ID_MAX - 1] = 'i';
	longid[S3_UPLOAD_ID_MAX] = '\0';
	snprintf(doc, sizeof(doc),
		 "<InitiateMultipartUploadResult><UploadId>%s</UploadId></InitiateMultipartUploadResult>", longid);
	CHECK_EQ(s3_xml_initiate(doc, strlen(doc), id), -E2BIG);
}

static void test_list_parts(void)
{
	struct s3_part parts[3];
	size_t n = 99;
	int trunc = -1;
	uint32_t next = 99;
	const char *ok = "<ListPartsResult" NS "><Bucket>kp</Bucket><UploadId>u</UploadId>"
			 "<NextPartNumberMarker>2</NextPartNumberMarker><IsTruncated>true</IsTruncated>"
			 "<Part><PartNumber>1</PartNumber><ETag>&quot;aa&quot;</ETag><Size>5242880</Size></Part>"
			 "<Part><ETag>\"bb\"</ETag><Size>3</Size><PartNumber>2</PartNumber></Part></ListPartsResult>";
	CHECK_EQ(s3_xml_list_parts(ok, strlen(ok), parts, 3, &n, &trunc, &next), 0);
	CHECK_EQ(n, 2);
	CHECK_EQ(trunc, 1);
	CHECK_EQ(next, 2);
	CHECK_EQ(parts[0].number, 1);
	CHECK_STR_EQ(parts[0].etag, "aa");
	CHECK_EQ(parts[0].size, 5242880);
	CHECK_EQ(parts[1].number, 2);
	CHECK_STR_EQ(parts[1].etag, "bb");
	CHECK_EQ(parts[1].size, 3);
	/* One past the caller's room. */
	CHECK_EQ(s3_xml_list_parts(ok, strlen(ok), parts, 1, &n, &trunc, &next), -E2BIG);
	const char *empty = "<ListPartsResult><IsTruncated>false</IsTruncated></ListPartsResult>";
	CHECK_EQ(s3_xml_list_parts(empty, strlen(empty), parts, 3, &n, &trunc, &next), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(trunc, 0);
	const char *bad[] = {
	    /* a field missing, twice, out of range, descending, truncated with no marker */
	    "<ListPartsResult><Part><PartNumber>1</PartNumber><Size>3</Size></Part></ListPartsResult>",
	    "<ListPartsResult><Part><PartNumber>1</PartNumber><PartNumber>2</PartNumber><ETag>a</ETag><Size>3</Size>"
	    "</Part></ListPartsResult>",
	    "<ListPartsResult><Part><PartNumber>10001</PartNumber><ETag>a</ETag><Size>3</Size></Part></"
	    "ListPartsResult>",
	    "<ListPartsResult><Part><PartNumber>0</PartNumber><ETag>a</ETag><Size>3</Size></Part></ListPartsResult>",
	    "<ListPartsResult><Part><PartNumber>2</PartNumber><ETag>a</ETag><Size>3</Size></Part>"
	    "<Part><PartNumber>1</PartNumber><ETag>a</ETag><Size>3</Size></Part></ListPartsResult>",
	    "<ListPartsResult><Part><PartNumber>1</PartNumber><ETag>a</ETag><Size>-3</Size></Part></ListPartsResult>",
	    "<ListPartsResult><Part><PartNumber>1</PartNumber><ETag>a</ETag><Size>99999999999999999999</Size></Part>"
	    "</ListPartsResult>",
	    "<ListPartsResult><IsTruncated>true</IsTruncated></ListPartsResult>",
	    "<ListPartsResult><IsTruncated>yes</IsTruncated></ListPartsResult>",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = s3_xml_list_parts(bad[i], strlen(bad[i]), parts, 3, &n, &trunc, &next);
		if (r != -EPROTO && r != -ERANGE)
			fprintf(stderr, "  bad list[%zu] gave %d\n", i, r);
		CHECK(r == -EPROTO || r == -ERANGE);
	}
}

static void test_complete_and_errors(void)
{
	char etag[S3_ETAG_MAX], code[S3_ERR_CODE_MAX];
	const char *ok = "<CompleteMultipartUploadResult" NS "><Location>x</Location><ETag>&quot;abc-2&quot;</ETag>"
			 "</CompleteMultipartUploadResult>";
	CHECK_EQ(s3_xml_complete(ok, strlen(ok), etag, code), 0);
	CHECK_STR_EQ(etag, "abc-2");
	/* Ceph RGW 16 answers an empty ETag: an answer, with no ETag in it. */
	const char *rgw = "<CompleteMultipartUploadResult" NS "><Location>http://127.0.0.1:1/kp/a</Location>"
			  "<Bucket>kp</Bucket><Key>a</Key><ETag></ETag></CompleteMultipartUploadResult>";
	CHECK_EQ(s3_xml_complete(rgw, strlen(rgw), etag, code), 0);
	CHECK_STR_EQ(etag, "");
	const char *noetag = "<CompleteMultipartUploadResult><Key>a</Key></CompleteMultipartUploadResult>";
	CHECK_EQ(s3_xml_complete(noetag, strlen(noetag), etag, code), -EPROTO);
	/* S3 may answer a completion 200 and put the error in the body. */
	const char *err200 = "<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code><Message>x</Message></Error>";
	CHECK_EQ(s3_xml_complete(err200, strlen(err200), etag, code), -EIO);
	CHECK_STR_EQ(code, "InternalError");
	CHECK_EQ(s3_xml_error(err200, strlen(err200), code), 0);
	CHECK_STR_EQ(code, "InternalError");
	const char *notxml = "<html>";
	CHECK_EQ(s3_xml_error(notxml, strlen(notxml), code), -EPROTO);
	const char *nocode = "<Error><Message>x</Message></Error>";
	CHECK_EQ(s3_xml_error(nocode, strlen(nocode), code), 0);
	CHECK_STR_EQ(code, "");

	CHECK_EQ(s3_etag_unquote("\"d41d8cd98f00b204e9800998ecf8427e\"", etag), 0);
	CHECK_STR_EQ(etag, "d41d8cd98f00b204e9800998ecf8427e");
	CHECK_EQ(s3_etag_unquote("\"\"", etag), -EPROTO);
	CHECK_EQ(s3_etag_unquote("a\"b", etag), -EPROTO);
	char longe[S3_ETAG_MAX + 1];
	memset(longe, 'e', S3_ETAG_MAX - 1);
	longe[S3_ETAG_MAX - 1] = '\0';
	CHECK_EQ(s3_etag_unquote(longe, etag), 0);
	longe[S3_ETAG_MAX - 1] = 'e';
	longe[S3_ETAG_MAX] = '\0';
	CHECK_EQ(s3_etag_unquote(longe, etag), -EPROTO);
}

int main(void)
{
	RUN(test_reader);
	RUN(test_ceilings);
	RUN(test_text_and_input_ceilings);
	RUN(test_initiate);
	RUN(test_list_parts);
	RUN(test_complete_and_errors);
	return TEST_EXIT();
}
