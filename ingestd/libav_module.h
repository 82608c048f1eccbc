/* The part of ingestd that needs FFmpeg (the audio converter through libavcodec: G.711
 * and ADPCM to AAC) lives in a module of its own, keeppeek-ingestd-libav.so, loaded with
 * dlopen(3) the first time a camera's audio must be converted. A server whose cameras
 * send H.264/H.265 with AAC or Opus, or no audio, never maps FFmpeg
 * (docs/decisions/0017-ingestd-libav-module.md; RTSP is ingestd's own since 0030). ingestd's file-system view keeps the
 * module's directory readable after confinement; FFmpeg's libraries are under /usr/lib,
 * which every worker may read. */
#ifndef KP_ING_LIBAV_MODULE_H
#define KP_ING_LIBAV_MODULE_H
#include <stdbool.h>

#include "audio_conv.h"
#include "camera.h"

#define ING_LIBAV_MODULE_FILE "keeppeek-ingestd-libav.so"
#define ING_LIBAV_MODULE_ABI  2

/* What the module exports, under the one name ING_LIBAV_MODULE_SYMBOL. */
struct ing_libav_module {
	unsigned abi; /* ING_LIBAV_MODULE_ABI of the build that made it */
	int (*audio_push)(struct ing_audio_conv **c, const struct kp_audio_unit *in, ing_audio_out out, void *arg,
			  const char **ret_reason);
	void (*audio_free)(struct ing_audio_conv **c);
};
#define ING_LIBAV_MODULE_SYMBOL "ing_libav_module"

/* Where the module is: the directory of ingestd's own executable (read from
 * /proc/self/exe, before confinement). Returns that directory for the sandbox's read
 * list, or NULL when it cannot be known (the module will then not load). */
const char *ing_libav_locate(void);

/* Whether the module has been loaded in this process (for tests and the log). */
bool ing_libav_loaded(void);

/* audio_conv.h's two calls through the module (loaded on the first push). */
int ing_libav_audio_push(struct ing_audio_conv **c, const struct kp_audio_unit *in, ing_audio_out out, void *arg,
			 const char **ret_reason);
void ing_libav_audio_free(struct ing_audio_conv **c);
#endif
