/* Every resource ceiling of SPEC section 12, plus the IPC ceilings of section 2, in one
 * place. Enforcing code includes this header; man pages quote these numbers. */
#ifndef KP_LIMITS_H
#define KP_LIMITS_H

#define KP_KIB 1024u
#define KP_MIB (1024u * 1024u)

/* HTTP listener and requests (webd). */
#define KP_HTTP_MAX_CONNECTIONS       256
#define KP_HTTP_TIMEOUT_SECS          30
#define KP_HTTP_MAX_BUFFERED_REQUESTS 8
#define KP_HTTP_MAX_LINE              (8 * KP_KIB)
#define KP_HTTP_MAX_HEADER_BYTES      (64 * KP_KIB)
#define KP_HTTP_MAX_HEADERS           100
#define KP_HTTP_MAX_HANDLERS          64
#define KP_HTTP_POOL_QUEUE_PER_WORKER 8
#define KP_HTTP_MAX_DELETE_BODY       (16 * KP_KIB)

/* Every worker: processes and threads of the workers' user ID, all workers together
 * (RLIMIT_NPROC counts per user, not per process): ingestd's 2 x KP_MAX_CAMERAS RTSP
 * threads, the transcoder's KP_TRANSCODE_AUDIO_JOBS jobs and every worker's own few, with
 * room to spare; a bound on a runaway, not a budget. And the malloc arenas of a worker
 * (glibc reserves 64 MiB of address space for each, up to 8 per core, one per thread
 * that allocates at once). */
#define KP_WORKER_NPROC      1024
#define KP_WORKER_ARENAS_MAX 2

/* Cameras (ingestd). */
#define KP_BAICHUAN_MAX_BODY (16 * KP_MIB)
/* Packets buffered past the next one to deliver (wider than a camera's send window,
 * so that a loss does not turn the packets behind it into retransmissions), and the
 * longest SACK vector an ACK lists: real cameras hang up when it reaches about 205
 * entries (BAICHUAN.md section 6); packets past it are covered by the cumulative id
 * once the hole before them is filled. */
#define KP_BCUDP_RECV_WINDOW    512
#define KP_BCUDP_ACK_VECTOR_MAX 160
#define KP_BCUDP_MAX_INFLIGHT   4096
#define KP_BCUDP_CHANNEL_ITEMS  64
/* An RTSP stream's thread (one per configured stream: up to 2 x KP_MAX_CAMERAS). The
 * session and its packets are on the heap; the deepest frames are getaddrinfo's and the
 * TLS handshake's. glibc's default would be RLIMIT_STACK, 8 MiB: 256 of those are 2 GiB
 * of ingestd's 1 GiB address space. */
#define KP_RTSP_THREAD_STACK (512 * KP_KIB)

/* WebRTC (rtcd). */
#define KP_RTC_CURSORS_PER_SESSION 16
#define KP_RTC_CURSORS_PER_SERVER  1024
#define KP_RTC_THREAD_STACK        (4 * KP_MIB)
/* The transcoder (decision 0014): concurrent AAC -> Opus jobs (video jobs: [rtc]
 * max_transcodes) and picture jobs (recorderd's, decision 0021: recorderd sends no more
 * at once and keeps the rest waiting), its address-space ceiling, its nice level, and
 * how long rtcd waits for it to start before the jobs waiting for it fail. */
#define KP_TRANSCODE_AUDIO_JOBS       64
#define KP_TRANSCODE_PICTURE_JOBS     2
#define KP_TRANSCODER_AS              (1536ull * KP_MIB)
#define KP_TIERD_AS                   (1024ull * KP_MIB) /* one part buffer of at most 64 MiB, libcurl, OpenSSL */
#define KP_TRANSCODER_NICE            10
#define KP_TRANSCODER_START_MS        10000
#define KP_RTC_SESSIONS_PER_PRINCIPAL 64
#define KP_RTC_SESSIONS_PER_ADDRESS   128
#define KP_CONTROL_MESSAGE_MAX        (64 * KP_KIB)

