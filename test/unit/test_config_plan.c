/* Unit tests for configuration plans and text edits: a plan changes exactly the planned
 * fields and keeps comments, spacing and order; targets by name, glob and label; a stale
 * plan, an invalid result, a written-out password, too many cameras or fields, and a
 * plan that changes nothing are refused; secrets never appear in a plan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config_edit.h"
#include "config_keys.h"
#include "config_plan.h"
#include "test.h"

static char plan[KP_PLAN_MAX_BYTES];
static char why[4096];
static char out_buf[KP_CONFIG_FILE_MAX + 1];

static const char base[] = "; KeepPeek test configuration\n"
			   "[keeppeek]\n"
			   "data_dir = /tmp/kp   ; where it all goes\n"
			   "\n"
			   "[camera \"front\"]\n"
			   "url = rtsp://admin:${KP_PLAN_PW}@192.0.2.1/main\n"
			   "record    = continuous ; keep everything\n"
			   "labels = porch\n"
			   "\n"
			   "# the yard cameras\n"
			   "[camera \"yard-1\"]\n"
			   "url = rtsp://192.0.2.2/main\n"
			   "labels = garden, outdoor\n"
			   "\n"
			   "[camera \"yard-2\"]\n"
			   "url = baichuan://192.0.2.3:9000/\n"
			   "labels = garden\n";

/* plan_make both ways: the base loaded from its text, and already loaded (as keeppeekd
 * keeps it); the answers and plans must be the same. */
static int mk(const char *b, size_t len, const struct plan_request *rq)
{
	static struct kp_config parsed;
	static struct kp_config_errors perrs;
	static char first[KP_PLAN_MAX_BYTES], first_why[4096], copy[256 * 1024];
	int r1 = plan_make(b, len, NULL, rq, plan, why, sizeof why);
	memcpy(first, plan, sizeof first);
	memcpy(first_why, why, sizeof first_why);
	snprintf(copy, sizeof copy, "%.*s", (int)len, b);
	CHECK_EQ(kp_config_load_string("t.conf", copy, &parsed, &perrs), 0);
	int r2 = plan_make(b, len, &parsed, rq, plan, why, sizeof why);
	CHECK_EQ(r1, r2);
	CHECK(r1 < 0 ? !strcmp(first_why, why) : !memcmp(first, plan, (size_t)r1));
	return r2;
}

static struct plan_request edit(const char *targets, const char *f1, const char *f2)
{
	struct plan_request rq = {.kind = PLAN_EDIT};
	snprintf(rq.targets, sizeof rq.targets, "%s", targets);
	const char *fs[2] = {f1, f2};
	for (int i = 0; i < 2; i++)
		if (fs[i])
			CHECK_EQ(plan_field_parse(fs[i], &rq.fields[rq.nfields++], why, sizeof why), 0);
	return rq;
}

static int apply(const char *b, const char *p, size_t plen, unsigned *users)
{
	struct conf_text t = {.p = out_buf, .cap = KP_CONFIG_FILE_MAX};
	return plan_apply(b, strlen(b), p, plen, &t, users, why, sizeof why);
}

static void test_edit_round_trip(void)
{
	struct plan_request rq = edit("yard-*", "record=events", "retention_days=7");
	int n = mk(base, strlen(base), &rq);
	CHECK(n > 0);
	if (n <= 0) {
		fprintf(stderr, "%s\n", why);
		return;
	}
	CHECK_STR_CONTAINS(plan, "cameras yard-1,yard-2\n");
	CHECK_STR_CONTAINS(plan, "# yard-1: record: continuous -> events\n");
	CHECK_STR_CONTAINS(plan, "# yard-2: retention_days: 0 -> 7\n");
	CHECK_STR_CONTAINS(plan, "# 4 changes\n");
	CHECK(!strstr(plan, "front"));
	unsigned users = 0;
	CHECK_EQ(apply(base, plan, (size_t)n, &users), 0);
	CHECK(users & KP_USER_RECORDERD);
	CHECK(!(users & KP_USER_WEBD));
	const char *want = "; KeepPeek test configuration\n"
			   "[keeppeek]\n"
			   "data_dir = /tmp/kp   ; where it all goes\n"
			   "\n"
			   "[camera \"front\"]\n"
			   "url = rtsp://admin:${KP_PLAN_PW}@192.0.2.1/main\n"
			   "record    = continuous ; keep everything\n"
			   "labels = porch\n"
			   "\n"
			   "# the yard cameras\n"
			   "[camera \"yard-1\"]\n"
			   "url = rtsp://192.0.2.2/main\n"
			   "labels = garden, outdoor\n"
			   "record = events\n"
			   "retention_days = 7\n"
			   "\n"
			   "[camera \"yard-2\"]\n"
			   "url = baichuan://192.0.2.3:9000/\n"
			   "labels = garden\n"
			   "record = events\n"
			   "retention_days = 7\n";
	CHECK(!strcmp(out_buf, want));

	/* An existing line keeps its spacing and its inline comment. */
	rq = edit("label:porch", "record=off", NULL);
	n = mk(base, strlen(base), &rq);
	CHECK(n > 0);
	CHECK_EQ(apply(base, plan, (size_t)n, &users), 0);
	CHECK_STR_CONTAINS(out_buf, "record    = off ; keep everything\n");
	/* A secret that is not changed stays out of the plan; the password never shows. */
	CHECK(!strstr(plan, "KP_PLAN_PW") && !strstr(plan, "hunter2"));
}

