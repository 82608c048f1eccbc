/* Whole Baichuan messages: encoding a header, Extension and payload with the session's
 * cipher, and decoding a received body in place (BAICHUAN.md sections 1, 2 and 4). */
#ifndef KP_BC_MSG_H
#define KP_BC_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bc_crypto.h"
#include "bc_header.h"

/* The legacy login body: MD5 hex of the user name, of the password, then zeros. */
#define BC_LEGACY_LOGIN_LEN 1836
#define BC_LEGACY_FIELD_LEN 32

struct bc_msg {
	struct bc_header h; /* msg_id, channel, stream_type, msg_num, status, cls; lengths are filled in */
	const char *ext;    /* Extension XML (24-byte classes only), or NULL */
	size_t ext_len;
	const uint8_t *payload;
	size_t payload_len;
	bool payload_xml;     /* the payload is XML and is encrypted as such */
	uint32_t encrypt_len; /* binary payload, AES modes: encrypt this many leading bytes */
};

/* Encodes m with cipher c into a new buffer (free() it). Returns 0, -EINVAL (an
 * extension on a 20-byte class, encrypt_len past the payload), -EMSGSIZE, -ENOMEM. */
int bc_msg_encode(const struct bc_msg *m, const struct bc_cipher *c, uint8_t **ret_buf, size_t *ret_len);

struct bc_msg_in {
	const char *ext; /* decrypted Extension XML, or NULL */
	size_t ext_len;
	uint8_t *payload; /* decrypted XML, or binary (leading encryptLen bytes decrypted) */
	size_t payload_len;
	bool binary;
};

/* Decodes body (h->body_len bytes, modified in place). binary: the payload is binary
 * whatever the Extension says (msg 3 after the stream started). XML segments must
 * decrypt to a well-formed document starting with "<?xml"; when the session's mode does
 * not give one, BC and then no encryption are tried (cameras mix them around login).
 * Returns 0, -EBADMSG, -ERANGE (encryptLen), -EIO. */
int bc_msg_decode(const struct bc_header *h, uint8_t *body, const struct bc_cipher *c, bool binary,
		  struct bc_msg_in *ret, const char **ret_reason);

/* Legacy login body: builds it, or checks one and returns its two 31-character hashes.
 * An empty password travels as 32 zero bytes and is returned as "". */
int bc_legacy_login_build(const char *user, const char *password, uint8_t out[BC_LEGACY_LOGIN_LEN]);
int bc_legacy_login_parse(const uint8_t *body, size_t len, char ret_user[BC_LEGACY_FIELD_LEN],
			  char ret_password[BC_LEGACY_FIELD_LEN], const char **ret_reason);

#endif
