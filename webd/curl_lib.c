/* Loading libcurl on first use (curl_lib.h): dlopen of the soname webd was built
 * against, then each call by name. */
#include "curl_lib.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>

#define WEBD_CURL_SONAME "libcurl.so.4"

static struct {
	bool tried;
	const struct webd_curl *lib;
	char why[256];
	struct webd_curl calls;
} L;

static bool sym(void *h, const char *name, void *slot)
{
	void *p = dlsym(h, name);
	if (!p) {
		snprintf(L.why, sizeof L.why, "%s: no symbol %s", WEBD_CURL_SONAME, name);
		return false;
	}
	*(void **)slot = p;
	return true;
}

static const struct webd_curl *load(void)
{
	void *h = dlopen(WEBD_CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(L.why, sizeof L.why, "%s", e ? e : WEBD_CURL_SONAME ": cannot be loaded");
		return NULL;
	}
	struct webd_curl *c = &L.calls;
	bool ok = sym(h, "curl_global_init", &c->global_init) && sym(h, "curl_easy_init", &c->easy_init) &&
		  sym(h, "curl_easy_setopt", &c->easy_setopt) && sym(h, "curl_easy_getinfo", &c->easy_getinfo) &&
		  sym(h, "curl_easy_cleanup", &c->easy_cleanup) && sym(h, "curl_easy_strerror", &c->easy_strerror) &&
		  sym(h, "curl_multi_init", &c->multi_init) && sym(h, "curl_multi_setopt", &c->multi_setopt) &&
		  sym(h, "curl_multi_add_handle", &c->multi_add_handle) &&
		  sym(h, "curl_multi_remove_handle", &c->multi_remove_handle) &&
		  sym(h, "curl_multi_assign", &c->multi_assign) &&
		  sym(h, "curl_multi_socket_action", &c->multi_socket_action) &&
		  sym(h, "curl_multi_info_read", &c->multi_info_read) &&
		  sym(h, "curl_multi_strerror", &c->multi_strerror) &&
		  sym(h, "curl_multi_cleanup", &c->multi_cleanup) && sym(h, "curl_slist_append", &c->slist_append) &&
		  sym(h, "curl_slist_free_all", &c->slist_free_all) && sym(h, "curl_easy_send", &c->easy_send) &&
		  sym(h, "curl_easy_recv", &c->easy_recv);
	if (!ok) {
		dlclose(h);
		return NULL;
	}
	return c;
}

const struct webd_curl *webd_curl(char *why, size_t len)
{
	if (!L.tried) {
		L.tried = true;
		L.lib = load();
	}
	if (!L.lib && why && len)
		snprintf(why, len, "%s", L.why);
	return L.lib;
}
