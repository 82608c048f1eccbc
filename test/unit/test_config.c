/* Unit tests for configuration loading: every error carries FILE:LINE, unknown keys and
 * sections are refused, ${ENV} and file: secrets expand but never show, values are
 * validated, and the rendering redacts passwords. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "config_keys.h"
#include "test.h"

static struct kp_config cfg;
static struct kp_config_errors errs;

static int load(const char *text)
{
	return kp_config_load_string("t.conf", text, &cfg, &errs);
}

static void test_defaults_and_example(void)
{
	setenv("FRONT_PASSWORD", "s3cret!", 1);
	const char *text = "[keeppeek]\n"
			   "data_dir   = /var/lib/keeppeek      ; catalog + recordings\n"
			   "run_dir    = /run/keeppeek\n"
			   "user       = keeppeek\n"
			   "\n[web]\nlisten = 127.0.0.1:8080, [::1]:8081\ntls_cert =\ntls_key =\n"
			   "\n[rtc]\nudp_ports  = 50000-50100\nstun_server =\n"
			   "\n[retention]\nmax_disk_gb = 0\nmax_days    = 30\n"
			   "\n[camera \"front-door\"]\n"
			   "url        = baichuan://admin:${FRONT_PASSWORD}@192.0.2.10:9000/?channel=0\n"
			   "streams    = main, sub\nrecord     = continuous\nretention_days = 14\n"
			   "\n[camera \"yard\"]\nurl = rtsp://user:pass@192.0.2.11:554/h264Preview_01_main\n";
	CHECK_EQ(load(text), 0);
	CHECK_EQ(errs.count, 0);
	CHECK_EQ(cfg.ncameras, 2);
	CHECK(!strcmp(cfg.cameras[0].url.val, "baichuan://admin:s3cret!@192.0.2.10:9000/?channel=0"));
	CHECK(cfg.cameras[0].url.secret_ref);
	CHECK_EQ(cfg.cameras[0].retention_days, 14);
	CHECK_EQ(cfg.cameras[1].streams, KP_STREAM_MAIN); /* RTSP without sub_url */
	CHECK_EQ(cfg.udp_port_min, 50000);
	CHECK_EQ(cfg.max_days, 30);
	static char out[64 * 1024];
	CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
	CHECK(!strstr(out, "s3cret!"));
	CHECK(!strstr(out, "user:pass@"));
	CHECK_STR_CONTAINS(out, "${FRONT_PASSWORD}");
	CHECK_STR_CONTAINS(out, "rtsp://user:***@192.0.2.11:554/h264Preview_01_main");
	/* The rendering is itself a valid configuration. */
	setenv("FRONT_PASSWORD", "x", 1);
	static char copy[64 * 1024];
	snprintf(copy, sizeof copy, "%s", out);
	CHECK_EQ(load(copy), 0);
}

