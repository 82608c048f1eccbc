/* The test camera's RTP and RTCP over UDP for one RTSP session (RFC 2326 12.39:
 * the client's client_port pair, our server_port pair; RFC 3550 11: RTP and RTCP on
 * separate ports), with the UDP faults: drop a share of RTP packets, swap adjacent
 * ones, or send nothing at all (a firewall or NAT that eats the media). */
#ifndef KP_CAM_RTSP_UDP_H
#define KP_CAM_RTSP_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "camera.h"

struct rtsp_udp;

/* Binds two sockets on local (port 0) and aims them at the client's host and ports.
 * Returns 0 with our ports in server_port, or a negative errno. */
int rtsp_udp_open(uv_loop_t *loop, const struct sockaddr *local, const struct sockaddr *client,
		  const uint16_t client_port[2], const struct cam_faults *faults, struct rtsp_udp **ret,
		  uint16_t server_port[2]);

/* Sends one RTP packet (or drops, delays or swallows it as the faults say). */
void rtsp_udp_send_rtp(struct rtsp_udp *u, const uint8_t *pkt, size_t len);
void rtsp_udp_send_rtcp(struct rtsp_udp *u, const uint8_t *pkt, size_t len);

/* Closes the sockets; the memory goes when libuv has closed them. */
void rtsp_udp_close(struct rtsp_udp *u);

#endif
