/* Encoding and in-place decoding of whole Baichuan messages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bc_msg.h"
#include "bc_xml.h"
#include "kp_limits.h"

int bc_msg_encode(const struct bc_msg *m, const struct bc_cipher *c, uint8_t **ret_buf, size_t *ret_len)
{
	struct bc_header h = m->h;
	size_t hlen = bc_class_header_len(h.cls);
	if (!hlen || (m->ext_len && hlen != BC_HEADER_LONG) || m->encrypt_len > m->payload_len)
		return -EINVAL;
	if (m->ext_len > BC_EXTENSION_MAX || m->payload_len > KP_BAICHUAN_MAX_BODY - m->ext_len)
		return -EMSGSIZE;
	h.body_len = (uint32_t)(m->ext_len + m->payload_len);
	h.payload_offset = (uint32_t)m->ext_len;
	uint8_t *buf = malloc(hlen + h.body_len);
	if (!buf)
		return -ENOMEM;
	bc_header_write(&h, buf, hlen);
	uint8_t *ext = buf + hlen, *pl = ext + m->ext_len;
	if (m->ext_len)
		memcpy(ext, m->ext, m->ext_len);
	if (m->payload_len)
		memcpy(pl, m->payload, m->payload_len);
	int err = bc_cipher_xml(c, true, h.channel, ext, m->ext_len);
	if (!err && m->payload_xml)
		err = bc_cipher_xml(c, true, h.channel, pl, m->payload_len);
	else if (!err && m->encrypt_len && (c->mode == BC_ENC_AES || c->mode == BC_ENC_FULL_AES))
		err = bc_aes(c->key, true, pl, m->encrypt_len);
	if (err < 0) {
		free(buf);
		return err;
	}
	*ret_buf = buf;
	*ret_len = hlen + h.body_len;
	return 0;
}

/* Decrypts one XML segment, trying the session mode, then BC, then none. */
static int decrypt_xml(const struct bc_cipher *c, uint8_t channel, uint8_t *buf, size_t len, const char **ret_reason)
{
	const struct bc_cipher tries[3] = {*c, {.mode = BC_ENC_BC}, {.mode = BC_ENC_NONE}};
	int err;
	for (int i = 0; i < 3; i++) {
		if (i && tries[i].mode == c->mode)
			continue;
		if ((err = bc_cipher_xml(&tries[i], false, channel, buf, len)) < 0)
			return err;
		if (bc_xml_check((const char *)buf, len, ret_reason) == 0)
			return 0;
		/* Every cipher here is undone by applying it the other way. */
		if ((err = bc_cipher_xml(&tries[i], true, channel, buf, len)) < 0)
			return err;
	}
	*ret_reason = "XML does not decrypt to a document starting with <?xml";
	return -EBADMSG;
}

int bc_msg_decode(const struct bc_header *h, uint8_t *body, const struct bc_cipher *c, bool binary,
		  struct bc_msg_in *ret, const char **ret_reason)
{
	struct bc_msg_in in = {0};
	int err;
	if (h->payload_offset) {
		if ((err = decrypt_xml(c, h->channel, body, h->payload_offset, ret_reason)) < 0)
			return err;
		in.ext = (const char *)body;
		in.ext_len = h->payload_offset;
		unsigned long long v;
		if (bc_xml_uint(in.ext, in.ext_len, "Extension/binaryData", &v, ret_reason) == 0 && v == 1)
			binary = true;
	}
	in.payload = body + h->payload_offset;
	in.payload_len = h->body_len - h->payload_offset;
	in.binary = binary;
	if (binary && in.ext) {
		unsigned long long n;
		err = bc_xml_uint(in.ext, in.ext_len, "Extension/encryptLen", &n, ret_reason);
		if (err != -ENOENT) {
			if (err < 0) {
				*ret_reason = "encryptLen is not a non-negative number";
				return -ERANGE;
			}
			if (n > in.payload_len) {
				*ret_reason = "encryptLen exceeds the payload";
				return -ERANGE;
			}
			if ((c->mode == BC_ENC_AES || c->mode == BC_ENC_FULL_AES) &&
			    (err = bc_decrypt_partial(c->key, in.payload, in.payload_len, n, ret_reason)) < 0)
				return err;
		}
	} else if (!binary && in.payload_len) {
		if ((err = decrypt_xml(c, h->channel, in.payload, in.payload_len, ret_reason)) < 0)
			return err;
	}
	*ret = in;
	return 0;
}

int bc_legacy_login_build(const char *user, const char *password, uint8_t out[BC_LEGACY_LOGIN_LEN])
{
	memset(out, 0, BC_LEGACY_LOGIN_LEN);
	int err = bc_md5_hex31(user, "", (char *)out);
	/* An empty password is 32 zero bytes, not the MD5 of "" (neolink bc/model.rs
	 * EMPTY_LEGACY_PASSWORD): cameras without a password expect that. */
	if (!err && password[0])
		err = bc_md5_hex31(password, "", (char *)out + BC_LEGACY_FIELD_LEN);
	return err;
}

static int legacy_field(const uint8_t *f, char ret[BC_LEGACY_FIELD_LEN])
{
	static const uint8_t empty[BC_LEGACY_FIELD_LEN];
	if (!memcmp(f, empty, sizeof empty)) { /* an empty password */
		ret[0] = '\0';
		return 0;
	}
	/* 31 uppercase hex characters and a NUL: exactly 32 bytes. */
	for (int i = 0; i < BC_LEGACY_FIELD_LEN - 1; i++)
		if (!((f[i] >= '0' && f[i] <= '9') || (f[i] >= 'A' && f[i] <= 'F')))
			return -EBADMSG;
	if (f[BC_LEGACY_FIELD_LEN - 1])
		return -EBADMSG;
	memcpy(ret, f, BC_LEGACY_FIELD_LEN);
	return 0;
}

int bc_legacy_login_parse(const uint8_t *body, size_t len, char ret_user[BC_LEGACY_FIELD_LEN],
			  char ret_password[BC_LEGACY_FIELD_LEN], const char **ret_reason)
{
	if (len != BC_LEGACY_LOGIN_LEN) {
		*ret_reason = "legacy login body is not 1836 bytes";
		return -EBADMSG;
	}
	char u[BC_LEGACY_FIELD_LEN], p[BC_LEGACY_FIELD_LEN];
	if (legacy_field(body, u) < 0 || legacy_field(body + BC_LEGACY_FIELD_LEN, p) < 0) {
		*ret_reason = "legacy login fields are not 32-byte MD5 hex strings";
		return -EBADMSG;
	}
	memcpy(ret_user, u, sizeof u);
	memcpy(ret_password, p, sizeof p);
	return 0;
}