static void test_refusals(void)
{
	struct plan_request rq = edit("yard-1", "record=sometimes", NULL);
	CHECK_EQ(mk(base, strlen(base), &rq), -EINVAL);
	CHECK_STR_CONTAINS(why, "record must be continuous, events or off");
	rq = edit("nowhere-*", "record=off", NULL);
	CHECK_EQ(mk(base, strlen(base), &rq), -ENOENT);
	CHECK_STR_CONTAINS(why, "no camera matches 'nowhere-*'");
	rq = edit("yard-1", "colour=blue", NULL);
	CHECK_EQ(mk(base, strlen(base), &rq), -EINVAL);
	CHECK_STR_CONTAINS(why, "colour is not a camera key");
	rq = edit("yard-1", "url=rtsp://admin:hunter2@192.0.2.9/", NULL);
	CHECK_EQ(mk(base, strlen(base), &rq), -EINVAL);
	CHECK_STR_CONTAINS(why, "carries a password");
	CHECK(!strstr(why, "hunter2"));
	rq = edit("yard-1", "labels=a ; b", NULL);
	CHECK_EQ(mk(base, strlen(base), &rq), -EINVAL);
	rq = edit("label:garden", "record=continuous", NULL);
	CHECK_EQ(mk(base, strlen(base), &rq), -EALREADY);
	rq = edit("yard-1", "record=off", "record=events");
	CHECK_EQ(mk(base, strlen(base), &rq), -EINVAL);
	CHECK_STR_CONTAINS(why, "record is set twice");
	/* Six fields: one past the ceiling. */
	rq = edit("yard-1", "record=off", "retention_days=3");
	CHECK_EQ(plan_field_parse("snapshot_interval=5", &rq.fields[rq.nfields++], why, sizeof why), 0);
	CHECK_EQ(plan_field_parse("motion_events=no", &rq.fields[rq.nfields++], why, sizeof why), 0);
	CHECK_EQ(plan_field_parse("labels=x", &rq.fields[rq.nfields++], why, sizeof why), 0);
	int n = mk(base, strlen(base), &rq);
	CHECK(n > 0);
	/* A sixth field (only a plan edited by hand can carry one) is refused at apply. */
	char *set = strstr(plan, "set labels=x\n");
	CHECK(set != NULL);
	if (set && (size_t)n + 17 < sizeof plan) {
		memmove(set + 17, set, (size_t)(plan + n - set));
		memcpy(set, "set streams=main\n", 17);
		unsigned users;
		struct conf_text t = {.p = out_buf, .cap = KP_CONFIG_FILE_MAX};
		CHECK_EQ(plan_apply(base, strlen(base), plan, (size_t)n + 17, &t, &users, why, sizeof why), -E2BIG);
		CHECK_STR_CONTAINS(why, "at most 5 fields");
	}
}

