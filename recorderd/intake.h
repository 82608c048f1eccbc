/* recorderd's intake of access units and camera events from ingestd, and of its links
 * coming up and going (the transcoder's, for picture.c). */
#ifndef KP_REC_INTAKE_H
#define KP_REC_INTAKE_H

#include "worker.h"

void rec_intake_frame(struct kp_worker *w, kp_Peer from, struct kp_ipc_frame *f);
void rec_intake_report(struct kp_worker *w);
void rec_intake_link(struct kp_worker *w, kp_Peer peer);
void rec_intake_lost(struct kp_worker *w, kp_Peer peer);

#endif
