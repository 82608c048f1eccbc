/* cam_bcudp_listen: the test camera's BCUDP listener, one cam_bc_session per client
 * carried by the BCUDP server, counted in cam_stats.bcudp. */
#include <errno.h>
#include <stdlib.h>

#include "bcudp_server.h"
#include "camera.h"

struct listener {
	uv_loop_t *loop;
	const struct cam_config *cfg;
};

static int tr_write(void *t, const uint8_t *data, size_t len)
{
	return cam_bcudp_link_write(t, data, len);
}

static void tr_close(void *t)
{
	cam_bcudp_link_close(t);
}

static void *app_open(void *arg, struct cam_bcudp_link *link)
{
	struct listener *ls = arg;
	struct cam_bc_transport tr = {.write = tr_write, .close = tr_close, .t = link, .bcudp = true};
	return cam_bc_session_new(ls->loop, ls->cfg, cam_stats.bcudp, tr);
}

static void app_input(void *session, const uint8_t *data, size_t len)
{
	cam_bc_session_input(session, data, len);
}

static void app_free(void *session)
{
	cam_bc_session_free(session);
}

int cam_bcudp_listen(uv_loop_t *loop, const struct cam_config *cfg, const char *host, uint16_t port)
{
	/* Lives as long as the camera process. */
	struct listener *ls = malloc(sizeof *ls);
	if (!ls)
		return -ENOMEM;
	ls->loop = loop;
	ls->cfg = cfg;
	struct cam_bcudp_app app = {.open = app_open, .input = app_input, .free = app_free, .arg = ls};
	struct cam_bcudp_server *srv;
	int r = cam_bcudp_server_start(loop, host, port, cfg->uid, &cfg->faults, &app, &srv);
	if (r < 0)
		free(ls);
	return r;
}
