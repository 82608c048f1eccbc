/* A byte-stream transport under a Baichuan session: TCP (bc_tcp.c) or BCUDP
 * (bcudp_transport.c). The session writes whole serialized messages and receives the
 * camera's bytes in arbitrary slices; it parses them with bc_header/bc_media. */
#ifndef KP_BC_TRANSPORT_H
#define KP_BC_TRANSPORT_H

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
int bcudp_connect(uv_loop_t *loop, const char *host, uint16_t port, unsigned timeout_ms,
		  const struct bc_transport_cbs *cbs, void *arg, struct bc_transport **ret);

#endif
