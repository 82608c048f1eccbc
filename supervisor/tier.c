/* [tier] for the workers that take part in tiering (decision 0035): tierd gets the
 * store, its credentials and the address keeppeekd resolved its host to (tierd reads no
 * /etc/hosts or resolv.conf and connects to that address only); recorderd gets `after`
 * (and knows from the message's presence that tiering is on). A change of [tier] takes
 * effect when keeppeekd restarts: a reload keeps the running values. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "supervisor.h"

/* The host of http(s)://HOST[:PORT] ([v6] brackets removed) into out. */
static int endpoint_host(const char *e, char *out, size_t cap)
{
	const char *h = strstr(e, "://");
	if (!h)
		return -1;
	h += 3;
	size_t n;
	if (*h == '[') {
		h++;
		n = strcspn(h, "]");
	} else {
		n = strcspn(h, ":/");
	}
	if (!n || n >= cap)
		return -1;
	memcpy(out, h, n);
	out[n] = '\0';
	return 0;
}

/* The first TCP address of host (an IP literal as it is). A name is looked up here, at
 * tierd's start, on keeppeekd's loop: one lookup per tierd start. */
static void resolve(const char *host, char *out, size_t cap)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
	out[0] = '\0';
	int r = getaddrinfo(host, NULL, &hints, &res);
	if (r != 0) {
		kp_err("[tier] endpoint: resolving %s failed: %s; tierd will fail each upload until it resolves", host,
		       gai_strerror(r));
		return;
	}
	const void *a = res->ai_family == AF_INET ? (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr
						  : (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
	if (!inet_ntop(res->ai_family, a, out, (socklen_t)cap))
		out[0] = '\0';
	freeaddrinfo(res);
}

void tier_config(const struct supervisor *s, kp_Peer peer, kp_WorkerConfig *wc)
{
	const struct kp_config *c = &s->cfg;
	if (!c->tier_endpoint.val[0])
		return;
	kp_TierConfig *t = &wc->tier;
	wc->has_tier = true;
	t->after_secs = c->tier_after_secs;
	t->keep_local_secs = c->tier_keep_local_secs;
	t->cache_mib = c->tier_cache_mib;
	if (peer != kp_Peer_PEER_TIER)
		return; /* recorderd needs no store and no keys */
	snprintf(t->endpoint, sizeof t->endpoint, "%s", c->tier_endpoint.val);
	snprintf(t->region, sizeof t->region, "%s", c->tier_region.val);
	snprintf(t->bucket, sizeof t->bucket, "%s", c->tier_bucket.val);
	snprintf(t->access_key, sizeof t->access_key, "%s", c->tier_access_key.val);
	snprintf(t->secret, sizeof t->secret, "%s", c->tier_secret.val);
	t->part_size_mib = c->tier_part_size_mib;
	t->timeout_secs = c->tier_timeout_secs;
	char host[256];
	if (endpoint_host(c->tier_endpoint.val, host, sizeof host) == 0)
		resolve(host, t->address, sizeof t->address);
}

void tier_keep(const struct kp_config *cur, struct kp_config *next)
{
	const struct kp_conf_str *a[] = {&cur->tier_endpoint, &cur->tier_region, &cur->tier_bucket,
					 &cur->tier_access_key, &cur->tier_secret};
	struct kp_conf_str *b[] = {&next->tier_endpoint, &next->tier_region, &next->tier_bucket, &next->tier_access_key,
				   &next->tier_secret};
	bool changed =
	    cur->tier_after_secs != next->tier_after_secs || cur->tier_part_size_mib != next->tier_part_size_mib ||
	    cur->tier_timeout_secs != next->tier_timeout_secs ||
	    cur->tier_keep_local_secs != next->tier_keep_local_secs || cur->tier_cache_mib != next->tier_cache_mib;
	for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
		changed |= strcmp(a[i]->val, b[i]->val) != 0;
		*b[i] = *a[i];
	}
	next->tier_after_secs = cur->tier_after_secs;
	next->tier_part_size_mib = cur->tier_part_size_mib;
	next->tier_timeout_secs = cur->tier_timeout_secs;
	next->tier_keep_local_secs = cur->tier_keep_local_secs;
	next->tier_cache_mib = cur->tier_cache_mib;
	if (changed)
		kp_warn("reload: [tier] takes effect only after a restart of keeppeekd; keeping the running one");
}
