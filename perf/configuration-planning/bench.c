/* configuration-planning: the five-field plan over 64 cameras (supervisor/config_plan.c,
 * what `keeppeekctl config plan` asks keeppeekd for), from the base keeppeekd keeps
 * loaded and, second, from the file's text loaded anew, timed against a read-only
 * baseline over the same file, as the seed's: parsing it and building the first typed
 * snapshot page (supervisor/config_snapshot.c, GET /api/v1/config). Prints one JSON
 * object: every sample in ns, the plan's and the page's sizes and the checks that the
 * work was done (the plan applied to the file gives 64 cameras with the five new
 * values). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "config_edit.h"
#include "config_plan.h"
#include "config_snapshot.h"

#define CAMERAS 64

static char base[256 * 1024];
static char plan[KP_PLAN_MAX_BYTES];
static char shown[512 * 1024];
static char out_buf[KP_CONFIG_FILE_MAX + 1];
static struct kp_config cfg;
static struct kp_config_errors errs;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static size_t make_config(void)
{
	size_t o = (size_t)snprintf(base, sizeof base,
				    "; 64 cameras\n[keeppeek]\ndata_dir = /var/lib/keeppeek\n\n[web]\n"
				    "listen = 127.0.0.1:8080\n\n[retention]\nmax_days = 30\n");
	for (int i = 0; i < CAMERAS; i++)
		o +=
		    (size_t)snprintf(base + o, sizeof base - o,
				     "\n# camera %d\n[camera \"cam-%02d\"]\n"
				     "url = rtsp://viewer:${KP_BENCH_PW}@192.0.2.%d:554/h264Preview_01_main\n"
				     "sub_url = rtsp://viewer:${KP_BENCH_PW}@192.0.2.%d:554/h264Preview_01_sub\n"
				     "labels = %s, site-%d\nrecord = continuous   ; the default\nretention_days = 14\n",
				     i, i, i + 1, i + 1, i % 2 ? "street" : "garden", i % 4);
	return o;
}

static int plan_once(size_t len, const struct kp_config *parsed, const struct plan_request *rq, int *plan_len)
{
	static char why[4096];
	*plan_len = plan_make(base, len, parsed, rq, plan, why, sizeof why);
	if (*plan_len < 0) {
		fprintf(stderr, "plan failed: %s\n", why);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 30, warm = 5;
	setenv("KP_BENCH_PW", "bench-secret", 1);
	size_t len = make_config();
	static struct plan_request rq = {.kind = PLAN_EDIT, .targets = "cam-*", .nfields = 5};
	static const char *const fields[5] = {"record=events", "retention_days=7", "snapshot_interval=60",
					      "motion_events=no", "rollover_secs=300"};
	char why[256];
	for (int i = 0; i < 5; i++)
		if (plan_field_parse(fields[i], &rq.fields[i], why, sizeof why) < 0)
			return 1;
	long long *base_ns = calloc((size_t)runs, sizeof *base_ns), *plan_ns = calloc((size_t)runs, sizeof *plan_ns),
		  *text_ns = calloc((size_t)runs, sizeof *text_ns);
	if (!base_ns || !plan_ns || !text_ns)
		return 1;
	/* keeppeekd keeps the file it last planned on loaded (config_apply.c). */
	static struct kp_config parsed;
	static char copy[sizeof base];
	memcpy(copy, base, len + 1);
	if (kp_config_load_string("bench.conf", copy, &parsed, &errs) < 0)
		return 1;
	int plan_len = 0, shown_len = 0;
	for (int i = -warm; i < runs; i++) {
		long long t0 = now_ns();
		if (kp_config_load_string("bench.conf", base, &cfg, &errs) < 0) {
			fprintf(stderr, "baseline: %s", errs.text);
			return 1;
		}
		struct json_w w;
		size_t page_len = 0;
		jw_init(&w, shown, sizeof shown);
		config_snapshot_page(&cfg, true, 0, &w);
		shown_len = jw_finish(&w, &page_len) < 0 ? -1 : (int)page_len;
		long long t1 = now_ns();
		if (shown_len < 0 || plan_once(len, &parsed, &rq, &plan_len) < 0)
			return 1;
		long long t2 = now_ns();
		if (plan_once(len, NULL, &rq, &plan_len) < 0)
			return 1;
		long long t3 = now_ns();
		if (i >= 0) {
			base_ns[i] = t1 - t0;
			plan_ns[i] = t2 - t1;
			text_ns[i] = t3 - t2;
		}
	}
	/* The work was done: the plan names every camera and every change, and applied to
	 * the file it gives the five new values on all 64 cameras. */
	struct conf_text t = {.p = out_buf, .cap = KP_CONFIG_FILE_MAX};
	unsigned users = 0;
	int applied = plan_apply(base, len, plan, (size_t)plan_len, &t, &users, why, sizeof why);
	int changed = 0;
	if (applied == 0 && kp_config_load_string("applied.conf", out_buf, &cfg, &errs) == 0)
		for (unsigned i = 0; i < cfg.ncameras; i++) {
			const struct kp_camera_conf *c = &cfg.cameras[i];
			changed += c->record == KP_RECORD_EVENTS && c->retention_days == 7 &&
				   c->snapshot_interval == 60 && !c->motion_events && c->rollover_secs == 300;
		}
	int page_cameras = 0;
	for (const char *q = shown; (q = strstr(q, "\"values\":")) != NULL; q++)
		page_cameras++;
	printf("{\"secret_in_page\":%s,", strstr(shown, "bench-secret") ? "true" : "false");
	printf("\"cameras\":%d,\"fields\":5,\"config_bytes\":%zu,\"plan_bytes\":%d,\"shown_bytes\":%d,"
	       "\"page_cameras\":%d,\"plan_says_320_changes\":%s,\"secret_in_plan\":%s,\"applied\":%s,\"cameras_"
	       "changed\":%d,",
	       CAMERAS, len, plan_len, shown_len, page_cameras, strstr(plan, "# 320 changes\n") ? "true" : "false",
	       strstr(plan, "bench-secret") || strstr(plan, "KP_BENCH_PW") ? "true" : "false",
	       applied == 0 ? "true" : "false", changed);
	const char *names[3] = {"baseline_ns", "plan_ns", "plan_from_text_ns"};
	long long *v[3] = {base_ns, plan_ns, text_ns};
	for (int k = 0; k < 3; k++) {
		printf("\"%s\":[", names[k]);
		for (int i = 0; i < runs; i++)
			printf("%s%lld", i ? "," : "", v[k][i]);
		printf("]%s", k == 2 ? "}\n" : ",");
	}
	free(base_ns);
	free(plan_ns);
	free(text_ns);
	return 0;
}
