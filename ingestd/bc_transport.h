/* A byte-stream transport under a Baichuan session: TCP (bc_tcp.c) or BCUDP
 * (bcudp_transport.c). The session writes whole serialized messages and receives the
 * camera's bytes in arbitrary slices; it parses them with bc_header/bc_media. */
#ifndef KP_BC_TRANSPORT_H
#define KP_BC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct bc_transport;

struct bc_transport_cbs {
	void (*on_connected)(void *arg);
	void (*on_data)(void *arg, const uint8_t *data, size_t len);
	/* Called once; the transport is dead afterwards and must still be closed. */
	void (*on_error)(void *arg, int err, const char *reason);
};

struct bc_transport_ops {
	/* Queues bytes; returns 0, -ENOBUFS past the transport's send ceiling, -EPIPE. */
	int (*write)(struct bc_transport *t, const uint8_t *data, size_t len);
	/* Closes and frees (asynchronously is fine); no callback after this returns. */
	void (*close)(struct bc_transport *t);
};

struct bc_transport {
	const struct bc_transport_ops *ops;
};

/* host is a name or an address; connect timeout in milliseconds. */
int bc_tcp_connect(uv_loop_t *loop, const char *host, uint16_t port, unsigned timeout_ms,
		   const struct bc_transport_cbs *cbs, void *arg, struct bc_transport **ret);

/* Where a BCUDP camera is: its UID (empty: asked with a C2D_S lookup first, which needs
 * a host) and its address (empty: found by broadcasting C2D_C with the UID on the local
 * segment). Discovery goes to port when port_given, else to 2015 and 2018. The UID is
 * checked by the URL parser (bc_url.c). */
struct bcudp_target {
	const char *host;
	uint16_t port;
	bool port_given;
	const char *uid;
};

int bcudp_connect(uv_loop_t *loop, const struct bcudp_target *target, unsigned timeout_ms,
		  const struct bc_transport_cbs *cbs, void *arg, struct bc_transport **ret);

#endif
