/* The supervisor's state: the process table, the link mesh between workers, the
 * running configuration, and the control socket. Shared by keeppeekd's files, which
 * are layered: proc.c (the privsep engine) knows none of the others; workers.c (the
 * process table with each worker's dispatch) and keeppeekd.c hand it what it calls. */
#ifndef KP_SUPERVISOR_H
#define KP_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "config.h"
#include "ipc.h"
#include "keeppeek.pb.h"
#include "proc_spawn.h"

#define KP_NPROCS 6
#define KP_NLINKS 8

enum proc_state { PROC_STOPPED, PROC_STARTING, PROC_RUNNING, PROC_BACKOFF, PROC_STOPPING };

struct supervisor;
struct proc;

/* A row of the process table (workers.c). */
struct proc_def {
	const char *name; /* "ingestd" */
	kp_Peer peer;
	bool own_user; /* runs as USER-NAME where the package made that user (docs/privsep.md) */
	/* Not started with the rest: proc_start and proc_stop (the transcoder, decision 0014). */
	bool on_demand;
	/* On the path of the first durable commit (webd, recorderd): started first, in
	 * parallel; the other rows start once these run or one of them failed. */
	bool first;
	/* An on_demand row this returns true for is started with the rest (tierd when [tier]
	 * has an endpoint); NULL: only by proc_start. */
	bool (*wanted)(const struct supervisor *s);
	/* Every frame the worker sends, already allowed by the IPC table (common/ipc_frame.c). */
	void (*dispatch)(struct proc *p, struct kp_ipc_frame *f);
};

/* What the engine (proc.c) asks of the layers above it. */
struct proc_hooks {
	void (*spawned)(struct proc *p);        /* its channel is open: send what it needs first */
	void (*exited)(struct proc *p);         /* it exited (ready_ms says whether it had run) */
	void (*ping)(struct proc *p);           /* a health check of a running worker is due */
	int (*ask_stop)(struct proc *p);        /* the supervisor stops: ask it to exit; < 0: SIGTERM it */
	void (*stopping)(struct supervisor *s); /* once, when stopping begins */
	/* Sends sig to processes outside the table (the demo cameras); true while one runs. */
	bool (*others_running)(struct supervisor *s, int sig);
	void (*stopped)(struct supervisor *s); /* every process is gone: close the rest */
};

struct proc {
	struct supervisor *s;
	const struct proc_def *def;
	const char *name; /* def->name */
	kp_Peer peer;
	char path[4096];       /* the worker program */
	struct kp_child child; /* proc_spawn.c */
	pid_t pid;
	enum proc_state state;
	struct kp_ipc *ipc;
	unsigned restarts;
	unsigned quick_failures;
	uint64_t spawned_ms;
	uint64_t ready_ms;
	uint64_t backoff_until_ms;
	uint64_t last_reply_ms;
	uint64_t health_seq;        /* workers.c */
	uint32_t config_generation; /* configure.c */
	bool restart_now;           /* asked for by keeppeekctl restart: no backoff */
	bool stop_wanted;           /* an on-demand process stopped by proc_stop: no restart */
	bool start_again;           /* proc_start while it stopped: started again when it exits */
	bool kill_denied;           /* the last kill(2) failed with EPERM (logged once) */
	uid_t uid;                  /* what it runs as: keeppeek-NAME when that user exists, else the */
	gid_t gid;                  /* configured user (recorderd always: it owns data_dir) */
	char last_exit[64];
	kp_HealthReply health;
	uv_timer_t timer;
};

struct link {
	kp_Peer a, b;
	uint32_t generation;
	unsigned relinks;
	uint64_t made_ms; /* monotonic, when this generation was handed over */
	unsigned quick;   /* losses in a row within KP_LINK_STABLE_MS of the making */
	uint64_t due_ms;  /* a re-link waiting for this time (0: none) */
};

struct control;

/* One camera stream as last reported (cameras.c). */
struct camera_row {
	char camera[KP_CAMERA_NAME_MAX + 1];
	uint32_t stream;
	bool have_state;
	kp_StreamState state;
	kp_StreamReceived received;
	bool have_recording;
	kp_RecordingStatus recording;
};

/* A bounded text buffer for control answers (out.c). */
struct kp_out {
	char *buf;
	size_t len, used;
};

