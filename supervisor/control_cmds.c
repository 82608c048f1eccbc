/* What keeppeekctl can ask the supervisor: status (table or JSON), restart WORKER,
 * reload, config show (redacted) and version. Each writes its answer as text and
 * returns keeppeekctl's exit code (0 ok, 1 failure, 2 usage). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kp_build_config.h"
#include "supervisor.h"

static uint64_t rss_bytes(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	unsigned long size = 0, resident = 0;
	int n = fscanf(f, "%lu %lu", &size, &resident);
	fclose(f);
	return n == 2 ? (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static bool link_up(const struct proc *p, kp_Peer peer)
{
	for (pb_size_t i = 0; i < p->health.links_count; i++)
		if (p->health.links[i].peer == peer)
			return p->health.links[i].up;
	return false;
}

static void status(struct supervisor *s, bool json, struct kp_out *o)
{
	uint64_t now = kp_now_ms();
	if (json)
		kp_out_put(o, "{\"workers\":[");
	else
		kp_out_put(o, "%-10s %8s %-9s %8s %10s %10s  %s\n", "WORKER", "PID", "STATE", "RESTARTS", "RSS",
			   "UPTIME", "LAST-EXIT");
	for (unsigned i = 0; i < KP_NPROCS; i++) {
		const struct proc *p = &s->procs[i];
		uint64_t rss = p->pid > 0 ? rss_bytes(p->pid) : 0;
		uint64_t up = p->state == PROC_RUNNING ? now - p->ready_ms : 0;
		uint64_t backoff =
		    p->state == PROC_BACKOFF && p->backoff_until_ms > now ? p->backoff_until_ms - now : 0;
		if (!json) {
			char rss_s[32], up_s[32];
			snprintf(rss_s, sizeof rss_s, "%.1fM", (double)rss / (1024.0 * 1024.0));
			snprintf(up_s, sizeof up_s, "%llus", (unsigned long long)(up / 1000));
			char state[40];
			if (p->state == PROC_BACKOFF)
				snprintf(state, sizeof state, "backoff(%llums)", (unsigned long long)backoff);
			else
				snprintf(state, sizeof state, "%s", proc_state_name(p->state));
			kp_out_put(o, "%-10s %8d %-9s %8u %10s %10s  %s\n", p->name, (int)p->pid, state, p->restarts,
				   rss_s, up_s, p->last_exit[0] ? p->last_exit : "-");
			continue;
		}
		kp_out_put(o,
			   "%s{\"name\":\"%s\",\"pid\":%d,\"state\":\"%s\",\"restarts\":%u,\"rss_bytes\":%llu,"
			   "\"uptime_ms\":%llu,\"backoff_ms\":%llu,\"consecutive_failures\":%u,\"last_exit\":",
			   i ? "," : "", p->name, (int)p->pid, proc_state_name(p->state), p->restarts,
			   (unsigned long long)rss, (unsigned long long)up, (unsigned long long)backoff,
			   p->quick_failures);
		kp_out_json_string(o, p->last_exit);
		kp_out_put(o, ",\"links\":[");
		unsigned n = 0;
		for (unsigned j = 0; j < KP_NLINKS; j++) {
			const struct link *l = &s->links[j];
			if (l->a != p->peer && l->b != p->peer)
				continue;
			kp_Peer other = l->a == p->peer ? l->b : l->a;
			kp_out_put(o, "%s{\"peer\":\"%s\",\"generation\":%u,\"relinks\":%u,\"state\":\"%s\"}",
				   n++ ? "," : "", kp_peer_name(other), (unsigned)l->generation, l->relinks,
				   p->state == PROC_RUNNING && link_up(p, other) ? "up" : "down");
		}
		kp_out_put(o, "]}");
	}
	if (json)
		kp_out_put(o, "]}\n");
}

int control_run(struct supervisor *s, const kp_ControlRequest *req, char *buf, size_t len)
{
	struct kp_out o = {.buf = buf, .len = len};
	buf[0] = '\0';
	if (!strcmp(req->command, "status") && req->args_count == 0) {
		status(s, req->json, &o);
		return 0;
	}
	if (!strcmp(req->command, "cameras") && req->args_count == 0) {
		cameras_render(s, req->json, &o);
		return 0;
	}
	if (!strcmp(req->command, "restart") && req->args_count == 1) {
		struct proc *p = proc_by_name(s, req->args[0]);
		if (!p) {
			kp_out_put(&o, "unknown worker '%s' (ingestd, recorderd, webd, rtcd)\n", req->args[0]);
			return 2;
		}
		int r = proc_restart(p);
		if (r < 0) {
			kp_out_put(&o, "restart %s failed: %s\n", p->name, strerror(-r));
			return 1;
		}
		kp_out_put(&o, "restarting %s\n", p->name);
		return 0;
	}
	if (!strcmp(req->command, "reload") && req->args_count == 0) {
		char msg[4096];
		int r = supervisor_reload(s, msg, sizeof msg);
		kp_out_put(&o, "%s", msg);
		return r < 0 ? 1 : 0;
	}
	if (!strcmp(req->command, "config-show") && req->args_count == 0) {
		int n = kp_config_render(&s->cfg, o.buf, o.len);
		if (n < 0) {
			kp_out_put(&o, "configuration too large to show\n");
			return 1;
		}
		return 0;
	}
	if (!strcmp(req->command, "version") && req->args_count == 0) {
		if (req->json)
			kp_out_put(&o, "{\"version\":\"%s\"}\n", KP_VERSION);
		else
			kp_out_put(&o, "keeppeekd %s\n", KP_VERSION);
		return 0;
	}
	kp_out_put(&o, "unknown command '%s'\n", req->command);
	return 2;
}
