/* Camera URLs of the Baichuan driver: baichuan://user:pass@host[:port]/?channel=N
 * (TCP, port 9000 by default) and bcudp://user:pass@[host[:port]]/?channel=N&uid=UID
 * (BCUDP: discovery to ports 2015 and 2018 unless a port is given; without a host the
 * camera is found by broadcasting its UID, so uid= is then required). User and
 * password may be percent-encoded. Pure code. */
#ifndef KP_BC_URL_H
#define KP_BC_URL_H

#include <stdbool.h>
#include <stdint.h>

#define BC_TCP_DEFAULT_PORT   9000
#define BC_BCUDP_DEFAULT_PORT 2018

struct bc_url {
	bool udp;
	char user[128];
	char password[128];
	char host[256];
	uint16_t port;
	bool port_given;
	uint8_t channel;
	char uid[64 + 1]; /* BCUDP, letters and digits: empty when not given (looked up from the host) */
};

/* Returns 0 or -EINVAL with a reason that never contains the password. */
int bc_url_parse(const char *url, struct bc_url *ret, const char **ret_reason);

#endif
