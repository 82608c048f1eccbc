/* The test camera's BCUDP server: answers a UID lookup (C2D_S) with D2C_S_R naming its
 * UID (reolink_aio's udp_protocol.py reads the uid from it) and a C2D_C naming its UID
 * with D2C_C_R; a C2D_C for another or no UID gets no answer, as on the real cameras, to
 * which a C2D_C is broadcast on the segment and only the one with that UID answers
 * (neolink's dissector/udp.md, discovery.rs). Then it carries one byte
 * stream per client through the reliability windows of ingestd/bcudp to an application
 * session (cam_bc_session in the camera, an echo in the transport test), applying the
 * udp_loss_percent and udp_reorder faults to first transmissions of data packets. */
#ifndef KP_CAM_BCUDP_SERVER_H
#define KP_CAM_BCUDP_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "camera.h"

/* Clients served at once; each holds its own windows and channel. */
#define CAM_BCUDP_MAX_CLIENTS 16

struct cam_bcudp_server;
struct cam_bcudp_link; /* one client connection */

struct cam_bcudp_app {
	/* A client connected: returns its session, or NULL to refuse it. */
	void *(*open)(void *arg, struct cam_bcudp_link *link);
	/* In-order bytes from the client. */
	void (*input)(void *session, const uint8_t *data, size_t len);
	void (*free)(void *session);
	void *arg;
};

struct cam_bcudp_server_stats {
	uint64_t clients, fault_dropped, fault_reordered, retransmits, malformed, idle_timeouts;
	uint64_t ack_vector_hangups; /* ACKs listing BCUDP_CAMERA_ACK_LIMIT packets or more */
	uint64_t lookups, wrong_uid; /* C2D_S answered; C2D_C for another UID ignored */
};

/* uid: the camera's UID, 1..BCUDP_UID_MAX letters and digits. */
int cam_bcudp_server_start(uv_loop_t *loop, const char *host, uint16_t port, const char *uid,
			   const struct cam_faults *faults, const struct cam_bcudp_app *app,
			   struct cam_bcudp_server **ret);
/* The bound port (useful when started on port 0). */
uint16_t cam_bcudp_server_port(const struct cam_bcudp_server *s);
const struct cam_bcudp_server_stats *cam_bcudp_server_stats(const struct cam_bcudp_server *s);
/* Frees every session and closes the socket; memory is released asynchronously. */
void cam_bcudp_server_stop(struct cam_bcudp_server *s);

/* Queues bytes to the client: 0, -ENOBUFS past KP_BCUDP_MAX_INFLIGHT packets, -EPIPE
 * once the link is closing. */
int cam_bcudp_link_write(struct cam_bcudp_link *l, const uint8_t *data, size_t len);
/* The session hangs up: queued bytes are still delivered (for up to 2 s), then the
 * client gets D2C_DISC. The session is freed on the next tick, not during this call. */
void cam_bcudp_link_close(struct cam_bcudp_link *l);

#endif
