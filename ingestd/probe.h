/* ingestd's try of a camera URL before it is saved (probe.c). */
#ifndef KP_ING_PROBE_H
#define KP_ING_PROBE_H

#include "keeppeek.pb.h"
#include "worker.h"

/* Starts the test; its CameraTestResult goes to the supervisor. */
void ing_probe(struct kp_worker *w, const kp_CameraTest *rq);
/* Stops a test still running and closes its handles (the worker is stopping). */
void ing_probe_stop(void);

#endif