struct supervisor {
	uv_loop_t *loop;
	struct kp_config cfg;
	char config_path[4096]; /* empty in demo mode */
	bool demo;
	char demo_listen[256];
	char demo_data_dir[4096];
	char www_dir[4096];
	bool change_uid;
	bool control_group; /* the workers' group is a dedicated one: it may use the control socket */
	uid_t uid;
	gid_t gid;
	uint32_t generation;
	unsigned reload_waiting;
	unsigned reload_queued; /* peer bits of reloads asked for while one was in progress */
	bool stopping;
	bool rest_waiting; /* rows off the first commit's path not started yet (proc.c) */
	const struct proc_hooks *hooks;
	struct proc procs[KP_NPROCS];
	struct link links[KP_NLINKS];
	uv_timer_t health_timer;
	uv_timer_t stop_timer;
	uv_signal_t sig_term, sig_int, sig_hup;
	struct control *control;
	int exit_code;
	struct camera_row camera_rows[KP_MAX_CAMERAS * 2];
	unsigned ncamera_rows;
	/* Readiness for the service manager (notify.c). */
	uv_timer_t ready_timer;
	uint64_t started_ms;
	bool ready_sent;
	/* recorderd's last CatalogStatus; have_catalog is cleared when it is started. */
	bool have_catalog;
	kp_CatalogStatus catalog;
	/* The transcoder's demand (transcoder.c): rtcd's and recorderd's jobs. */
	uint32_t transcode_jobs, picture_jobs;
	uv_timer_t linger_timer;
	uv_timer_t link_timer; /* links.c: the next delayed re-link */
};

/* proc.c: the privsep engine. Spawns each process of the table (fork+exec, its channel
 * on fd 3), hands every frame from it to its def's dispatch, kills one that stops
 * answering, restarts one that exits alone with exponential backoff, stops them all. */
void proc_table_init(struct supervisor *s, const char *libexec_dir, const struct proc_def defs[KP_NPROCS],
		     const struct proc_hooks *hooks);
void proc_start_all(struct supervisor *s);

/* webd's listening sockets (listen.c): taken from socket activation or bound, before any
 * worker starts; <0 only on a broken activation hand-over. */
int listen_init(struct supervisor *s);
/* The sockets for webd's WorkerConfig and the listen value they stand for; 0 sockets when
 * keeppeekd could not bind them (webd binds itself). */
unsigned listen_for_webd(struct supervisor *s, int *fds, char *spec, size_t spec_len);
void proc_stop_all(struct supervisor *s);
int proc_restart(struct proc *p);
/* An on-demand process: started when stopped (0, or a negative errno), and asked to stop
 * for good (it is not restarted when it exits). */
int proc_start(struct proc *p);
void proc_stop(struct proc *p, const char *why);
/* False for an on-demand process that is stopped or stopping because nobody wants it:
 * readiness and healthz do not wait for it. */
bool proc_expected(const struct proc *p);
struct proc *proc_by_name(struct supervisor *s, const char *name);
struct proc *proc_by_peer(struct supervisor *s, kp_Peer peer);
const char *proc_state_name(enum proc_state st);
/* The worker answered (a health deadline starts again). */
void proc_heard(struct proc *p);
/* The worker says it is ready: true when that makes a starting one running. */
bool proc_ready(struct proc *p);
/* The rows off the first commit's path, unless a first row is still starting; called
 * once the first rows are linked (notify.c) or one of them has failed, so that those
 * spawns (~130 libraries each to load) do not share the cores with the first commit. */
void proc_start_rest(struct supervisor *s);

/* workers.c: the process table, each worker's dispatch, and the engine's hooks that
 * speak to workers (configuration, health request, shutdown). */
extern const struct proc_def workers_table[KP_NPROCS];
void workers_spawned(struct proc *p);
void workers_exited(struct proc *p);
void workers_ping(struct proc *p);
int workers_ask_stop(struct proc *p);

/* configure.c: the configuration barrier. WorkerConfig, a CameraConfig per camera
 * (ingestd, recorderd) and ConfigDone to a worker just started; a reload sends the next
 * generation to every running worker and counts their Ready answers. */
void configure_send(struct proc *p);
/* Ready from a worker: it has applied generation; started when that Ready made it
 * running (the answer to its first configuration, not to a reload). */
void configure_ready(struct proc *p, bool started, uint32_t generation);
/* A worker that exited answers no reload. */
void configure_exited(struct proc *p);
int supervisor_reload(struct supervisor *s, char *msg, size_t len);
/* A reload told only to the workers whose peer bit (1 << kp_Peer) is in peers; the
 * others count as reloaded, for they read nothing that changed. */
