/* Whether recorderd can record: its last CatalogStatus (docs/ipc.md), logged when the
 * catalog becomes unusable, forgotten when recorderd is started again, and read by
 * keeppeekctl status, /healthz, the metrics and backup. */
#include <string.h>

#include "log.h"
#include "supervisor.h"

void catalog_status_on(struct supervisor *s, const kp_CatalogStatus *cs)
{
	if (strcmp(cs->state, "ok") && (!s->have_catalog || strcmp(cs->state, s->catalog.state)))
		kp_err("recorderd: nothing is recorded: %s", cs->error[0] ? cs->error : cs->state);
	s->catalog = *cs;
	s->have_catalog = true;
}

void catalog_status_forget(struct supervisor *s)
{
	s->have_catalog = false;
}

bool catalog_unusable(const struct supervisor *s)
{
	return s->have_catalog && strcmp(s->catalog.state, "ok") != 0;
}
