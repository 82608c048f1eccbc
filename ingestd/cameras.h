/* ingestd's camera table, as main.c drives it from the worker runtime's hooks. */
#ifndef KP_INGEST_CAMERAS_H
#define KP_INGEST_CAMERAS_H

#include "camera.h"
#include "worker.h"

void ing_cameras_init(struct kp_worker *w);
void ing_cameras_item(const kp_CameraConfig *c);
void ing_cameras_apply(uint32_t generation);
void ing_cameras_report(void);
void ing_cameras_stop(void);
/* The driver of a camera URL's scheme, or NULL. */
const struct ing_driver_ops *ing_driver_for(const char *url);

#endif
