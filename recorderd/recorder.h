/* recorderd's recording core: the catalog and the media directory (opened, recovered at
 * the first configuration), the camera streams to record (from CameraConfig items), the
 * group committer, the hourly retention pass, events into the catalog, and the
 * per-stream RecordingStatus sent to the supervisor before each health reply. */
#ifndef KP_REC_RECORDER_H
#define KP_REC_RECORDER_H

#include "catalog.h"
#include "jbuf.h"
#include "worker.h"

#define REC_CATALOG_MAP_SIZE   (16ull << 30) /* well under recorderd's 64 GiB RLIMIT_AS */
#define REC_RETENTION_EVERY_MS (60 * 1000)

void rec_config_item(struct kp_worker *w, const kp_Envelope *env);
void rec_configured(struct kp_worker *w, uint32_t generation);
void rec_access_unit(const kp_AccessUnit *au, const uint8_t *data, size_t len);
/* One audio frame of a camera's main stream: the second track of its recording. */
void rec_audio_unit(const kp_AudioUnit *au, const uint8_t *data, size_t len);
void rec_camera_event(const kp_CameraEvent *e);
/* record = events: an event of this camera ended (or happened) at event_end_ms. */
void rec_arm_camera(const char *name, int64_t event_end_ms);
void rec_report(struct kp_worker *w);
void rec_stop(struct kp_worker *w);
/* keeppeekctl check --rebuild (docs/decisions/0003-catalog-rebuild.md): recording and
 * the catalog stop (the maintenance state: catalog "rebuilding", streams
 * "catalog-rebuilding"), a new catalog is built from the files on a thread of its own
 * (rebuild.h), then opened as at start and recording resumes; the answer to request id
 * says what was found. */
void rec_rebuild_request(struct kp_worker *w, uint32_t id, int json);
/* Why nothing is recorded (the CatalogStatus error); empty while recording. */
const char *rec_catalog_error(void);
/* Prometheus lines: per-stream state and counters, commit latency, catalog size. */
void rec_metrics(struct jbuf *b, struct cat *cat);

#endif