int supervisor_reload_some(struct supervisor *s, unsigned peers, char *msg, size_t len);
/* config_apply.c: configuration plans made and applied for keeppeekctl (config-plan,
 * config-apply) and webd (ConfigAsk, config_ask.c). config_plan_args makes the plan of
 * args (edit TARGETS KEY=VALUE..., add NAME KEY=VALUE..., remove NAME) against the file
 * as it is now into config_plan_buf: its length, or -1 with why filled and *usage set
 * when the arguments themselves are malformed. config_apply_plan writes what a plan
 * makes of the file (keeping FILE.bak) and reloads the readers of what changed: 0 with
 * msg saying what was done, or a negative errno (-ESTALE: made on another file,
 * -EINVAL: refused) with msg saying why. */
extern char config_plan_buf[KP_PLAN_MAX_BYTES + 1];
int config_plan_args(struct supervisor *s, pb_size_t argc, const char (*args)[1024], char *why, size_t whylen,
		     bool *usage);
int config_apply_plan(struct supervisor *s, const char *plan, size_t plen, char *msg, size_t msglen);
/* topics.c: an answer to webd's question id as QueryReply pieces; code is the
 * error_code of a status of 400 or more. */
void query_reply(struct proc *p, uint32_t id, uint32_t status, const char *code, const char *ctype, const char *text,
		 size_t len);
/* discover.c: a search for cameras by ingestd, answered to keeppeekctl (ticket) or to
 * webd's question id on webd (JSON); 0 while it runs, or a negative errno with err. */
int discover_start(struct supervisor *s, uint64_t ticket, struct proc *webd, uint32_t id, bool json, char *err,
		   size_t errlen);
void discover_on_found(struct supervisor *s, const kp_DiscoverFound *f);
void discover_close(void);
/* camera_test.c: a camera URL tried by ingestd before it is saved, answered to
 * keeppeekctl (ticket) or webd's question qid (JSON); 0 while it runs, or a negative
 * errno with err (a bad URL: -EINVAL). */
int camera_test_start(struct supervisor *s, const char *url, uint64_t ticket, struct proc *webd, uint32_t qid,
		      bool json, char *err, size_t errlen);
void camera_test_on_result(struct supervisor *s, const kp_CameraTestResult *r);
void camera_test_close(void);
/* config_ask.c: webd's ConfigAsk, answered to p. */
void config_ask_answer(struct supervisor *s, struct proc *p, const kp_ConfigAsk *q, const uint8_t *tail,
		       size_t tail_len);
struct control_extra;
int config_plan_command(struct supervisor *s, const kp_ControlRequest *req, struct kp_out *o);
int config_apply_command(struct supervisor *s, const kp_ControlRequest *req, const struct control_extra *x,
			 struct kp_out *o);

/* transcoder.c: rtcd's TranscoderDemand; the transcoder started while rtcd has jobs and
 * stopped KP_TRANSCODER_LINGER_MS after its last one (or after rtcd exited). */
void transcoder_demand(struct supervisor *s, kp_Peer from, uint32_t jobs);
/* keeppeekctl restart transcoder while it is stopped: started, and stopped after the
 * linger unless rtcd has jobs by then. 0 or a negative errno. */
int transcoder_start(struct supervisor *s);
void transcoder_close(struct supervisor *s);

/* links.c */
void links_init(struct supervisor *s);
void links_close(struct supervisor *s);
void links_on_ready(struct supervisor *s, struct proc *p);
void links_on_lost(struct supervisor *s, struct proc *p, const kp_LinkLost *lost);
const struct link *links_between(const struct supervisor *s, kp_Peer a, kp_Peer b);

/* notify.c: sd_notify(3)'s protocol on $NOTIFY_SOCKET (read, then unset, by
 * notify_init; -EINVAL when it names no usable address) and when to use it. */
int notify_init(void);
bool notify_enabled(void);
int notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t notify_monotonic_usec(void);
/* READY=1 once every worker runs and every link is up (or, degraded, after
 * KP_READY_DEADLINE_MS); STOPPING=1; RELOADING=1 and READY=1 around a reload. */
void service_start(struct supervisor *s);
/* A worker became running (its links handed over) / a first row's health reply came:
 * READY=1 as soon as the first rows are linked. */
void service_worker_ready(struct supervisor *s);
void service_heard(struct supervisor *s);
void service_close(struct supervisor *s);
void service_stopping(struct supervisor *s);
void service_reloading(struct supervisor *s);
void service_reloaded(struct supervisor *s);

