/* libFuzzer harness for the Baichuan message layer: the input is a byte stream from a
 * camera, fed to the reader in two slices (the first byte chooses the cut); every message
 * is decoded with the cipher chosen by the second byte, as the session does. */
#include <stddef.h>
#include <stdint.h>

#include "bc_msg.h"
#include "bc_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_msg(void *arg, const struct bc_header *h, uint8_t *body, const char **ret_reason)
{
	const struct bc_cipher *c = arg;
	struct bc_msg_in in;
	int err = bc_msg_decode(h, body, c, h->msg_id == 3 && h->payload_offset == 0, &in, ret_reason);
	if (err == 0 && !in.binary && in.payload_len) {
		char text[64];
		const char *why;
		bc_xml_text((const char *)in.payload, in.payload_len, "body/Encryption/nonce", 0, text, sizeof text,
			    &why);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	struct bc_cipher c = {.mode = (enum bc_enc)(data[1] % 4)};
	bc_aes_key("FUZZNONCE", "password", c.key);
	size_t cut = data[0] % (size - 1);
	data += 2;
	size -= 2;
	if (cut > size)
		cut = size;
	struct bc_reader r = {0};
	const char *why;
	if (bc_reader_feed(&r, data, cut, on_msg, &c, &why) == 0)
		bc_reader_feed(&r, data + cut, size - cut, on_msg, &c, &why);
	bc_reader_free(&r);
	return 0;
}
