/* The XML documents of a Baichuan session, both sides (BAICHUAN.md sections 2 and 4):
 * each writer fills a caller's buffer and returns 0 or -ENOBUFS. */
#ifndef KP_BC_DOCS_H
#define KP_BC_DOCS_H

#include <stddef.h>
#include <stdint.h>

#define BC_DOC_MAX 2048 /* every document here fits */

/* Camera → client, msg 1 (class 0x6614): the login nonce. */
int bc_doc_nonce(char *out, size_t cap, const char *nonce);
/* Client → camera, msg 1: hashed credentials. */
int bc_doc_login_user(char *out, size_t cap, const char *user_hash, const char *password_hash);
/* Camera → client, msg 1 reply: device description. */
int bc_doc_device_info(char *out, size_t cap, uint32_t width, uint32_t height);
/* Client → camera, msg 3 (stream_name "mainStream"/"subStream") or msg 4 (NULL). */
int bc_doc_preview(char *out, size_t cap, unsigned channel, uint32_t handle, const char *stream_name);
/* Extension: binaryData=1, and encryptLen when nonzero. */
int bc_doc_ext_binary(char *out, size_t cap, uint32_t encrypt_len);
/* Extension: channelId. */
int bc_doc_ext_channel(char *out, size_t cap, unsigned channel);
/* Camera → client, msg 33: one AlarmEvent. */
int bc_doc_alarm_event(char *out, size_t cap, unsigned channel, const char *status, const char *ai_type,
		       uint32_t timestamp);
/* Camera → client, msg 93 reply. */
int bc_doc_link_type(char *out, size_t cap);
/* Client → camera, msg 109; camera → client reply. */
int bc_doc_snap_request(char *out, size_t cap, unsigned channel);
int bc_doc_snap_reply(char *out, size_t cap, unsigned channel, const char *file_name, uint64_t size);

#endif