/* Live event delivery, per subscriber. */
#define KP_LIVE_QUEUE_COMMANDS 64
#define KP_LIVE_QUEUE_BYTES    8454144u

/* External analysis. */
#define KP_ANALYSIS_JPEG_MAX       (16 * KP_MIB)
#define KP_EVENT_REVISION_STEP_MAX (1u << 20) /* a revision is at most this above the stored one */

/* Configuration. */
#define KP_MAX_CAMERAS       128
#define KP_CAMERA_NAME_MAX   64
#define KP_CAMERA_LABELS_MAX 8 /* labels = of one camera */
#define KP_MAX_WEBHOOKS      8 /* [webhook "NAME"] sections */
#define KP_WEBHOOK_NAME_MAX  32
#define KP_MQTT_CA_MAX       16384 /* bytes of [mqtt] ca_file (WorkerConfig.mqtt_tls_ca_pem) */
#define KP_MAX_SITES         8     /* [site "NAME"] sections of a hub (docs/decisions/0033) */
#define KP_SITE_NAME_MAX     32
#define KP_SITE_TOKEN_MAX    127 /* characters of a [site] token (HubSite.token) */
#define KP_SITE_URL_MAX      191 /* characters of a [site] url (HubSite.url) */
/* Bytes of a [site] ca_file (HubSite.ca_pem): one RSA-2048 or EC certificate; the eight
 * sites' keys keep WorkerConfig under nanopb's 64 KiB message size. */
#define KP_SITE_CA_MAX 1536

/* Configuration plans (supervisor/config_plan.c, keeppeekctl config plan). */
#define KP_PLAN_MAX_FIELDS  5           /* fields set by one plan */
#define KP_PLAN_MAX_CAMERAS 64          /* cameras one plan changes */
#define KP_PLAN_MAX_BYTES   (64 * 1024) /* an encoded plan, diff included */

/* IPC (SPEC section 2): frame = 4-byte LE envelope length, envelope, raw tail. */
#define KP_IPC_HEADER_SIZE            4
#define KP_IPC_MAX_FDS                8 /* webd's WorkerConfig: one listening socket per address */
#define KP_WEB_LISTEN_MAX             8 /* [web] listen addresses */
#define KP_IPC_TAIL_MAX_SUPERVISOR    (64 * KP_KIB)
#define KP_IPC_TAIL_MAX_PEER          (16 * KP_MIB + 64 * KP_KIB)
#define KP_IPC_TAIL_MAX_CONTROL       (1 * KP_MIB)
#define KP_IPC_QUEUE_ITEMS_SUPERVISOR 256
#define KP_IPC_QUEUE_BYTES_SUPERVISOR (4 * KP_MIB)
#define KP_IPC_QUEUE_ITEMS_PEER       1024
#define KP_IPC_QUEUE_BYTES_PEER       (32 * KP_MIB)
#define KP_CONTROL_MAX_CLIENTS        16

/* Supervision (SPEC section 1). */
#define KP_BACKOFF_INITIAL_MS 100
#define KP_BACKOFF_MAX_MS     30000
#define KP_BACKOFF_RESET_MS   60000
/* A link lost within KP_LINK_STABLE_MS of being made is re-made after a delay that starts
 * at KP_LINK_RELINK_MIN_MS and doubles up to KP_LINK_RELINK_MAX_MS (links.c). */
#define KP_LINK_STABLE_MS     1000
#define KP_LINK_RELINK_MIN_MS 100
#define KP_LINK_RELINK_MAX_MS 5000
#define KP_HEALTH_INTERVAL_MS 2000
#define KP_HEALTH_DEADLINE_MS 15000
#define KP_STOP_GRACE_MS      4000
/* Readiness (sd_notify): checked this often from the start; READY=1 at the latest after
 * the deadline, degraded, so that recording never waits for a worker that cannot start. */
#define KP_READY_POLL_MS     5
#define KP_READY_DEADLINE_MS 30000
/* The transcoder (decision 0014): stopped this long after rtcd's last job ended. */
#define KP_TRANSCODER_LINGER_MS 10000

#endif