static void test_stale_and_malformed(void)
{
	struct plan_request rq = edit("yard-2", "record=off", NULL);
	int n = mk(base, strlen(base), &rq);
	CHECK(n > 0);
	static char changed[sizeof base + 32];
	snprintf(changed, sizeof changed, "%s; edited by hand\n", base);
	unsigned users;
	CHECK_EQ(apply(changed, plan, (size_t)n, &users), -ESTALE);
	CHECK_STR_CONTAINS(why, "changed since this plan was made");
	CHECK_EQ(apply(base, "hello\n", 6, &users), -EINVAL);
	/* A plan edited by hand into an invalid change is refused at apply too. */
	char *rec = strstr(plan, "set record=off");
	CHECK(rec != NULL);
	if (rec)
		memcpy(rec, "set record=xxx", 14);
	CHECK_EQ(apply(base, plan, (size_t)n, &users), -EINVAL);
	CHECK_STR_CONTAINS(why, "record must be");
}

static void test_add_remove(void)
{
	struct plan_request rq = {.kind = PLAN_ADD_CAMERA};
	snprintf(rq.camera, sizeof rq.camera, "shed");
	CHECK_EQ(
	    plan_field_parse("url=bcudp://admin:${KP_PLAN_PW}@/?uid=95270000KEEPPEEK", &rq.fields[0], why, sizeof why),
	    0);
	CHECK_EQ(plan_field_parse("streams=main", &rq.fields[1], why, sizeof why), 0);
	rq.nfields = 2;
	int n = mk(base, strlen(base), &rq);
	CHECK(n > 0);
	CHECK_STR_CONTAINS(plan, "# shed: added\n");
	CHECK_STR_CONTAINS(plan, "# shed: url: set\n");
	CHECK_STR_CONTAINS(plan, "# shed: streams: main\n");
	unsigned users;
	CHECK_EQ(apply(base, plan, (size_t)n, &users), 0);
	CHECK_STR_CONTAINS(out_buf, "labels = garden\n\n[camera \"shed\"]\nurl = bcudp://admin:${KP_PLAN_PW}@/?uid=");
	CHECK_EQ(mk(out_buf, strlen(out_buf), &rq), -EEXIST);
	CHECK_STR_CONTAINS(why, "already exists");

	struct plan_request rm = {.kind = PLAN_REMOVE_CAMERA};
	snprintf(rm.camera, sizeof rm.camera, "yard-1");
	n = mk(base, strlen(base), &rm);
	CHECK(n > 0);
	CHECK_STR_CONTAINS(plan, "# yard-1: removed\n");
	CHECK_EQ(apply(base, plan, (size_t)n, &users), 0);
	CHECK(!strstr(out_buf, "yard-1"));
	CHECK_STR_CONTAINS(out_buf, "labels = porch\n\n# the yard cameras\n\n[camera \"yard-2\"]\n");
}

/* 65 cameras: a glob over all of them is one past the ceiling; 64 with five fields make
 * a plan within KP_PLAN_MAX_BYTES. */
static void test_ceilings(void)
{
	static char big[256 * 1024];
	size_t o = 0;
	for (int i = 0; i < 65; i++)
		o += (size_t)snprintf(big + o, sizeof big - o, "[camera \"cam-%02d\"]\nurl = rtsp://192.0.2.%d/main\n",
				      i, i + 1);
	struct plan_request rq = edit("cam-*", "record=events", NULL);
	CHECK_EQ(mk(big, o, &rq), -E2BIG);
	CHECK_STR_CONTAINS(why, "at most 64");
	rq = edit("cam-0*,cam-1*,cam-2*,cam-3*,cam-4*,cam-5*,cam-60,cam-61,cam-62,cam-63", "record=events",
		  "retention_days=9");
	CHECK_EQ(plan_field_parse("snapshot_interval=30", &rq.fields[rq.nfields++], why, sizeof why), 0);
	CHECK_EQ(plan_field_parse("motion_events=no", &rq.fields[rq.nfields++], why, sizeof why), 0);
	CHECK_EQ(plan_field_parse("labels=garden-north, outdoor", &rq.fields[rq.nfields++], why, sizeof why), 0);
	int n = mk(big, o, &rq);
	CHECK(n > 0 && n <= KP_PLAN_MAX_BYTES);
	CHECK_STR_CONTAINS(plan, "# 320 changes\n");
}

int main(void)
{
	setenv("KP_PLAN_PW", "hunter2", 1);
	RUN(test_edit_round_trip);
	RUN(test_refusals);
	RUN(test_stale_and_malformed);
	RUN(test_add_remove);
	RUN(test_ceilings);
	return TEST_EXIT();
}
