/* The XML document writers of bc_docs.h. Text values are escaped. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "bc_docs.h"
#include "bc_xml.h"

#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n"

static int doc(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int doc(char *out, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, cap, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= cap ? -ENOBUFS : 0;
}

int bc_doc_nonce(char *out, size_t cap, const char *nonce)
{
	char n[128];
	if (bc_xml_escape(nonce, n, sizeof n) < 0)
		return -ENOBUFS;
	return doc(out, cap,
		   XML_DECL "<body>\n<Encryption version=\"1.1\">\n<type>md5</type>\n<nonce>%s</nonce>\n"
			    "</Encryption>\n</body>\n",
		   n);
}

int bc_doc_login_user(char *out, size_t cap, const char *user_hash, const char *password_hash)
{
	char u[128], p[128];
	if (bc_xml_escape(user_hash, u, sizeof u) < 0 || bc_xml_escape(password_hash, p, sizeof p) < 0)
		return -ENOBUFS;
	return doc(out, cap,
		   XML_DECL "<body>\n<LoginUser version=\"1.1\">\n<userName>%s</userName>\n<password>%s</password>\n"
			    "<userVer>1</userVer>\n</LoginUser>\n<LoginNet version=\"1.1\">\n<type>LAN</type>\n"
			    "<udpPort>0</udpPort>\n</LoginNet>\n</body>\n",
		   u, p);
}

int bc_doc_device_info(char *out, size_t cap, uint32_t width, uint32_t height)
{
	return doc(out, cap,
		   XML_DECL "<body>\n<DeviceInfo version=\"1.1\">\n<firmVersion>00000000000000</firmVersion>\n"
			    "<IOInputPortNum>0</IOInputPortNum>\n<IOOutputPortNum>0</IOOutputPortNum>\n"
			    "<diskNum>0</diskNum>\n<type>IPC</type>\n<channelNum>1</channelNum>\n"
			    "<audioNum>0</audioNum>\n<ipChannel>0</ipChannel>\n<analogChnNum>1</analogChnNum>\n"
			    "<resolution>\n<resolutionName>%ux%u</resolutionName>\n<width>%u</width>\n"
			    "<height>%u</height>\n</resolution>\n<language>English</language>\n"
			    "<sdCard>0</sdCard>\n<ptzMode>none</ptzMode>\n<typeInfo>IPC</typeInfo>\n"
			    "</DeviceInfo>\n</body>\n",
		   width, height, width, height);
}

int bc_doc_preview(char *out, size_t cap, unsigned channel, uint32_t handle, const char *stream_name)
{
	if (!stream_name)
		return doc(out, cap,
			   XML_DECL "<body>\n<Preview version=\"1.1\">\n<channelId>%u</channelId>\n"
				    "<handle>%u</handle>\n</Preview>\n</body>\n",
			   channel, handle);
	return doc(out, cap,
		   XML_DECL "<body>\n<Preview version=\"1.1\">\n<channelId>%u</channelId>\n<handle>%u</handle>\n"
			    "<streamType>%s</streamType>\n</Preview>\n</body>\n",
		   channel, handle, stream_name);
}

int bc_doc_ext_binary(char *out, size_t cap, uint32_t encrypt_len)
{
	if (!encrypt_len)
		return doc(out, cap,
			   XML_DECL "<Extension version=\"1.1\">\n<binaryData>1</binaryData>\n</Extension>\n");
	return doc(out, cap,
		   XML_DECL "<Extension version=\"1.1\">\n<binaryData>1</binaryData>\n<encryptLen>%u</encryptLen>\n"
			    "</Extension>\n",
		   encrypt_len);
}

int bc_doc_ext_channel(char *out, size_t cap, unsigned channel)
{
	return doc(out, cap, XML_DECL "<Extension version=\"1.1\">\n<channelId>%u</channelId>\n</Extension>\n",
		   channel);
}

int bc_doc_alarm_event(char *out, size_t cap, unsigned channel, const char *status, const char *ai_type,
		       uint32_t timestamp)
{
	char st[64], ai[128];
	if (bc_xml_escape(status, st, sizeof st) < 0 || bc_xml_escape(ai_type, ai, sizeof ai) < 0)
		return -ENOBUFS;
	return doc(out, cap,
		   XML_DECL "<body>\n<AlarmEventList version=\"1.1\">\n<AlarmEvent version=\"1.1\">\n"
			    "<channelId>%u</channelId>\n<status>%s</status>\n<AItype>%s</AItype>\n"
			    "<recording>0</recording>\n<timeStamp>%u</timeStamp>\n</AlarmEvent>\n"
			    "</AlarmEventList>\n</body>\n",
		   channel, st, ai, timestamp);
}

int bc_doc_link_type(char *out, size_t cap)
{
	return doc(out, cap, XML_DECL "<body>\n<LinkType version=\"1.1\">\n<type>LAN</type>\n</LinkType>\n</body>\n");
}

int bc_doc_snap_request(char *out, size_t cap, unsigned channel)
{
	return doc(out, cap,
		   XML_DECL
		   "<body>\n<Snap version=\"1.1\">\n<channelId>%u</channelId>\n<logicChannel>%u</logicChannel>\n"
		   "<time>0</time>\n<fullFrame>0</fullFrame>\n<streamType>main</streamType>\n</Snap>\n</body>\n",
		   channel, channel);
}

int bc_doc_snap_reply(char *out, size_t cap, unsigned channel, const char *file_name, uint64_t size)
{
	char fn[128];
	if (bc_xml_escape(file_name, fn, sizeof fn) < 0)
		return -ENOBUFS;
	return doc(out, cap,
		   XML_DECL "<body>\n<Snap version=\"1.1\">\n<channelId>%u</channelId>\n<fileName>%s</fileName>\n"
			    "<pictureSize>%llu</pictureSize>\n</Snap>\n</body>\n",
		   channel, fn, (unsigned long long)size);
}
