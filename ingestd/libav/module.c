/* keeppeek-ingestd-libav.so's one exported symbol: the table through which ingestd
 * reaches the audio converter (ingestd/libav_module.h). Everything
 * else in the module is hidden; kp_common's calls (the log) resolve to ingestd's own. */
#include "libav_module.h"

__attribute__((visibility("default"))) const struct ing_libav_module ing_libav_module = {
    .abi = ING_LIBAV_MODULE_ABI,
    .audio_push = ing_audio_conv_push,
    .audio_free = ing_audio_conv_free,
};
