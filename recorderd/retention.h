/* Retention: deletes whole recordings, oldest first, that are older than their camera's
 * retention_days (else the global max_days), and more while the indexed bytes exceed
 * the disk quota. A recording still open, or the newest of its stream, is kept. Each
 * pass removes the rows and coverage in one transaction, then unlinks the files. Runs on
 * the commit thread (commit.c). The periodic pass also removes events older than their
 * camera's retention (catalog rows first, with their tombstones in the event log, then
 * their JPEG files); the quota counts recordings only. */
#ifndef KP_REC_RETENTION_H
#define KP_REC_RETENTION_H

#include <stdint.h>

struct cat;
struct rec_evlog;

struct rec_retention_policy {
	uint32_t max_days;  /* 0: no age limit unless the camera sets one */
	uint64_t max_bytes; /* 0: no quota */
	int64_t now_ms;
	int events; /* also events older than their camera's days (else max_days), with JPEGs */
};

struct rec_retention_result {
	unsigned deleted;
	uint64_t bytes;
	unsigned events_deleted;
	int err; /* catalog error, 0 when none */
	unsigned unlink_failed;
	int unlink_err;
	char unlink_path[160]; /* the first file that could not be removed */
};

int rec_retention_run(struct cat *cat, int data_dirfd, struct rec_evlog *log, const struct rec_retention_policy *p,
		      struct rec_retention_result *ret);

#endif
