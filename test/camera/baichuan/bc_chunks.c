/* The test camera's binary replies cut in chunks (bc_chunks.h): every chunk reuses the
 * request's msg_num, the last one may carry 201 (BAICHUAN.md section 1), and with full
 * AES each has an Extension naming its leading bytes encrypted (section 2, encryptLen).
 * The live session writes each message as it is made, replay mode (bc_replay.c) keeps
 * them: one encoder, so both send the same bytes. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "bc_chunks.h"
#include "bc_docs.h"
#include "bc_msg.h"

int cam_bc_chunks_encode(const struct bc_cipher *c, const struct cam_bc_chunks *h, const uint8_t *data, size_t len,
			 cam_bc_chunk_out out, void *arg)
{
	char ext[BC_DOC_MAX];
	for (size_t off = 0; off < len || (off == 0 && len == 0);) {
		size_t n = len - off > CAM_BC_CHUNK ? CAM_BC_CHUNK : len - off;
		bool full = c->mode == BC_ENC_FULL_AES;
		uint32_t enc = full ? (uint32_t)(n < CAM_BC_ENCRYPT_LEN ? n : CAM_BC_ENCRYPT_LEN) : 0;
		if (full && bc_doc_ext_binary(ext, sizeof ext, enc) < 0)
			return -ENOBUFS;
		struct bc_msg m = {
		    .h = {.msg_id = h->msg_id,
			  .channel = h->channel,
			  .stream_type = h->stream_type,
			  .msg_num = h->msg_num,
			  .status = off + n >= len ? h->last_status : BC_STATUS_OK,
			  .cls = BC_CLASS_REPLY},
		    .ext = full ? ext : NULL,
		    .ext_len = full ? strlen(ext) : 0,
		    .payload = data + off,
		    .payload_len = n,
		    .encrypt_len = enc,
		};
		uint8_t *buf;
		size_t blen;
		int err = bc_msg_encode(&m, c, &buf, &blen);
		if (err < 0)
			return err;
		if ((err = out(arg, buf, blen, bc_class_header_len(BC_CLASS_REPLY) + m.ext_len, enc)) < 0)
			return err;
		off += n;
		if (!n)
			break;
	}
	return 0;
}
