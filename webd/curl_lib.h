/* libcurl, loaded on first use: webd links no libcurl (its ~25 shared libraries, TLS,
 * Kerberos, LDAP, SSH, cost every start their loading and relocation), and the first
 * configured webhook dlopens it (webd_curl); /usr/lib and /lib stay readable under
 * webd's Landlock rules and mmap is allowed, so this works confined. */
#ifndef WEBD_CURL_LIB_H
#define WEBD_CURL_LIB_H

#include <curl/curl.h>
#include <stddef.h>

/* The calls webhook.c and the hub (hub_fetch.c) make, one pointer each, named as libcurl's without "curl_". */
struct webd_curl {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *e, CURLoption opt, ...);
	CURLcode (*easy_getinfo)(CURL *e, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *e);
	const char *(*easy_strerror)(CURLcode code);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *m, CURLMoption opt, ...);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *e);
	CURLMcode (*multi_assign)(CURLM *m, curl_socket_t fd, void *p);
	CURLMcode (*multi_socket_action)(CURLM *m, curl_socket_t fd, int ev, int *running);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	const char *(*multi_strerror)(CURLMcode code);
	CURLMcode (*multi_cleanup)(CURLM *m);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	/* A hub's signaling connections to its sites (hub_fetch.c, CONNECT_ONLY). */
	CURLcode (*easy_send)(CURL *e, const void *p, size_t n, size_t *sent);
	CURLcode (*easy_recv)(CURL *e, void *p, size_t n, size_t *got);
};

/* The library's calls, loaded at the first call; NULL with why filled when it cannot be
 * loaded (each later call returns the same NULL without trying again). */
const struct webd_curl *webd_curl(char *why, size_t len);

#endif