/* demo.c */
int demo_config(char *buf, size_t len);
void demo_start(struct supervisor *s);
bool demo_stop(struct supervisor *s, int sig);

/* cameras.c */
void cameras_on_state(struct supervisor *s, const kp_StreamState *st);
void cameras_on_received(struct supervisor *s, const kp_StreamReceived *rec);
void cameras_on_recording(struct supervisor *s, const kp_RecordingStatus *rs);
void cameras_render(const struct supervisor *s, bool json, struct kp_out *o);

/* integrations.c: webd's [mqtt] and [webhook] configuration, and the camera states it
 * publishes (sent after each configuration batch and on every state change). */
void integrations_config(const struct supervisor *s, kp_WorkerConfig *wc);
/* [hub] and its [site "NAME"] sections, each site's CA file read here. */
void integrations_hub_config(const struct supervisor *s, kp_WorkerConfig *wc);

/* [tier] (tier.c, decision 0035): its TierConfig for tierd and recorderd (nothing when
 * no endpoint is set), the endpoint's host resolved here so that tierd connects to that
 * address only. */
void tier_config(const struct supervisor *s, kp_Peer peer, kp_WorkerConfig *wc);
/* A reload keeps the running [tier] (it takes effect when keeppeekd restarts): copies
 * it from cur into next, with a warning when the file changed it. */
void tier_keep(const struct kp_config *cur, struct kp_config *next);
void integrations_send_states(struct supervisor *s);

/* catalog_status.c: recorderd's last CatalogStatus, forgotten when it is started again. */
void catalog_status_on(struct supervisor *s, const kp_CatalogStatus *cs);
void catalog_status_forget(struct supervisor *s);
/* The catalog cannot be used: nothing is recorded. */
bool catalog_unusable(const struct supervisor *s);

/* topics.c: webd's TopicQuery (healthz, cameras, metrics), answered over p's channel. */
void topics_answer(struct supervisor *s, struct proc *p, const kp_TopicQuery *q);

/* out.c */
void kp_out_put(struct kp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kp_out_json_string(struct kp_out *o, const char *s);

/* What came with a control request besides the message. */
struct control_extra {
	int *fds; /* set an entry to -1 to keep it; the rest are closed after the run */
	unsigned nfds;
	uid_t uid; /* the client's credentials (SO_PEERCRED) */
	gid_t gid;
};

/* Runs one request, writes the text answer, returns the exit code, or CONTROL_PENDING
 * when a worker answers later (control_answer with ticket). */
#define CONTROL_PENDING (-1)
typedef int (*control_run_fn)(struct supervisor *s, const kp_ControlRequest *req, const struct control_extra *x,
			      char *out, size_t outlen, uint64_t ticket);

/* control.c: the socket; each request goes to run. */
int control_open(struct supervisor *s, const char *path, control_run_fn run, char *err, size_t errlen);
void control_close(struct supervisor *s);
/* Clients the control socket turned away: all slots taken, or a worker's credentials. */
void control_refused(const struct supervisor *s, uint64_t *ret_busy, uint64_t *ret_worker);
/* The later answer to the request that got CONTROL_PENDING with this ticket; -ENOENT
 * when that client has gone. */
int control_answer(struct supervisor *s, uint64_t ticket, int code, const void *out, size_t len);

/* control_cmds.c: keeppeekctl's commands (a control_run_fn). */
int control_run(struct supervisor *s, const kp_ControlRequest *req, const struct control_extra *x, char *out,
		size_t outlen, uint64_t ticket);
/* relay.c: questions relayed to recorderd. Sends env (its request id set through id)
 * to recorderd, with fd if not -1; the answer to the client is prefix (if any) followed
 * by recorderd's text. CONTROL_PENDING or an exit code with a message in o. */
int control_relay(struct supervisor *s, kp_Envelope *env, uint32_t *id, uint64_t ticket, struct kp_out *o, int fd,
		  const char *prefix);
/* A piece of recorderd's answer to a relayed question. */
void control_relay_reply(struct supervisor *s, const kp_RecorderReply *rr, const uint8_t *tail, size_t len);
/* recorderd is gone: questions waiting for it are answered with a failure. */
void control_relay_lost(struct supervisor *s);
/* backup.c: keeppeekctl backup DIR, with DIR's descriptor. */
int backup_start(struct supervisor *s, const kp_ControlRequest *req, const struct control_extra *x, uint64_t ticket,
		 struct kp_out *o);

#endif
