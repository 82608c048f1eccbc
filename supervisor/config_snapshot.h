/* One page of the configuration as JSON (config_snapshot.c). */
#ifndef KP_CONFIG_SNAPSHOT_H
#define KP_CONFIG_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "json.h"

/* {"file", "sections": {...}, "total_cameras", "offset", "cameras": [{"name", "values"}],
 * "next_offset"} for the cameras from offset while the page stays within
 * KP_PLAN_MAX_BYTES (64 KiB); file says whether keeppeekd runs with a configuration
 * file (not --demo). */
void config_snapshot_page(const struct kp_config *cfg, bool file, uint32_t offset, struct json_w *w);

#endif
