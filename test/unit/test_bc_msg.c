/* Whole messages: encode with each cipher, cut by the reader, decode; the login
 * exchange's documents; and the malformed messages of BAICHUAN.md section 7, items 6, 7
 * and 9. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bc_docs.h"
#include "bc_msg.h"
#include "bc_xml.h"
#include "test.h"

struct got {
	struct bc_cipher c;
	bool binary;
	int n, err;
	struct bc_header h;
	char ext[BC_DOC_MAX], payload[BC_DOC_MAX];
	size_t ext_len, payload_len;
	const char *why;
};

static int on_msg(void *arg, const struct bc_header *h, uint8_t *body, const char **ret_reason)
{
	struct got *g = arg;
	struct bc_msg_in in;
	g->n++;
	g->h = *h;
	g->err = bc_msg_decode(h, body, &g->c, g->binary, &in, &g->why);
	if (g->err < 0) {
		*ret_reason = g->why;
		return g->err;
	}
	g->ext_len = in.ext_len;
	if (in.ext)
		memcpy(g->ext, in.ext, in.ext_len);
	g->payload_len = in.payload_len < sizeof g->payload ? in.payload_len : sizeof g->payload;
	memcpy(g->payload, in.payload, g->payload_len);
	return 0;
}

static int roundtrip(const struct bc_msg *m, const struct bc_cipher *send, struct got *g)
{
	uint8_t *buf;
	size_t len;
	const char *why = NULL;
	int err = bc_msg_encode(m, send, &buf, &len);
	if (err < 0)
		return err;
	struct bc_reader r = {0};
	err = bc_reader_feed(&r, buf, len, on_msg, g, &why);
	bc_reader_free(&r);
	free(buf);
	return err;
}

static void test_modes(void)
{
	struct bc_cipher c[4] = {
	    {.mode = BC_ENC_NONE}, {.mode = BC_ENC_BC}, {.mode = BC_ENC_AES}, {.mode = BC_ENC_FULL_AES}};
	CHECK_EQ(bc_aes_key("ABCDEF", "pw", c[2].key), 0);
	CHECK_EQ(bc_aes_key("ABCDEF", "pw", c[3].key), 0);
	char ext[BC_DOC_MAX], body[BC_DOC_MAX];
	CHECK_EQ(bc_doc_ext_channel(ext, sizeof ext, 0), 0);
	CHECK_EQ(bc_doc_preview(body, sizeof body, 0, 256, "subStream"), 0);
	for (int i = 0; i < 4; i++) {
		struct bc_msg m = {.h = {.msg_id = 3, .channel = 7, .msg_num = 5, .cls = BC_CLASS_MODERN},
				   .ext = ext,
				   .ext_len = strlen(ext),
				   .payload = (const uint8_t *)body,
				   .payload_len = strlen(body),
				   .payload_xml = true};
		struct got g = {.c = c[i]};
		CHECK_EQ(roundtrip(&m, &c[i], &g), 0);
		CHECK_EQ(g.n, 1);
		CHECK_EQ(g.h.msg_num, 5);
		CHECK_EQ(g.ext_len, strlen(ext));
		CHECK(memcmp(g.ext, ext, g.ext_len) == 0);
		CHECK_EQ(g.payload_len, strlen(body));
		CHECK(memcmp(g.payload, body, g.payload_len) == 0);
	}
}

static void test_fallback_to_bc(void)
{
	/* Login replies are BC-encrypted while the session already expects AES. */
	struct bc_cipher bc = {.mode = BC_ENC_BC}, aes = {.mode = BC_ENC_AES};
	char body[BC_DOC_MAX], nonce[32];
	const char *why = NULL;
	CHECK_EQ(bc_doc_nonce(body, sizeof body, "0A1B2C"), 0);
	struct bc_msg m = {.h = {.msg_id = 1, .status = 0xdd12, .cls = BC_CLASS_NONCE},
			   .payload = (const uint8_t *)body,
			   .payload_len = strlen(body),
			   .payload_xml = true};
	struct got g = {.c = aes};
	CHECK_EQ(roundtrip(&m, &bc, &g), 0);
	CHECK_EQ(g.h.header_len, 20);
	CHECK_EQ(bc_xml_text(g.payload, g.payload_len, "body/Encryption/nonce", 0, nonce, sizeof nonce, &why), 0);
	CHECK(strcmp(nonce, "0A1B2C") == 0);
}

