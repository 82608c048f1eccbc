/* The Baichuan message header (BAICHUAN.md section 1): parsing and serializing the
 * 20-byte (legacy, login nonce) and 24-byte (modern) forms, and the per-connection
 * reader that cuts a byte stream into whole messages. Pure code: no I/O. */
#ifndef KP_BC_HEADER_H
#define KP_BC_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BC_MAGIC         0x0abcdef0u
#define BC_MAGIC_SWAPPED 0x0fedcba0u
#define BC_HEADER_SHORT  20
#define BC_HEADER_LONG   24
/* Largest Extension XML we accept (the payload_offset). */
#define BC_EXTENSION_MAX (64 * 1024)

enum bc_class {
	BC_CLASS_LEGACY = 0x6514,   /* 20 bytes: legacy login and the login upgrade */
	BC_CLASS_NONCE = 0x6614,    /* 20 bytes: the camera's login nonce reply */
	BC_CLASS_MODERN = 0x6414,   /* 24 bytes: client requests */
	BC_CLASS_REPLY = 0x0000,    /* 24 bytes: most camera replies */
	BC_CLASS_DOWNLOAD = 0x6482, /* 24 bytes: file download */
};

/* Message ids used here (BAICHUAN.md section 3). */
enum {
	BC_MSG_LOGIN = 1,
	BC_MSG_LOGOUT = 2,
	BC_MSG_PREVIEW = 3,
	BC_MSG_PREVIEW_STOP = 4,
	BC_MSG_ALARM_START = 31,
	BC_MSG_ALARM_EVENT = 33,
	BC_MSG_LINK_TYPE = 93,
	BC_MSG_SNAP = 109,
};

/* Response codes (the status field) of replies. */
enum {
	BC_STATUS_OK = 200,
	BC_STATUS_OK_LAST = 201,
	BC_STATUS_ACCEPTED = 300,
	BC_STATUS_BAD_REQUEST = 400,
	BC_STATUS_UNAUTHORIZED = 401,
};

struct bc_header {
	uint32_t magic;
	uint32_t msg_id;
	uint32_t body_len; /* extension + payload */
	uint8_t channel;   /* also the BC cipher offset */
	uint8_t stream_type;
	uint16_t msg_num;
	uint16_t status; /* response code, or the encryption word on msg 1 */
	uint16_t cls;
	uint32_t payload_offset; /* extension length; 0 for 20-byte classes */
	size_t header_len;       /* 20 or 24 */
};

/* Header length of a class: 20, 24, or 0 for an unknown class. */
size_t bc_class_header_len(uint16_t cls);

/* Parses the header at the start of buf. Returns 0, -EAGAIN when more bytes are needed,
 * -EBADMSG (unknown magic), -EPROTO (unknown class), -EMSGSIZE (body over
 * KP_BAICHUAN_MAX_BODY), -ERANGE (payload_offset past the body), -E2BIG (extension over
 * BC_EXTENSION_MAX). The body is not looked at. */
int bc_header_parse(const uint8_t *buf, size_t len, struct bc_header *ret, const char **ret_reason);

/* The body length field of a header whose magic has been recognized (for error
 * messages about oversize bodies); buf must hold at least 12 bytes. */
uint32_t bc_header_raw_body_len(const uint8_t *buf);

/* Writes h (its header_len chosen from h->cls) to out; returns the length or -ENOBUFS. */
int bc_header_write(const struct bc_header *h, uint8_t *out, size_t cap);

/* Cuts a byte stream into messages. Buffering is bounded: at most one incomplete
 * message (whose length was validated) plus the last fed slice. */
struct bc_reader {
	uint8_t *buf;
	size_t len, cap;
};

/* Returns 0, or a negative errno (with a reason) that stops the reader. */
typedef int (*bc_reader_cb)(void *arg, const struct bc_header *h, uint8_t *body, const char **ret_reason);

/* Appends data, then calls cb for each complete message (body is writable, for in-place
 * decryption, and valid during the call). Stops at the first error of the header parser
 * or of cb and returns it; 0 when everything was consumed or is waiting for more. */
int bc_reader_feed(struct bc_reader *r, const uint8_t *data, size_t len, bc_reader_cb cb, void *arg,
		   const char **ret_reason);
void bc_reader_free(struct bc_reader *r);

static inline uint32_t bc_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint16_t bc_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static inline void bc_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}
static inline void bc_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

#endif
