/* libFuzzer harness for the bounded XML reader: check the document, then look up the
 * paths the session reads, including each AlarmEvent of a list. */
#include <stddef.h>
#include <stdint.h>

#include "bc_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *paths[] = {"body/Encryption/nonce", "Extension/binaryData", "Extension/encryptLen",
				      "body/DeviceInfo/resolution/width", "body/Snap/pictureSize"};
	const char *doc = (const char *)data, *why;
	char text[128];
	unsigned long long v;
	bc_xml_check(doc, size, &why);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		bc_xml_text(doc, size, paths[i], 0, text, sizeof text, &why);
		bc_xml_uint(doc, size, paths[i], &v, &why);
	}
	struct bc_xml_span ev;
	for (unsigned i = 0; i < 8 && bc_xml_find(doc, size, "body/AlarmEventList/AlarmEvent", i, &ev, &why) == 0;
	     i++) {
		bc_xml_text(ev.p, ev.len, "status", 0, text, sizeof text, &why);
		bc_xml_text(ev.p, ev.len, "AItype", 0, text, sizeof text, &why);
	}
	return 0;
}
