/* The BCUDP discovery messages (BAICHUAN.md section 6) carried as <P2P> XML in
 * Discovery packets: C2D_S/D2C_S_R (UID lookup), C2D_C/D2C_C_R (connect), C2D_HB/D2C_HB
 * (heartbeat) and C2D_DISC/D2C_DISC (disconnect). Built and parsed with a small bounded
 * tag extractor. */
#ifndef KP_BCUDP_DISC_H
#define KP_BCUDP_DISC_H

#include <stddef.h>
#include <stdint.h>

/* A UID is 1..BCUDP_UID_MAX of BCUDP_UID_CHARS (Reolink's are 16, e.g. 95270000YGAKNWKJ). */
#define BCUDP_UID_MAX   64
#define BCUDP_UID_CHARS "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

enum bcudp_disc_type {
	BCUDP_C2D_C = 1, /* uid, port, cid, mtu */
	BCUDP_D2C_C_R,   /* cid, did, timer (def, hb, hbt), rsp */
	BCUDP_C2D_HB,    /* cid, did */
	BCUDP_D2C_HB,    /* cid, did */
	BCUDP_C2D_DISC,  /* cid, did */
	BCUDP_D2C_DISC,  /* cid, did */
	BCUDP_C2D_S,     /* port (<to><port>): "which camera are you?" (reolink_aio) */
	BCUDP_D2C_S_R,   /* uid: the camera's answer to C2D_S */
};

struct bcudp_disc {
	enum bcudp_disc_type type;
	char uid[BCUDP_UID_MAX + 1];
	uint16_t port;
	int32_t cid, did;
	uint32_t mtu;
	uint32_t timer_def, timer_hb, timer_hbt;
	int32_t rsp;
};

/* Parses the XML of a Discovery packet (already checked to be a <P2P> element).
 * Returns 0, -ENOTSUP for a message type we do not handle, or -EBADMSG with a reason
 * when a required field is missing or malformed. */
int bcudp_disc_parse(const char *xml, size_t len, struct bcudp_disc *ret, const char **ret_reason);

/* Writes the XML of d to out (NUL-terminated); returns its length or -ENOBUFS. */
int bcudp_disc_build(const struct bcudp_disc *d, char *out, size_t cap);

/* The inner text of the first <tag>...</tag> in xml[0..len), or -ENOENT. */
int bcudp_xml_tag(const char *xml, size_t len, const char *tag, const char **ret_text, size_t *ret_len);

#endif
