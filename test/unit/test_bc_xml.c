/* The bounded XML reader on the documents of BAICHUAN.md section 4, and malformed ones. */
#include <errno.h>
#include <string.h>

#include "bc_docs.h"
#include "bc_xml.h"
#include "test.h"

#define S(x) x, strlen(x)

static const char nonce_doc[] = "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<body>\n"
				"<Encryption version=\"1.1\">\n<type>md5</type>\n<nonce>13BCECE33DA453DB</nonce>\n"
				"</Encryption>\n</body>\n";

static const char ext_doc[] = "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<Extension version=\"1.1\">\n"
			      "<binaryData>1</binaryData>\n<channelId>0</channelId>\n<encryptLen>160</encryptLen>\n"
			      "<token>a,b,c</token>\n</Extension>\n";

static const char alarm_doc[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<body>\n<AlarmEventList version=\"1.1\">\n"
    "<AlarmEvent version=\"1.1\">\n<channelId>0</channelId>\n<status>MD</status>\n<AItype>none</AItype>\n"
    "<recording>0</recording>\n<timeStamp>0</timeStamp>\n</AlarmEvent>\n"
    "<DayNightEvent version=\"1.1\"><mode>day</mode></DayNightEvent>\n"
    "<AlarmEvent version=\"1.1\">\n<channelId>1</channelId>\n<status>none</status>\n"
    "<AItype>people,vehicle</AItype>\n<recording>1</recording>\n<timeStamp>5</timeStamp>\n</AlarmEvent>\n"
    "</AlarmEventList>\n</body>\n";

static void test_nonce(void)
{
	char out[64];
	const char *why = NULL;
	CHECK_EQ(bc_xml_check(S(nonce_doc), &why), 0);
	CHECK_EQ(bc_xml_text(S(nonce_doc), "body/Encryption/nonce", 0, out, sizeof out, &why), 0);
	CHECK(strcmp(out, "13BCECE33DA453DB") == 0);
	CHECK_EQ(bc_xml_text(S(nonce_doc), "body/Encryption/type", 0, out, sizeof out, &why), 0);
	CHECK(strcmp(out, "md5") == 0);
	CHECK_EQ(bc_xml_text(S(nonce_doc), "body/nonce", 0, out, sizeof out, &why), -ENOENT);
	CHECK_EQ(bc_xml_text(S(nonce_doc), "Encryption/nonce", 0, out, sizeof out, &why), -ENOENT);
	CHECK_EQ(bc_xml_text(S(nonce_doc), "body/Encryption/nonce", 1, out, sizeof out, &why), -ENOENT);
	CHECK_EQ(bc_xml_text(S(nonce_doc), "body/Encryption/nonce", 0, out, 16, &why), -ENAMETOOLONG);
	CHECK_EQ(bc_xml_text(S(nonce_doc), "body/Encryption", 0, out, sizeof out, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "child");
}

static void test_extension(void)
{
	unsigned long long v = 0;
	char out[32];
	const char *why = NULL;
	CHECK_EQ(bc_xml_check(S(ext_doc), &why), 0);
	CHECK_EQ(bc_xml_uint(S(ext_doc), "Extension/binaryData", &v, &why), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(bc_xml_uint(S(ext_doc), "Extension/encryptLen", &v, &why), 0);
	CHECK_EQ(v, 160);
	CHECK_EQ(bc_xml_uint(S(ext_doc), "Extension/token", &v, &why), -EINVAL);
	CHECK_EQ(bc_xml_text(S(ext_doc), "Extension/token", 0, out, sizeof out, &why), 0);
	CHECK(strcmp(out, "a,b,c") == 0);
	CHECK_EQ(bc_xml_uint(S(ext_doc), "Extension/checkPos", &v, &why), -ENOENT);
}

static void test_alarm_list(void)
{
	struct bc_xml_span ev;
	char st[16], ai[32];
	const char *why = NULL;
	CHECK_EQ(bc_xml_check(S(alarm_doc), &why), 0);
	CHECK_EQ(bc_xml_find(S(alarm_doc), "body/AlarmEventList/AlarmEvent", 0, &ev, &why), 0);
	CHECK_EQ(bc_xml_text(ev.p, ev.len, "status", 0, st, sizeof st, &why), 0);
	CHECK(strcmp(st, "MD") == 0);
	CHECK_EQ(bc_xml_find(S(alarm_doc), "body/AlarmEventList/AlarmEvent", 1, &ev, &why), 0);
	CHECK_EQ(bc_xml_text(ev.p, ev.len, "status", 0, st, sizeof st, &why), 0);
	CHECK(strcmp(st, "none") == 0);
	CHECK_EQ(bc_xml_text(ev.p, ev.len, "AItype", 0, ai, sizeof ai, &why), 0);
	CHECK(strcmp(ai, "people,vehicle") == 0);
	CHECK_EQ(bc_xml_find(S(alarm_doc), "body/AlarmEventList/AlarmEvent", 2, &ev, &why), -ENOENT);
}

static void test_generated_docs(void)
{
	char d[BC_DOC_MAX], out[64];
	const char *why = NULL;
	unsigned long long v;
	CHECK_EQ(bc_doc_snap_reply(d, sizeof d, 0, "a<b>&.jpg", 1234), 0);
	CHECK_EQ(bc_xml_check(S(d), &why), 0);
	CHECK_EQ(bc_xml_text(S(d), "body/Snap/fileName", 0, out, sizeof out, &why), 0);
	CHECK(strcmp(out, "a<b>&.jpg") == 0);
	CHECK_EQ(bc_xml_uint(S(d), "body/Snap/pictureSize", &v, &why), 0);
	CHECK_EQ(v, 1234);
	CHECK_EQ(bc_doc_device_info(d, sizeof d, 1920, 1080), 0);
	CHECK_EQ(bc_xml_uint(S(d), "body/DeviceInfo/resolution/width", &v, &why), 0);
	CHECK_EQ(v, 1920);
	CHECK_EQ(bc_doc_preview(d, sizeof d, 0, 256, "subStream"), 0);
	CHECK_EQ(bc_xml_uint(S(d), "body/Preview/handle", &v, &why), 0);
	CHECK_EQ(v, 256);
	CHECK_EQ(bc_doc_preview(d, sizeof d, 0, 256, NULL), 0);
	CHECK_EQ(bc_xml_text(S(d), "body/Preview/streamType", 0, out, sizeof out, &why), -ENOENT);
	CHECK_EQ(bc_doc_nonce(d, 10, "x"), -ENOBUFS);
}

static void test_entities_and_misc(void)
{
	char out[32];
	const char *why = NULL;
	const char *d = "<?xml version=\"1.0\"?><!-- c > --><a x='1>2'><b>&lt;&#65;&amp;</b><c/></a>";
	CHECK_EQ(bc_xml_check(S(d), &why), 0);
	CHECK_EQ(bc_xml_text(S(d), "a/b", 0, out, sizeof out, &why), 0);
	CHECK(strcmp(out, "<A&") == 0);
	CHECK_EQ(bc_xml_text(S(d), "a/c", 0, out, sizeof out, &why), 0);
	CHECK(strcmp(out, "") == 0);
	d = "<?xml?><a><b>&bogus;</b></a>";
	CHECK_EQ(bc_xml_text(S(d), "a/b", 0, out, sizeof out, &why), -EBADMSG);
}

static void test_malformed(void)
{
	const char *why = NULL;
	CHECK_EQ(bc_xml_check(S("<body></body>"), &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "<?xml");
	CHECK_EQ(bc_xml_check(S("\x13\x37garbage"), &why), -EBADMSG);
	CHECK_EQ(bc_xml_check(S("<?xml?><a><b></a></b>"), &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "mismatched");
	CHECK_EQ(bc_xml_check(S("<?xml?><a><b></b>"), &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "unclosed");
	CHECK_EQ(bc_xml_check(S("<?xml?></a>"), &why), -EBADMSG);
	CHECK_EQ(bc_xml_check(S("<?xml?><a"), &why), -EBADMSG);
	CHECK_EQ(bc_xml_check(S("<?xml"), &why), -EBADMSG);
	CHECK_EQ(bc_xml_check(S("<?xml?><!DOCTYPE a [<!ENTITY x \"y\">]><a/>"), &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "DTD");
	CHECK_EQ(bc_xml_check(S("<?xml?><a><![CDATA[x]]></a>"), &why), -EBADMSG);
	CHECK_EQ(bc_xml_check("<?xml?><a>\0</a>", 15, &why), -EBADMSG);
	/* Depth is bounded. */
	char deep[512] = "<?xml?>";
	for (int i = 0; i < 17; i++)
		strcat(deep, "<a>");
	for (int i = 0; i < 17; i++)
		strcat(deep, "</a>");
	CHECK_EQ(bc_xml_check(S(deep), &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "deeply");
	char name[120] = "<?xml?><";
	memset(name + 8, 'n', 70);
	strcat(name, "/>");
	CHECK_EQ(bc_xml_check(S(name), &why), -EBADMSG);
}

int main(void)
{
	RUN(test_nonce);
	RUN(test_extension);
	RUN(test_alarm_list);
	RUN(test_generated_docs);
	RUN(test_entities_and_misc);
	RUN(test_malformed);
	return TEST_EXIT();
}