static void test_unknown_key_and_section(void)
{
	CHECK_EQ(load("[web]\nlisten = 127.0.0.1:1\n\nx = 1\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:4: unknown key 'x' in [web]");
	CHECK_EQ(load("[keeppeek]\ndata_dir = /x\n[nope]\na = b\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:4: unknown section [nope]");
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/\ncolour = red\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:3: unknown key 'colour' in [camera \"a\"]");
	CHECK_EQ(load("just words\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:1: syntax error");
}

static void test_bad_values(void)
{
	CHECK_EQ(load("[retention]\nmax_days = 0\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:2: max_days in [retention] must be an integer from 1 to 3650");
	CHECK_EQ(load("[retention]\nmax_days = 12abc\n"), -EINVAL);
	CHECK_EQ(load("[rtc]\nudp_ports = 9-3\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "udp_ports");
	CHECK_EQ(load("[web]\nlisten = nowhere\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:2: listen address 'nowhere' is not HOST:PORT");
	CHECK_EQ(load("[web]\ntls_cert = /a.pem\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "tls_cert and tls_key must be set together");
	CHECK_EQ(load("[camera \"a\"]\nurl = http://cam/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:2: camera 'a': url must start with");
	CHECK_EQ(load("[camera \"a\"]\nrecord = always\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "record must be continuous, events or off");
	CHECK_STR_CONTAINS(errs.text, "t.conf:1: camera 'a' has no url");
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/\nstreams = main, third\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "unknown stream 'third'");
	CHECK_EQ(load("[camera \"bad name\"]\nurl = rtsp://h/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "may use only letters");
	CHECK_EQ(load("[camera x]\nurl = rtsp://h/\n"), -EINVAL);
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/\nmotion_events = maybe\n"), -EINVAL);
}

static void test_duplicates(void)
{
	CHECK_EQ(load("[web]\nlisten = 127.0.0.1:1\nlisten = 127.0.0.1:2\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:3: key 'listen' set twice");
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/\n[camera \"a\"]\nurl = rtsp://h/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:3: camera 'a' is defined twice (first at line 1)");
}

static void test_camera_ceiling(void)
{
	static char text[128 * 1024];
	size_t o = 0;
	for (int i = 0; i <= KP_MAX_CAMERAS; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "[camera \"c%d\"]\nurl = rtsp://h%d/\n", i, i);
	CHECK_EQ(load(text), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "more than 128 cameras");
	/* Exactly at the ceiling is fine. */
	o = 0;
	for (int i = 0; i < KP_MAX_CAMERAS; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "[camera \"c%d\"]\nurl = rtsp://h%d/\n", i, i);
	CHECK_EQ(load(text), 0);
	CHECK_EQ(cfg.ncameras, KP_MAX_CAMERAS);
}

static void test_secrets(void)
{
	unsetenv("KP_TEST_UNSET");
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://u:${KP_TEST_UNSET}@h/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:2: environment variable KP_TEST_UNSET is not set");
	char path[] = "/tmp/kp-secret-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "rtsp://u:filepw@h/\nignored\n", 27), 27);
	close(fd);
	char text[256];
	snprintf(text, sizeof text, "[camera \"a\"]\nurl = file:%s\n", path);
	CHECK_EQ(load(text), 0);
	CHECK(!strcmp(cfg.cameras[0].url.val, "rtsp://u:filepw@h/"));
	static char out[64 * 1024];
	CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
	CHECK(!strstr(out, "filepw"));
	CHECK_STR_CONTAINS(out, "file:/tmp/kp-secret-");
	unlink(path);
	CHECK_EQ(load(text), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "cannot read secret file");
}

static void test_redact_url(void)
{
	char out[256];
	kp_redact_url("baichuan://admin:pw@10.0.0.1:9000/?channel=0", out, sizeof out);
	CHECK(!strcmp(out, "baichuan://admin:***@10.0.0.1:9000/?channel=0"));
	kp_redact_url("rtsp://cam/stream@x", out, sizeof out);
	CHECK(!strcmp(out, "rtsp://cam/stream@x"));
	kp_redact_url("rtsp://user@cam/", out, sizeof out);
	CHECK(!strcmp(out, "rtsp://user@cam/"));
	kp_redact_url("rtsp://u:p:q@w@cam/", out, sizeof out);
	CHECK(!strcmp(out, "rtsp://u:***@cam/"));
}

static void test_long_line(void)
{
	char text[512];
	char url[300];
	memset(url, 'a', sizeof url - 1);
	url[sizeof url - 1] = '\0';
	snprintf(text, sizeof text, "[camera \"a\"]\nurl = rtsp://%s/\n", url);
	CHECK_EQ(load(text), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:2: line longer than");
}

static void test_sub_url(void)
{
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://u:p@h/main\nsub_url = rtsp://u:p@h/sub\n"), 0);
	CHECK_EQ(cfg.cameras[0].streams, KP_STREAM_MAIN | KP_STREAM_SUB);
	static char out[64 * 1024];
	CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "sub_url = rtsp://u:***@h/sub");
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/main\n"), 0);
	CHECK_EQ(cfg.cameras[0].streams, KP_STREAM_MAIN);
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/main\nstreams = sub\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "streams = sub needs sub_url");
	CHECK_EQ(load("[camera \"a\"]\nurl = baichuan://h:9000/\nsub_url = rtsp://h/sub\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "sub_url is for rtsp:// cameras only");
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/\nsub_url = http://h/sub\n"), -EINVAL);
}

/* [retention] max_disk_gb takes up to three decimals and is kept in megabytes;
 * [camera] rollover_secs sets a camera's file length. Both survive rendering. */
/* [tier]: after is a number with a unit and is shown in the largest unit that says it
 * exactly; an endpoint needs a bucket and both keys, and is http(s)://HOST[:PORT]. */
static void test_tier(void)
{
	static const struct {
		const char *v;
		unsigned secs;
		const char *shown;
	} ok[] = {{"5s", 5, "5s"},       {"90s", 90, "90s"},      {"120s", 120, "2m"},
		  {"12h", 43200, "12h"}, {"30d", 2592000, "30d"}, {"3650d", 315360000, "3650d"},
		  {"1m", 60, "1m"}};
	static char text[512], out[64 * 1024];
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		snprintf(text, sizeof text, "[tier]\nafter = %s\n", ok[i].v);
		CHECK_EQ(load(text), 0);
		CHECK_EQ(cfg.tier_after_secs, ok[i].secs);
		CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
		snprintf(text, sizeof text, "after = %s\n", ok[i].shown);
		CHECK_STR_CONTAINS(out, text);
	}
	static const char *const bad[] = {"0s", "5", "3651d", "5 s", "s", "-5s", "5w", "99999999999s", "1h2m"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "[tier]\nafter = %s\n", bad[i]);
		CHECK_EQ(load(text), -EINVAL);
		CHECK_STR_CONTAINS(errs.text, "after in [tier] must be a number with a unit");
	}
	CHECK_EQ(load("[tier]\nafter = 30d\n"), 0);
	CHECK_EQ(cfg.tier_endpoint.val[0], '\0');
	/* keep_local may be 0 (the default); cache_size is 16 MiB to 1 TiB, one past each end refused. */
	CHECK_EQ(load("[tier]\nkeep_local = 7d\ncache_size = 16\n"), 0);
	CHECK_EQ(cfg.tier_keep_local_secs, 604800u);
	CHECK_EQ(cfg.tier_cache_mib, 16u);
	CHECK_EQ(load("[tier]\nkeep_local = 3651d\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "keep_local in [tier] must be a number with a unit");
	CHECK_EQ(load("[tier]\ncache_size = 15\n"), -EINVAL);
	CHECK_EQ(load("[tier]\ncache_size = 1048577\n"), -EINVAL);
	CHECK_EQ(load("[tier]\ncache_size = 1048576\n"), 0);
	CHECK_EQ(load("[tier]\nendpoint = http://127.0.0.1:7480\nbucket = kp\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "[tier] endpoint needs bucket, access_key and secret");
	CHECK_EQ(load("[tier]\nendpoint = ftp://h\nbucket = kp\naccess_key = a\nsecret = s\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "[tier] endpoint must be http://HOST[:PORT]");
	CHECK_EQ(load("[tier]\nendpoint = http://h:1/path\nbucket = kpb\naccess_key = a\nsecret = s\n"), -EINVAL);
	CHECK_EQ(load("[tier]\nendpoint = http://h:1\nbucket = kp\naccess_key = a\nsecret = s\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "[tier] bucket must be 3 to 63 of a-z");
	CHECK_EQ(load("[tier]\nendpoint = http://h:1\nbucket = Upper\naccess_key = a\nsecret = s\n"), -EINVAL);
	CHECK_EQ(load("[tier]\nendpoint = https://s3.example:8443\nbucket = kp-1.x\naccess_key = a\nsecret = s\n"
		      "part_size = 5\n"),
		 0);
	CHECK_EQ(cfg.tier_part_size_mib, 5);
	CHECK_EQ(cfg.tier_keep_local_secs, 0u); /* the default: stripped as soon as copied */
	CHECK_EQ(cfg.tier_cache_mib, 1024u);
	CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
	CHECK(strstr(out, "secret = s\n") == NULL); /* a literal secret is never shown */
}

static void test_quota_and_rollover(void)
{
	static const struct {
		const char *v;
		unsigned mb;
	} ok[] = {{"0", 0},
		  {"0.005", 5},
		  {"1", 1000},
		  {"1.5", 1500},
		  {"2.25", 2250},
		  {"0.001", 1},
		  {"1000000", 1000000000u},
		  {"12.", 12000}};
	static char text[256];
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		snprintf(text, sizeof text, "[retention]\nmax_disk_gb = %s\n", ok[i].v);
		CHECK_EQ(load(text), 0);
		CHECK_EQ(cfg.max_disk_mb, ok[i].mb);
	}
	static const char *const bad[] = {"0.0005", "-1", "1e3", ".5", "1.2.3", "1000001", "abc", "1 GB"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "[retention]\nmax_disk_gb = %s\n", bad[i]);
		CHECK_EQ(load(text), -EINVAL);
		CHECK_STR_CONTAINS(errs.text, "t.conf:2: max_disk_gb in [retention] must be a number of gigabytes");
	}
	CHECK_EQ(load("[retention]\nmax_disk_gb = 0.005\n[camera \"c\"]\nurl = rtsp://h/\nrollover_secs = 5\n"), 0);
	CHECK_EQ(cfg.cameras[0].rollover_secs, 5);
	static char out[64 * 1024];
	CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "max_disk_gb = 0.005\n");
	CHECK_STR_CONTAINS(out, "rollover_secs = 5\n");
	static char copy[64 * 1024];
	snprintf(copy, sizeof copy, "%s", out);
	CHECK_EQ(load(copy), 0);
	CHECK_EQ(cfg.max_disk_mb, 5);
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nrollover_secs = 0\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "rollover_secs in [camera] must be an integer from 1 to 86400");
}

/* [camera] transport and rtp_ports (RTSP only): defaults tcp and 40000-40999, the
 * three values, the bounds of the port range, one past each, and what they are refused
 * with. Both survive rendering. */
static void test_rtsp_transport(void)
{
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\n"), 0);
	CHECK_EQ(cfg.cameras[0].transport, KP_RTSP_TCP);
	CHECK_EQ(cfg.cameras[0].rtp_port_min, 40000);
	CHECK_EQ(cfg.cameras[0].rtp_port_max, 40999);
	static const struct {
		const char *v;
		enum kp_rtsp_transport t;
	} ok[] = {{"tcp", KP_RTSP_TCP}, {"udp", KP_RTSP_UDP}, {"auto", KP_RTSP_AUTO}};
	char text[256];
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		snprintf(text, sizeof text, "[camera \"c\"]\nurl = rtsp://h/\ntransport = %s\n", ok[i].v);
		CHECK_EQ(load(text), 0);
		CHECK_EQ(cfg.cameras[0].transport, ok[i].t);
	}
	static const char *const bad[] = {"TCP", "udp-tcp", "http", "", "tcp,udp"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "[camera \"c\"]\nurl = rtsp://h/\ntransport = %s\n", bad[i]);
		CHECK_EQ(load(text), -EINVAL);
		CHECK_STR_CONTAINS(errs.text, "t.conf:3: camera 'c': transport must be tcp, udp or auto");
	}
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nrtp_ports = 1024-1027\n"), 0);
	CHECK_EQ(cfg.cameras[0].rtp_port_min, 1024);
	CHECK_EQ(cfg.cameras[0].rtp_port_max, 1027);
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nrtp_ports = 65532-65535\n"), 0);
	static const char *const bad_ports[] = {"1022-1025", "1024-1024", "1025-1030",    "65534-65536",
						"40000",     "a-b",       "40000-40010x", "40010-40000"};
	for (size_t i = 0; i < sizeof bad_ports / sizeof bad_ports[0]; i++) {
		snprintf(text, sizeof text, "[camera \"c\"]\nurl = rtsp://h/\nrtp_ports = %s\n", bad_ports[i]);
		CHECK_EQ(load(text), -EINVAL);
		CHECK_STR_CONTAINS(errs.text, "t.conf:3: camera 'c': rtp_ports must be FIRST-LAST within 1024-65535");
	}
	CHECK_EQ(load("[camera \"c\"]\nurl = baichuan://h/\ntransport = udp\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "camera 'c': transport and rtp_ports are for rtsp:// cameras only");
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsps://h/\ntransport = auto\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "camera 'c': transport must be tcp for rtsps:// URLs");
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nsub_url = rtsps://h/s\ntransport = udp\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "camera 'c': transport must be tcp for rtsps:// URLs");
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsps://h/\ntransport = tcp\n"), 0);
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\ntransport = auto\nrtp_ports = 50000-50011\n"), 0);
	static char out[64 * 1024];
	CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "transport = auto\nrtp_ports = 50000-50011\n");
	static char copy[64 * 1024];
	snprintf(copy, sizeof copy, "%s", out);
	CHECK_EQ(load(copy), 0);
	CHECK_EQ(cfg.cameras[0].transport, KP_RTSP_AUTO);
	CHECK_EQ(cfg.cameras[0].rtp_port_max, 50011);
}

/* audio: yes by default, no turns it off, the rendering keeps it, anything else is an
 * error. */
static void test_audio(void)
{
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\n"), 0);
	CHECK(cfg.cameras[0].audio);
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\naudio = no\n"), 0);
	CHECK(!cfg.cameras[0].audio);
	static char out[64 * 1024];
	CHECK(kp_config_render(&cfg, out, sizeof out) > 0);
	CHECK_STR_CONTAINS(out, "audio = no\n");
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\naudio = off\n"), 0);
	CHECK(!cfg.cameras[0].audio);
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\naudio = 1\n"), 0);
	CHECK(cfg.cameras[0].audio);
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\naudio = loud\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "audio");
}

static void test_missing_file(void)
{
	CHECK_EQ(kp_config_load_file("/nonexistent/keeppeek.conf", &cfg, &errs), -ENOENT);
	CHECK_STR_CONTAINS(errs.text, "/nonexistent/keeppeek.conf: cannot open");
}

static void test_not_a_file(void)
{
	CHECK_EQ(kp_config_load_file("/tmp", &cfg, &errs), -EISDIR);
	CHECK_STR_CONTAINS(errs.text, "/tmp: is a directory");
	CHECK_EQ(kp_config_load_file("/dev/zero", &cfg, &errs), -EINVAL); /* would never end */
	CHECK_STR_CONTAINS(errs.text, "/dev/zero: is not a regular file");
}

static void test_unclosed_section(void)
{
	CHECK_EQ(load("[keeppeek]\n[web\nlisten = 127.0.0.1:1\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "t.conf:2: section header [web has no closing ']'");
}

static void test_url_authority(void)
{
	static const struct {
		const char *url, *why;
	} bad[] = {
	    {"rtsp://u:p@cam:99999/x", "its port is above 65535"},
	    {"rtsp://cam:0/x", "its port is 0"},
	    {"rtsp://cam:/x", "its port is empty"},
	    {"rtsp://cam:55a/x", "its port is not a number"},
	    {"rtsp://[fe80::1/x", "its IPv6 address has no closing ']'"},
	    {"rtsp://[fe80::zz]/x", "its IPv6 address is not valid"},
	    {"rtsp://[::1]x/x", "something follows its IPv6 address"},
	    {"rtsp://u:p@/x", "it has no host"},
	    {"bcudp://u:p@/?channel=0", "it has no host"}, /* neither a host nor a uid= */
	    {"baichuan://u:p@/?uid=95270000YGAKNWKJ", "it has no host"},
	    {"baichuan://cam]:9000/", "unbalanced"},
	};
	char text[256];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "[camera \"a\"]\nurl = %s\n", bad[i].url);
		CHECK_EQ(load(text), -EINVAL);
		CHECK_STR_CONTAINS(errs.text, bad[i].why);
	}
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://u:p@[::1]:554/main\nsub_url = rtsp://u:p@h:65535/s\n"), 0);
	CHECK_EQ(load("[camera \"a\"]\nurl = baichuan://u:p@ss@192.0.2.1:9000/?channel=0\n"),
		 0); /* '@' in a password */
	/* A battery camera by UID alone. */
	CHECK_EQ(load("[camera \"a\"]\nurl = bcudp://u:p@/?uid=95270000YGAKNWKJ\nstreams = main\n"), 0);
	CHECK_EQ(load("[camera \"a\"]\nurl = rtsp://h/\nsub_url = rtsp://h:70000/s\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "sub_url is not valid: its port is above 65535");
}

/* The key table: every default is a valid value of its key, every integer key takes
 * its bounds and refuses one past each, and what `config show` writes loads back to
 * the same configuration. */
static void test_key_table(void)
{
	char why[512], text[512];
	for (size_t i = 0; i < kp_config_nkeys; i++) {
		const struct kp_key *k = &kp_config_keys[i];
		const char *where = !strcmp(k->section, "camera")    ? "[camera \"c\"]\nurl = rtsp://h/\n"
				    : !strcmp(k->section, "webhook") ? "[webhook \"w\"]\nurl = http://h/\n"
								     : NULL;
		if (k->def) {
			snprintf(text, sizeof text, "%s%s = %s\n", where ? where : "", k->name, k->def);
			if (!where)
				snprintf(text, sizeof text, "[%s]\n%s = %s\n", k->section, k->name, k->def);
			CHECK_EQ(load(text), 0);
		}
		if (k->type != KP_KEY_UINT)
			continue;
		unsigned vals[4] = {k->min, k->max, k->min - 1, k->max + 1};
		for (int v = 0; v < 4; v++) {
			if (v == 2 && k->min == 0)
				continue;
			if (where)
				snprintf(text, sizeof text, "%s%s = %u\n", where, k->name, vals[v]);
			else
				snprintf(text, sizeof text, "[%s]\n%s = %u\n", k->section, k->name, vals[v]);
			CHECK_EQ(load(text), v < 2 ? 0 : -EINVAL);
		}
	}
	CHECK(kp_config_nkeys <= 64); /* the loader keeps a 64-bit mask of the keys seen */
	CHECK(kp_config_key_find("camera", "url") != NULL);
	CHECK(kp_config_key_find("web", "url") == NULL);
	CHECK(kp_config_keys_render(why, sizeof why) == -ENOSPC);
	/* Every key has a type name in `config keys` (a new type without one would print
	 * "(null)" or crash). */
	static char table[64 * 1024];
	CHECK(kp_config_keys_render(table, sizeof table) > 0);
	CHECK(!strstr(table, "(null)") && !strstr(table, "\t\t"));

	static struct kp_config first;
	static char shown[64 * 1024], again[64 * 1024];
	CHECK_EQ(
	    load("[rtc]\nudp_ports = 40000-40010\nmax_transcodes = 3\n[retention]\nmax_disk_gb = 1.5\n"
		 "[camera \"a\"]\nurl = rtsp://u@h/m\nsub_url = rtsp://h/s\nrecord = events\n"
		 "motion_events = no\nrollover_secs = 7\n[camera \"b\"]\nurl = baichuan://h:9000/\nstreams = sub\n"),
	    0);
	first = cfg;
	int n = kp_config_render(&cfg, shown, sizeof shown);
	CHECK(n > 0);
	CHECK_EQ(load(shown), 0);
	CHECK_EQ(cfg.udp_port_min, first.udp_port_min);
	CHECK_EQ(cfg.max_disk_mb, 1500);
	CHECK_EQ(cfg.cameras[0].record, KP_RECORD_EVENTS);
	CHECK_EQ(cfg.cameras[0].motion_events, false);
	CHECK_EQ(cfg.cameras[0].rollover_secs, 7);
	CHECK_EQ(cfg.cameras[1].streams, KP_STREAM_SUB);
	CHECK_EQ(cfg.cameras[1].rollover_secs, 0);
	CHECK(kp_config_render(&cfg, again, sizeof again) == n);
}

/* At most KP_CONF_MAX_ERRORS errors are reported for one file: as many bad lines are
 * each reported with their line, one more is not (the file is refused either way). */
static void test_error_ceiling(void)
{
	static char text[8192];
	for (unsigned n = KP_CONF_MAX_ERRORS; n <= KP_CONF_MAX_ERRORS + 1; n++) {
		size_t used = (size_t)snprintf(text, sizeof text, "[keeppeek]\n");
		for (unsigned i = 0; i < n; i++)
			used += (size_t)snprintf(text + used, sizeof text - used, "bogus%u = 1\n", i);
		CHECK_EQ(load(text), -EINVAL);
		CHECK_EQ(errs.count, KP_CONF_MAX_ERRORS);
		char want[32];
		snprintf(want, sizeof want, "t.conf:%u:", KP_CONF_MAX_ERRORS + 1); /* the last one reported */
		CHECK_STR_CONTAINS(errs.text, want);
		snprintf(want, sizeof want, "t.conf:%u:", KP_CONF_MAX_ERRORS + 2);
		CHECK(strstr(errs.text, want) == NULL);
	}
}

/* labels: up to 8 words of 1 to 32 characters a-z 0-9 _ -; one past each is refused. */
static void test_labels(void)
{
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nlabels = a, b, c, d, e, f, g, h\n"), 0);
	CHECK(!strcmp(cfg.cameras[0].labels.val, "a, b, c, d, e, f, g, h"));
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nlabels = a, b, c, d, e, f, g, h, i\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "camera 'c': labels: more than 8 labels");
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nlabels = abcdefghijklmnopqrstuvwxyz012345\n"), 0);
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nlabels = abcdefghijklmnopqrstuvwxyz0123456\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "longer than 32 characters");
	CHECK_EQ(load("[camera \"c\"]\nurl = rtsp://h/\nlabels = Garden\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "'G' is not allowed");
}

/* [hub] and [site "NAME"]: at and one past the ceilings (8 sites, names of 32
 * characters, url 191 and token 127 characters, ca_file 1536 bytes), the checks between
 * keys, the token from the environment shown as its reference, and what `config show`
 * writes loads back the same. */
static void test_hub(void)
{
	static char text[16 * 1024], shown[64 * 1024];
	static const char site[] = "[site \"s%d\"]\nurl = http://10.0.0.%d:8080\ntoken = ${KP_T}\n";
	setenv("KP_T", "kp_viewer-token", 1);
	for (int k = 0; k < 2; k++) {
		size_t o = (size_t)snprintf(text, sizeof text, "[hub]\nenabled = yes\ntimeout_ms = 100\n");
		for (int i = 0; i < KP_MAX_SITES + k; i++)
			o += (size_t)snprintf(text + o, sizeof text - o, site, i, i + 1);
		CHECK_EQ(load(text), k ? -EINVAL : 0);
		if (k)
			CHECK_STR_CONTAINS(errs.text, "more than 8 sites");
	}
	CHECK_EQ(load(text), -EINVAL);
	size_t o = (size_t)snprintf(text, sizeof text, "[hub]\nenabled = yes\n");
	snprintf(text + o, sizeof text - o, site, 1, 1);
	CHECK_EQ(load(text), 0);
	CHECK(cfg.hub_enabled);
	CHECK_EQ(cfg.hub_timeout_ms, 3000);
	CHECK_EQ(cfg.nsites, 1);
	CHECK_STR_EQ(cfg.sites[0].token.val, "kp_viewer-token");
	CHECK(kp_config_render(&cfg, shown, sizeof shown) > 0);
	CHECK_STR_CONTAINS(shown, "[site \"s1\"]\nurl = http://10.0.0.1:8080\ntoken = ${KP_T}\n");
	CHECK(!strstr(shown, "kp_viewer-token"));
	CHECK_EQ(load(shown), 0);
	CHECK_STR_EQ(cfg.sites[0].token.val, "kp_viewer-token");

	CHECK_EQ(load("[site \"a\"]\nurl = http://h\ntoken = t\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "[site] sections need [hub] enabled = yes");
	CHECK_EQ(load("[hub]\nenabled = yes\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "needs at least one [site \"NAME\"] section");
	CHECK_EQ(load("[hub]\nenabled = yes\n[site \"a\"]\nurl = http://h\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "site 'a' has no token");
	CHECK_EQ(load("[hub]\nenabled = yes\n[site \"a\"]\nurl = ftp://h\ntoken = t\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "url must start with http:// or https://");
	CHECK_EQ(load("[hub]\nenabled = yes\n[site \"a\"]\nurl = http://h/?x=1\ntoken = t\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "without a query");
	CHECK_EQ(load("[hub]\nenabled = yes\n[site \"a/b\"]\nurl = http://h\ntoken = t\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "site name 'a/b' may use only letters, digits, - and _");
	CHECK_EQ(load("[hub]\nenabled = yes\n[site \"a\"]\nurl = http://h\ntoken = t\n[site \"a\"]\n"
		      "url = http://g\ntoken = t\n"),
		 -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "site 'a' is defined twice");
	CHECK_EQ(load("[hub]\nenabled = yes\n[site \"a\"]\nurl = http://h\ntoken = t\nca_file = /etc/hostname\n"),
		 -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "ca_file is for https:// sites only");
	/* Names of 32 characters and one more; url and token at and one past their bound. */
	CHECK_EQ(load("[hub]\nenabled = yes\n[site \"abcdefghijklmnopqrstuvwxyz012345\"]\nurl = http://h\ntoken = t\n"),
		 0);
	CHECK_EQ(
	    load("[hub]\nenabled = yes\n[site \"abcdefghijklmnopqrstuvwxyz0123456\"]\nurl = http://h\ntoken = t\n"),
	    -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "site name longer than 32 characters");
	for (int k = 0; k < 2; k++) {
		char url[KP_SITE_URL_MAX + 2], tok[KP_SITE_TOKEN_MAX + 2];
		memset(url, 'h', sizeof url);
		memcpy(url, "http://", 7);
		url[KP_SITE_URL_MAX + k] = '\0';
		memset(tok, 't', sizeof tok);
		tok[KP_SITE_TOKEN_MAX + k] = '\0';
		snprintf(text, sizeof text, "[hub]\nenabled = yes\n[site \"a\"]\nurl = %s\ntoken = t\n", url);
		CHECK_EQ(load(text), k ? -EINVAL : 0);
		snprintf(text, sizeof text, "[hub]\nenabled = yes\n[site \"a\"]\nurl = http://h\ntoken = %s\n", tok);
		CHECK_EQ(load(text), k ? -EINVAL : 0);
	}
	/* ca_file: a regular file of at most 1536 bytes. */
	char ca[] = "/tmp/kp-site-ca-XXXXXX";
	int fd = mkstemp(ca);
	CHECK(fd >= 0);
	static char pem[KP_SITE_CA_MAX + 1];
	memset(pem, '#', sizeof pem);
	CHECK_EQ(write(fd, pem, sizeof pem), (ssize_t)sizeof pem);
	snprintf(text, sizeof text, "[hub]\nenabled = yes\n[site \"a\"]\nurl = https://h\ntoken = t\nca_file = %s\n",
		 ca);
	CHECK_EQ(load(text), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "not a regular file of at most 1536 bytes");
	CHECK_EQ(ftruncate(fd, KP_SITE_CA_MAX), 0);
	close(fd);
	CHECK_EQ(load(text), 0);
	unlink(ca);
}

/* [mqtt] and [webhook "NAME"]: at and one past the webhook ceilings (8 sections, names
 * of 32 characters), the checks that involve two keys or a key's syntax, secrets
 * redacted in `config show`, and what it shows loads back the same. */
static void test_integrations(void)
{
	static char text[16 * 1024];
	size_t o = 0;
	for (int i = 0; i <= KP_MAX_WEBHOOKS; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "[webhook \"h%d\"]\nurl = http://h/%d\n", i, i);
	CHECK_EQ(load(text), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "more than 8 webhooks");
	o = 0;
	for (int i = 0; i < KP_MAX_WEBHOOKS; i++)
		o += (size_t)snprintf(text + o, sizeof text - o, "[webhook \"h%d\"]\nurl = http://h/%d\n", i, i);
	CHECK_EQ(load(text), 0);
	CHECK_EQ(cfg.nwebhooks, KP_MAX_WEBHOOKS);
	CHECK_EQ(load("[webhook \"abcdefghijklmnopqrstuvwxyz012345\"]\nurl = http://h/\n"), 0);
	CHECK_EQ(load("[webhook \"abcdefghijklmnopqrstuvwxyz0123456\"]\nurl = http://h/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "webhook name longer than 32 characters");
	CHECK_EQ(load("[webhook \"a b\"]\nurl = http://h/\n"), -EINVAL);
	CHECK_EQ(load("[webhook]\nurl = http://h/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "webhook section must be [webhook \"NAME\"]");
	CHECK_EQ(load("[webhook \"a\"]\nurl = http://h/\n[webhook \"a\"]\nurl = http://g/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "webhook 'a' is defined twice");
	CHECK_EQ(load("[webhook \"a\"]\nlabels = person\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "webhook 'a' has no url");
	CHECK_EQ(load("[webhook \"a\"]\nurl = ftp://h/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "url must start with http:// or https://");
	CHECK_EQ(load("[webhook \"a\"]\nurl = http://h/\nurl = http://g/\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "key 'url' set twice in [webhook \"a\"]");
	/* A camera and a webhook each have their own keys, in any order. */
	CHECK_EQ(load("[webhook \"a\"]\nurl = http://h/\n[camera \"c\"]\nurl = rtsp://h/\n[webhook \"b\"]\n"
		      "url = https://g/\ncameras = c\n"),
		 0);
	CHECK_EQ(cfg.nwebhooks, 2);
	CHECK(!strcmp(cfg.webhooks[1].cameras.val, "c"));

	CHECK_EQ(load("[mqtt]\ntopic_prefix = a/+/b\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "[mqtt] topic_prefix 'a/+/b' must be topic levels");
	CHECK_EQ(load("[mqtt]\ntopic_prefix = a//b\n"), -EINVAL);
	CHECK_EQ(load("[mqtt]\ndiscovery_prefix = ha/#\n"), -EINVAL);
	CHECK_EQ(load("[mqtt]\ndiscovery_prefix =\n"), 0);
	CHECK_EQ(load("[mqtt]\nca_file = /etc/ssl/x.pem\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "ca_file is for tls = yes only");
	CHECK_EQ(load("[mqtt]\nclient_id =\n"), -EINVAL);

	/* ca_file: a regular file of at most 16384 bytes. */
	char ca[] = "/tmp/kp-ca-XXXXXX";
	int fd = mkstemp(ca);
	CHECK(fd >= 0);
	static char pem[KP_MQTT_CA_MAX + 1];
	memset(pem, '#', sizeof pem);
	CHECK_EQ(write(fd, pem, sizeof pem), (ssize_t)sizeof pem);
	snprintf(text, sizeof text, "[mqtt]\ntls = yes\nca_file = %s\n", ca);
	CHECK_EQ(load(text), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "not a regular file of at most 16384 bytes");
	CHECK_EQ(ftruncate(fd, KP_MQTT_CA_MAX), 0);
	close(fd);
	CHECK_EQ(load(text), 0);
	CHECK_EQ(load("[mqtt]\ntls = yes\nca_file = /nonexistent/ca.pem\n"), -EINVAL);
	CHECK_STR_CONTAINS(errs.text, "ca_file /nonexistent/ca.pem: No such file or directory");
	CHECK_EQ(load("[mqtt]\ntls = yes\nca_file = /tmp\n"), -EINVAL);

	setenv("KP_TEST_MQTT_PW", "mqtt-pw", 1);
	snprintf(text, sizeof text,
		 "[mqtt]\nhost = broker.lan\nport = 8883\ntls = yes\nca_file = %s\nuser = nvr\n"
		 "password = ${KP_TEST_MQTT_PW}\nqos = 1\nactive_secs = 5\n"
		 "[webhook \"a\"]\nurl = https://h/x\nlabels = person, dog\nsecret = ${KP_TEST_MQTT_PW}\n",
		 ca);
	CHECK_EQ(load(text), 0);
	CHECK(!strcmp(cfg.mqtt_password.val, "mqtt-pw") && cfg.mqtt_qos == 1 && cfg.mqtt_tls);
	static struct kp_config first;
	static char shown[64 * 1024], again[64 * 1024];
	first = cfg;
	int n = kp_config_render(&cfg, shown, sizeof shown);
	CHECK(n > 0);
	CHECK(!strstr(shown, "mqtt-pw"));
	CHECK_STR_CONTAINS(shown, "[webhook \"a\"]\nurl = https://h/x\n");
	CHECK_EQ(load(shown), 0);
	CHECK(!strcmp(cfg.mqtt_host.val, first.mqtt_host.val) && cfg.mqtt_port == 8883 && cfg.mqtt_active_secs == 5);
	CHECK(!strcmp(cfg.webhooks[0].secret.val, "mqtt-pw") && !strcmp(cfg.webhooks[0].labels.val, "person, dog"));
	CHECK(kp_config_render(&cfg, again, sizeof again) == n);
	unsetenv("KP_TEST_MQTT_PW");
	unlink(ca);
	/* Written in the file itself, a password or a secret is never shown. */
	CHECK_EQ(load("[mqtt]\nhost = b\npassword = hunter2\n[webhook \"a\"]\nurl = http://u:pw@h/\nsecret = k3y\n"),
		 0);
	CHECK(kp_config_render(&cfg, shown, sizeof shown) > 0);
	CHECK(!strstr(shown, "hunter2") && !strstr(shown, "k3y") && !strstr(shown, ":pw@"));
	CHECK_STR_CONTAINS(shown, "password = ***\n");
}

int main(void)
{
	RUN(test_defaults_and_example);
	RUN(test_unknown_key_and_section);
	RUN(test_bad_values);
	RUN(test_duplicates);
	RUN(test_camera_ceiling);
	RUN(test_secrets);
	RUN(test_redact_url);
	RUN(test_long_line);
	RUN(test_sub_url);
	RUN(test_quota_and_rollover);
	RUN(test_tier);
	RUN(test_rtsp_transport);
	RUN(test_audio);
	RUN(test_missing_file);
	RUN(test_not_a_file);
	RUN(test_unclosed_section);
	RUN(test_url_authority);
	RUN(test_key_table);
	RUN(test_labels);
	RUN(test_error_ceiling);
	RUN(test_integrations);
	RUN(test_hub);
	return TEST_EXIT();
}
