/* The STUN server's address and the host candidates' addresses, with libc only
 * (getaddrinfo, getifaddrs), so that rtcd's core maps no libnice (ice_net.h). */
#include "ice_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static void resolve_stun(const char *stun, struct rtc_ice_net *n)
{
	char host[256];
	unsigned port = 3478;
	snprintf(host, sizeof host, "%s", stun);
	char *colon = strrchr(host, ':');
	if (colon && !strchr(colon + 1, ']') && strchr(host, ':') == colon) {
		*colon = '\0';
		port = (unsigned)strtoul(colon + 1, NULL, 10);
	}
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *res = NULL;
	int r = getaddrinfo(host, NULL, &hints, &res);
	if (r != 0 || !res) {
		kp_warn("ice: STUN server %s not resolved (%s); only host candidates", host, gai_strerror(r));
		return;
	}
	if (getnameinfo(res->ai_addr, res->ai_addrlen, n->stun_ip, sizeof n->stun_ip, NULL, 0, NI_NUMERICHOST) != 0)
		n->stun_ip[0] = '\0';
	freeaddrinfo(res);
	n->stun_port = port ? port : 3478;
	if (n->stun_ip[0])
		kp_info("ice: STUN server %s (%s:%u)", stun, n->stun_ip, n->stun_port);
}

/* Interface name prefixes Debian's libnice ignores (its build's default
 * ignored-network-interface-prefix: docker, veth, virbr, vnet; seen in libnice.so.10). */
static const char *const ignored_prefix[] = {"docker", "veth", "virbr", "vnet"};

static bool ignored(const struct ifaddrs *i)
{
	for (size_t k = 0; k < sizeof ignored_prefix / sizeof ignored_prefix[0]; k++)
		if (strncmp(i->ifa_name, ignored_prefix[k], strlen(ignored_prefix[k])) == 0)
			return true;
	return !i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6) ||
	       (i->ifa_flags & (IFF_UP | IFF_RUNNING)) != (IFF_UP | IFF_RUNNING) || (i->ifa_flags & IFF_LOOPBACK);
}

/* 10/8, 172.16/12, 192.168/16, 169.254/16, fc00::/7, fe80::/10 (as libnice's
 * nice_interfaces_is_private_ip). */
static bool private_ip(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		uint32_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
		return a >> 24 == 10 || a >> 20 == 0xAC1 || a >> 16 == 0xC0A8 || a >> 16 == 0xA9FE;
	}
	const uint8_t *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	return (b[0] & 0xFE) == 0xFC || (b[0] == 0xFE && (b[1] & 0xC0) == 0x80);
}

static bool listed(const struct rtc_ice_net *n, const char *ip)
{
	for (unsigned i = 0; i < n->nlocal; i++)
		if (strcmp(n->local_ips[i], ip) == 0)
			return true;
	return false;
}

/* The addresses libnice's nice_interfaces_get_local_ips(FALSE) gives
 * (agent/interfaces.c: interfaces up and running, not loopback, not of an ignored
 * prefix; public addresses before private ones; no duplicates), link-local ones left
 * out as before. */
static void interface_ips(struct rtc_ice_net *n)
{
	struct ifaddrs *ifs = NULL;
	if (getifaddrs(&ifs) < 0) {
		kp_warn("ice: listing the interfaces failed: %s; host candidates on loopback only", strerror(errno));
		return;
	}
	for (int want_private = 0; want_private < 2; want_private++) {
		for (struct ifaddrs *i = ifs; i && n->nlocal < RTC_ICE_MAX_LOCAL; i = i->ifa_next) {
			if (ignored(i) || private_ip(i->ifa_addr) != want_private)
				continue;
			socklen_t len = i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
									  : sizeof(struct sockaddr_in6);
			char ip[64];
			if (getnameinfo(i->ifa_addr, len, ip, sizeof ip, NULL, 0, NI_NUMERICHOST) != 0 ||
			    strncmp(ip, "fe80", 4) == 0 || listed(n, ip))
				continue;
			snprintf(n->local_ips[n->nlocal++], sizeof n->local_ips[0], "%s", ip);
		}
	}
	freeifaddrs(ifs);
}

/* [rtc] addresses when set (validated by the configuration parser), else loopback and
 * every interface address except link-local ones. */
static void list_interfaces(const char *addresses, struct rtc_ice_net *n)
{
	if (addresses && addresses[0]) {
		char copy[512];
		snprintf(copy, sizeof copy, "%s", addresses);
		char *save = NULL;
		for (char *ip = strtok_r(copy, ", ", &save); ip && n->nlocal < RTC_ICE_MAX_LOCAL;
		     ip = strtok_r(NULL, ", ", &save))
			snprintf(n->local_ips[n->nlocal++], sizeof n->local_ips[0], "%s", ip);
	} else {
		snprintf(n->local_ips[n->nlocal++], sizeof n->local_ips[0], "127.0.0.1");
		interface_ips(n);
	}
	char list[RTC_ICE_MAX_LOCAL * 66] = "";
	for (unsigned i = 0; i < n->nlocal; i++) {
		strcat(list, i ? ", " : "");
		strcat(list, n->local_ips[i]);
	}
	kp_info("ice: host candidates on %s, UDP ports %u-%u", list, n->port_min, n->port_max);
}

void rtc_ice_net_prepare(const struct rtc_ice_config *cfg, struct rtc_ice_net *ret)
{
	memset(ret, 0, sizeof *ret);
	ret->port_min = cfg->port_min;
	ret->port_max = cfg->port_max;
	if (cfg->stun && cfg->stun[0])
		resolve_stun(cfg->stun, ret);
	list_interfaces(cfg->addresses, ret);
}