static void test_binary_partial(void)
{
	struct bc_cipher c = {.mode = BC_ENC_FULL_AES};
	CHECK_EQ(bc_aes_key("N", "pw", c.key), 0);
	char ext[BC_DOC_MAX];
	uint8_t media[100];
	for (int i = 0; i < 100; i++)
		media[i] = (uint8_t)i;
	CHECK_EQ(bc_doc_ext_binary(ext, sizeof ext, 40), 0);
	struct bc_msg m = {.h = {.msg_id = 3, .msg_num = 9, .status = 200, .cls = BC_CLASS_REPLY},
			   .ext = ext,
			   .ext_len = strlen(ext),
			   .payload = media,
			   .payload_len = 100,
			   .encrypt_len = 40};
	uint8_t *buf;
	size_t len;
	CHECK_EQ(bc_msg_encode(&m, &c, &buf, &len), 0);
	/* Only the first 40 payload bytes are ciphertext on the wire. */
	CHECK(memcmp(buf + 24 + strlen(ext), media, 40) != 0);
	CHECK(memcmp(buf + 24 + strlen(ext) + 40, media + 40, 60) == 0);
	free(buf);
	struct got g = {.c = c};
	CHECK_EQ(roundtrip(&m, &c, &g), 0);
	CHECK_EQ(g.payload_len, 100);
	CHECK(memcmp(g.payload, media, 100) == 0);
	/* Binary mode without an extension: the payload is left alone. */
	struct bc_msg m2 = {.h = {.msg_id = 3, .msg_num = 9, .status = 200, .cls = BC_CLASS_REPLY},
			    .payload = media,
			    .payload_len = 100};
	struct got g2 = {.c = c, .binary = true};
	CHECK_EQ(roundtrip(&m2, &c, &g2), 0);
	CHECK(memcmp(g2.payload, media, 100) == 0);
	/* encrypt_len past the payload cannot be encoded. */
	m.encrypt_len = 101;
	CHECK_EQ(bc_msg_encode(&m, &c, &buf, &len), -EINVAL);
}

static void test_bad_encrypt_len(void)
{
	struct bc_cipher c = {.mode = BC_ENC_FULL_AES};
	CHECK_EQ(bc_aes_key("N", "pw", c.key), 0);
	uint8_t media[16] = {0};
	const char *exts[] = {
	    "<?xml version=\"1.0\"?><Extension><binaryData>1</binaryData><encryptLen>17</encryptLen></Extension>",
	    "<?xml version=\"1.0\"?><Extension><binaryData>1</binaryData><encryptLen>-1</encryptLen></Extension>",
	    "<?xml version=\"1.0\"?><Extension><binaryData>1</binaryData><encryptLen>x</encryptLen></Extension>",
	};
	for (int i = 0; i < 3; i++) {
		struct bc_msg m = {.h = {.msg_id = 3, .cls = BC_CLASS_REPLY},
				   .ext = exts[i],
				   .ext_len = strlen(exts[i]),
				   .payload = media,
				   .payload_len = 16};
		struct got g = {.c = c};
		CHECK_EQ(roundtrip(&m, &c, &g), -ERANGE);
		CHECK_EQ(g.err, -ERANGE);
		CHECK_STR_CONTAINS(g.why, "encryptLen");
	}
}

static void test_not_xml(void)
{
	struct bc_cipher c = {.mode = BC_ENC_BC};
	const char *junk = "<body>no declaration</body>";
	struct bc_msg m = {.h = {.msg_id = 93, .cls = BC_CLASS_REPLY},
			   .payload = (const uint8_t *)junk,
			   .payload_len = strlen(junk),
			   .payload_xml = true};
	struct got g = {.c = c};
	CHECK_EQ(roundtrip(&m, &c, &g), -EBADMSG);
	CHECK_STR_CONTAINS(g.why, "<?xml");
	const char *ext = "<?xml version=\"1.0\"?><Extension><binaryData>1</binaryData>";
	struct bc_msg m2 = {.h = {.msg_id = 3, .cls = BC_CLASS_REPLY}, .ext = ext, .ext_len = strlen(ext)};
	struct got g2 = {.c = c};
	CHECK_EQ(roundtrip(&m2, &c, &g2), -EBADMSG);
	/* An extension on a 20-byte class cannot be encoded. */
	m2.h.cls = BC_CLASS_LEGACY;
	uint8_t *buf;
	size_t len;
	CHECK_EQ(bc_msg_encode(&m2, &c, &buf, &len), -EINVAL);
}

static void test_legacy_login(void)
{
	uint8_t body[BC_LEGACY_LOGIN_LEN];
	char u[32], p[32];
	const char *why = NULL;
	CHECK_EQ(bc_legacy_login_build("admin", "pw", body), 0);
	CHECK_EQ(bc_legacy_login_parse(body, sizeof body, u, p, &why), 0);
	CHECK(strcmp(u, "21232F297A57A5A743894A0E4A801FC") == 0);
	CHECK_EQ(bc_legacy_login_parse(body, sizeof body - 1, u, p, &why), -EBADMSG);
	body[31] = 'A'; /* field not NUL-terminated at 32 bytes */
	CHECK_EQ(bc_legacy_login_parse(body, sizeof body, u, p, &why), -EBADMSG);
	CHECK_STR_CONTAINS(why, "32-byte");
	CHECK_EQ(bc_legacy_login_build("admin", "pw", body), 0);
	body[40] = 'z';
	CHECK_EQ(bc_legacy_login_parse(body, sizeof body, u, p, &why), -EBADMSG);
	/* An empty password: 32 zero bytes (neolink's EMPTY_LEGACY_PASSWORD), not MD5(""). */
	CHECK_EQ(bc_legacy_login_build("admin", "", body), 0);
	for (int i = 32; i < 64; i++)
		CHECK_EQ(body[i], 0);
	CHECK_EQ(bc_legacy_login_parse(body, sizeof body, u, p, &why), 0);
	CHECK(strcmp(p, "") == 0);
}

int main(void)
{
	RUN(test_modes);
	RUN(test_fallback_to_bc);
	RUN(test_binary_partial);
	RUN(test_bad_encrypt_len);
	RUN(test_not_xml);
	RUN(test_legacy_login);
	return TEST_EXIT();
}
