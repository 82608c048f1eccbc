/* Loading keeppeek-ingestd-libav.so on first use, and the calls that go through it: the
 * audio converter's two entry points (libav_module.h). A
 * module that cannot be loaded fails the camera that asked (dlerror's reason in the log),
 * and is tried again by the next one. */
#include "libav_module.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kp_time.h"
#include "log.h"
#include "self_path.h"

static struct {
	char dir[4096];
	char path[4096 + sizeof ING_LIBAV_MODULE_FILE];
	const struct ing_libav_module *m;
	char why[256];
} L;

const char *ing_libav_locate(void)
{
	int r = kp_self_dir(L.dir, sizeof L.dir);
	if (r < 0) {
		kp_warn("ingestd: /proc/self/exe: %s; the FFmpeg module (audio conversion) cannot be found",
			strerror(-r));
		L.dir[0] = '\0';
		return NULL;
	}
	snprintf(L.path, sizeof L.path, "%s/%s", L.dir, ING_LIBAV_MODULE_FILE);
	return L.dir;
}

bool ing_libav_loaded(void)
{
	return L.m != NULL;
}

/* The module, or NULL with L.why set. */
static const struct ing_libav_module *module(void)
{
	if (L.m)
		return L.m;
	if (!L.path[0]) {
		snprintf(L.why, sizeof L.why, "the FFmpeg module's directory is unknown");
		return NULL;
	}
	uint64_t t0 = kp_mono_ms();
	void *h = dlopen(L.path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(L.why, sizeof L.why, "loading %s failed: %s", L.path, e ? e : "?");
		kp_err("ingestd: %s", L.why);
		return NULL;
	}
	const struct ing_libav_module *m = dlsym(h, ING_LIBAV_MODULE_SYMBOL);
	if (!m || m->abi != ING_LIBAV_MODULE_ABI) {
		snprintf(L.why, sizeof L.why, "%s: %s", L.path,
			 m ? "built for another ingestd (ABI differs)" : "no " ING_LIBAV_MODULE_SYMBOL);
		kp_err("ingestd: %s", L.why);
		dlclose(h);
		return NULL;
	}
	kp_info("ingestd: loaded %s (audio conversion) in %llu ms", L.path, (unsigned long long)(kp_mono_ms() - t0));
	L.m = m; /* never closed: FFmpeg keeps state of its own */
	return m;
}

int ing_libav_audio_push(struct ing_audio_conv **c, const struct kp_audio_unit *in, ing_audio_out out, void *arg,
			 const char **ret_reason)
{
	const struct ing_libav_module *m = module();
	if (!m) {
		*ret_reason = L.why;
		return -ELIBACC;
	}
	return m->audio_push(c, in, out, arg, ret_reason);
}

void ing_libav_audio_free(struct ing_audio_conv **c)
{
	if (*c) /* a converter exists only once the module is loaded */
		L.m->audio_free(c);
}
