/* Start-up sweep of data_dir/events/: a JPEG and its event record are written and
 * synced before the catalog transaction that names them, so a crash in between (or a
 * failed transaction whose files could not be removed) leaves files no event row names.
 * Such files, thumbnails of revisions no longer stored and unfinished thumbnail
 * temporaries are removed. Runs before recorderd takes any publication. */
#ifndef KP_REC_EVENT_SWEEP_H
#define KP_REC_EVENT_SWEEP_H

#include "catalog.h"

struct rec_sweep_result {
	unsigned files_checked;
	unsigned files_removed;
};

int rec_events_sweep(struct cat *cat, int data_dirfd, struct rec_sweep_result *ret);

#endif
