/* recorderd's intake of access units and camera events from ingestd. */
#ifndef KP_REC_INTAKE_H
#define KP_REC_INTAKE_H

#include "worker.h"

void rec_intake_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f);
void rec_intake_report(struct kp_worker *w);

#endif
