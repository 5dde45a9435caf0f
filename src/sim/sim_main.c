/* gpuledger-sim: the demo fleet simulator's process — reads the trace
 * slices, keeps the model (src/sim/simfleet.c) running on the wall clock,
 * serves each node's dcgm-exporter /metrics and the shims' commands on
 * loopback, and is itself the shim: run as `sacct`, `scontrol`, `sacctmgr`
 * or `kubectl` (a symlink in DIR/bin), it hands its argv to the running
 * simulator and prints the answer with the exit status the tool would give.
 * docs/demo.md describes it. */
#include "gl/simfleet.h"
#include "gl/simload.h"
#include "gl/simshow.h"
#include "gl/strbuf.h"
#include "gl/timeutil.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODY (64 * 1024)
#define MAX_SEGMENTS 1024

static const char usage[] =
	"usage: gpuledger-sim serve --dir DIR [--traces DIR] [--speed S] [--gpus N] [--seed N]\n"
	"                           [--history-days D] [--load L] [--listen 127.0.0.1:PORT]\n"
	"       gpuledger-sim shim TOOL [ARGS...]       (or run as DIR/bin/TOOL: sacct, scontrol,\n"
	"                                                sacctmgr, kubectl; pods-history)\n"
	"       gpuledger-sim once --start TIME --at TIME [--speed-from TIME --speed S] [--traces DIR]\n"
	"                          [--gpus N] [--seed N] TOOL [ARGS...]   (the model without a server)\n";

static volatile sig_atomic_t stopping;

struct sim {
	struct gl_simtrace_traces tr;
	struct gl_simfleet_fleet *f;
	pthread_mutex_t mu;
	struct MHD_Daemon *d;
	int port;
};

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

/* ---- options ----------------------------------------------------------- */

struct opts {
	const char *dir, *traces, *listen;
	double speed, load;
	int gpus, history_days;
	long long seed;
	int64_t start_s, at_s, speed_from_s;
	int rest; /* first argument after the options */
};

static int parse_time_arg(const char *s, int64_t *out)
{
	return gl_timeutil_parse(s, strlen(s), out);
}

static int parse_opts(int argc, char **argv, int from, struct opts *o)
{
	o->traces = "scripts/demo/traces";
	o->listen = "127.0.0.1:0";
	o->speed = 60;
	o->load = 0.8;
	o->gpus = 256;
	o->history_days = 77;
	o->seed = 28;
	o->start_s = o->at_s = o->speed_from_s = GL_SIMFLEET_NONE;
	for (int i = from; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a[0] != '-' || a[1] != '-') {
			o->rest = i;
			return 0;
		}
		if (!v) {
			fprintf(stderr, "gpuledger-sim: %s needs a value\n%s", a, usage);
			return -1;
		}
		i++;
		if (!strcmp(a, "--dir"))
			o->dir = v;
		else if (!strcmp(a, "--traces"))
			o->traces = v;
		else if (!strcmp(a, "--listen"))
			o->listen = v;
		else if (!strcmp(a, "--speed") && (o->speed = atof(v)) > 0 && o->speed <= 100000)
			;
		else if (!strcmp(a, "--load") && (o->load = atof(v)) > 0 && o->load <= 4)
			;
		else if (!strcmp(a, "--gpus") && (o->gpus = atoi(v)) >= 48)
			;
		else if (!strcmp(a, "--history-days") && (o->history_days = atoi(v)) >= 0)
			;
		else if (!strcmp(a, "--seed"))
			o->seed = atoll(v);
		else if (!strcmp(a, "--start") && !parse_time_arg(v, &o->start_s))
			;
		else if (!strcmp(a, "--at") && !parse_time_arg(v, &o->at_s))
			;
		else if (!strcmp(a, "--speed-from") && !parse_time_arg(v, &o->speed_from_s))
			;
		else {
			fprintf(stderr, "gpuledger-sim: %s %s: bad option or value\n%s", a, v, usage);
			return -1;
		}
	}
	o->rest = argc;
	return 0;
}

static int new_fleet(const struct opts *o, struct sim *s, int64_t start_s, struct gl_err *err)
{
	struct gl_simfleet_params p;
	int rc = gl_simload_traces(o->traces, &s->tr, err);
	if (rc)
		return rc;
	gl_simfleet_params_default(&p);
	p.seed = (uint64_t)o->seed;
	p.gpus = o->gpus;
	p.load = o->load;
	p.start_s = start_s;
	return gl_simfleet_new(&p, &s->tr, &s->f, err);
}

/* ---- the timeline: what the model replays at every start ---------------- */

/* DIR/timeline keeps the first second, the seed and fleet size, and each
 * speed change, so a restart rebuilds the same fleet (the jobs the database
 * already holds) and continues from it. */
struct timeline {
	int64_t start_s;
	long long seed;
	int gpus;
	double load;
	int64_t at[MAX_SEGMENTS];
	double speed[MAX_SEGMENTS];
	int n;
};

static int timeline_read(const char *path, struct timeline *t)
{
	FILE *fp = fopen(path, "r");
	char line[256];
	int lineno = 0;
	if (!fp)
		return errno == ENOENT ? 1 : -1;
	while (fgets(line, sizeof line, fp)) {
		long long a;
		double b;
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "start %lld", &a) == 1)
			t->start_s = a;
		else if (sscanf(line, "seed %lld", &a) == 1)
			t->seed = a;
		else if (sscanf(line, "gpus %lld", &a) == 1)
			t->gpus = (int)a;
		else if (sscanf(line, "load %lf", &b) == 1)
			t->load = b;
		else if (sscanf(line, "speed %lld %lf", &a, &b) == 2 && t->n < MAX_SEGMENTS) {
			t->at[t->n] = a;
			t->speed[t->n++] = b;
		} else {
			fprintf(stderr, "gpuledger-sim: %s:%d: not a timeline line\n", path, lineno);
			fclose(fp);
			return -1;
		}
	}
	fclose(fp);
	return t->start_s && t->gpus ? 0 : -1;
}

static int timeline_write(const char *path, const struct timeline *t)
{
	char tmp[PATH_MAX];
	FILE *fp;
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (!(fp = fopen(tmp, "w")))
		return -1;
	fprintf(fp, "# gpuledger-sim: the fleet every start rebuilds (docs/demo.md)\n");
	fprintf(fp, "start %lld\nseed %lld\ngpus %d\nload %.3f\n", (long long)t->start_s, t->seed, t->gpus, t->load);
	for (int i = 0; i < t->n; i++)
		fprintf(fp, "speed %lld %g\n", (long long)t->at[i], t->speed[i]);
	if (fclose(fp) || rename(tmp, path))
		return -1;
	return 0;
}

/* Rebuilds the fleet from DIR/timeline (made on the first start: history
 * of history_days whole days at speed 1, then the demo's speed from now). */
static int build_from_timeline(struct opts *o, struct sim *s, struct gl_err *err)
{
	char path[PATH_MAX];
	struct timeline t = {0};
	int64_t now = now_s();
	int rc;

	snprintf(path, sizeof path, "%s/timeline", o->dir);
	rc = timeline_read(path, &t);
	if (rc < 0)
		return gl_err_set(err, GL_ECONFIG, "%s: unreadable (remove it to start a new fleet)", path);
	if (rc == 1) {
		t.start_s = now - now % 86400 - (int64_t)o->history_days * 86400;
		t.seed = o->seed;
		t.gpus = o->gpus;
		t.load = o->load;
		t.at[0] = t.start_s;
		t.speed[0] = 1;
		t.n = 1;
	}
	if (t.n < MAX_SEGMENTS && (t.speed[t.n - 1] != o->speed || rc == 1)) {
		t.at[t.n] = now;
		t.speed[t.n++] = o->speed;
	}
	if (timeline_write(path, &t))
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	o->seed = t.seed;
	o->gpus = t.gpus;
	if (t.load > 0)
		o->load = t.load;
	if ((rc = new_fleet(o, s, t.start_s, err)))
		return rc;
	for (int i = 0; i < t.n; i++)
		gl_simfleet_set_speed(s->f, t.at[i] > now ? now : t.at[i], t.speed[i]);
	gl_simfleet_advance(s->f, now);
	return 0;
}

/* ---- HTTP: /node/NAME/metrics, POST /shim, /healthz, /state -------------- */

struct req {
	struct gl_strbuf body;
	int too_big;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, struct gl_strbuf *b,
			     int exit_code)
{
	size_t len = b->len;
	char *p = gl_strbuf_steal(b);
	struct MHD_Response *r = MHD_create_response_from_buffer(len, p ? p : gl_xstrdup(""), MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;
	MHD_add_response_header(r, "Content-Type", type);
	if (exit_code >= 0) {
		char v[16];
		snprintf(v, sizeof v, "%d", exit_code);
		MHD_add_response_header(r, "X-Sim-Exit", v);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* The shim's body: argv joined by NULs. The answer: "EXIT ERRLEN\n", the
 * error text, then stdout. */
static enum MHD_Result do_shim(struct sim *s, struct MHD_Connection *c, struct req *q)
{
	const char *argv[256];
	int argc = 0;
	struct gl_strbuf out = GL_STRBUF_INIT, errout = GL_STRBUF_INIT, framed = GL_STRBUF_INIT;
	int code;
	enum MHD_Result ret;

	for (size_t i = 0; i < q->body.len && argc < 255;) {
		argv[argc++] = q->body.p + i;
		i += strlen(q->body.p + i) + 1;
	}
	argv[argc] = NULL;
	pthread_mutex_lock(&s->mu);
	gl_simfleet_advance(s->f, now_s());
	code = gl_simshow_command(s->f, argc, argv, &out, &errout);
	pthread_mutex_unlock(&s->mu);
	gl_strbuf_printf(&framed, "%d %zu\n", code, errout.len);
	gl_strbuf_append(&framed, errout.p, errout.len);
	gl_strbuf_append(&framed, out.p, out.len);
	ret = reply(c, 200, "application/octet-stream", &framed, code);
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&errout);
	gl_strbuf_fini(&framed);
	return ret;
}

static void state_json(const struct gl_simfleet_fleet *f, struct gl_strbuf *b)
{
	size_t running = 0, pending = 0;
	int down = 0;
	for (size_t i = 0; i < f->nactive; i++)
		f->jobs[f->active[i]].state == GL_SIMFLEET_RUNNING ? running++ : pending++;
	for (int i = 0; i < f->nnodes; i++)
		down += f->nodes[i].avail != GL_SIMFLEET_UP;
	gl_strbuf_printf(b,
			 "{\"now\":%lld,\"start\":%lld,\"speed\":%g,\"gpus\":%d,\"jobs\":%zu,\"running\":%zu,"
			 "\"pending\":%zu,\"started\":%llu,\"requeues\":%llu,\"faults\":%llu,\"nodes_unavailable\":%d,"
			 "\"clusters\":[\"%s\",\"%s\"]}\n",
			 (long long)f->now_s, (long long)f->p.start_s, f->speed, f->cl[0].gpus + f->cl[1].gpus, f->njobs,
			 running, pending, (unsigned long long)f->jobs_started, (unsigned long long)f->requeues,
			 (unsigned long long)f->faults, down, f->cl[0].name, f->cl[1].name);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct sim *s = cls;
	struct req *q = *con_cls;
	struct gl_strbuf b = GL_STRBUF_INIT;
	enum MHD_Result ret;

	(void)version;
	if (!q) {
		q = gl_xcalloc(1, sizeof *q);
		*con_cls = q;
		return MHD_YES;
	}
	if (*upload_size) {
		if (q->body.len + *upload_size > MAX_BODY)
			q->too_big = 1;
		else
			gl_strbuf_append(&q->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (!strcmp(method, "POST") && !strcmp(url, "/shim")) {
		if (q->too_big) {
			gl_strbuf_puts(&b, "argv too long\n");
			return reply(c, 413, "text/plain", &b, -1);
		}
		return do_shim(s, c, q);
	}
	if (!strcmp(method, "GET") && !strncmp(url, "/node/", 6) && strlen(url) > 14 &&
	    !strcmp(url + strlen(url) - 8, "/metrics")) {
		char node[64];
		int rc;
		snprintf(node, sizeof node, "%.*s", (int)(strlen(url) - 14), url + 6);
		pthread_mutex_lock(&s->mu);
		gl_simfleet_advance(s->f, now_s());
		rc = gl_simshow_metrics(s->f, node, &b);
		pthread_mutex_unlock(&s->mu);
		if (rc) {
			gl_strbuf_printf(&b, "no node %s\n", node);
			return reply(c, 404, "text/plain", &b, -1);
		}
		return reply(c, 200, "text/plain; version=0.0.4; charset=utf-8", &b, -1);
	}
	if (!strcmp(method, "GET") && !strcmp(url, "/state")) {
		pthread_mutex_lock(&s->mu);
		gl_simfleet_advance(s->f, now_s());
		state_json(s->f, &b);
		pthread_mutex_unlock(&s->mu);
		return reply(c, 200, "application/json", &b, -1);
	}
	if (!strcmp(url, "/healthz")) {
		gl_strbuf_puts(&b, "ok\n");
		return reply(c, 200, "text/plain", &b, -1);
	}
	gl_strbuf_puts(&b, "not found\n");
	ret = reply(c, 404, "text/plain", &b, -1);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
	struct req *q = *con_cls;
	(void)cls;
	(void)c;
	(void)t;
	if (q) {
		gl_strbuf_fini(&q->body);
		free(q);
		*con_cls = NULL;
	}
}

static int start_http(struct sim *s, const char *listen, struct gl_err *err)
{
	struct sockaddr_in sa = {0};
	char host[64];
	const char *colon = strrchr(listen, ':');
	const union MHD_DaemonInfo *di;

	if (!colon || (size_t)(colon - listen) >= sizeof host)
		return gl_err_set(err, GL_ECONFIG, "--listen %s: want ADDR:PORT", listen);
	snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	/* loopback only: the simulator is no service for the network */
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 || (ntohl(sa.sin_addr.s_addr) >> 24) != 127)
		return gl_err_set(err, GL_ECONFIG, "--listen %s: a 127.0.0.0/8 address only", listen);
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT, 30u,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	if (!s->d)
		return gl_err_set(err, GL_EIO, "cannot listen on %s", listen);
	di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : 0;
	return 0;
}

/* DIR/sim.url, DIR/bin/<tool> symlinks to this binary, and the exporters'
 * targets files sources.dcgm[].targets_file reads. */
static int write_outputs(const struct sim *s, const char *dir, struct gl_err *err)
{
	char path[PATH_MAX], self[PATH_MAX], tmp[PATH_MAX + 8];
	static const char *const tools[] = {"sacct", "scontrol", "sacctmgr", "kubectl"};
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	FILE *fp;

	if (n <= 0)
		return gl_err_set(err, GL_EIO, "/proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	snprintf(path, sizeof path, "%s/bin", dir);
	if (mkdir(path, 0755) && errno != EEXIST)
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	for (size_t i = 0; i < GL_ARRAY_LEN(tools); i++) {
		snprintf(path, sizeof path, "%s/bin/%s", dir, tools[i]);
		unlink(path);
		if (symlink(self, path))
			return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	}
	for (int c = 0; c < s->f->ncl; c++) {
		const struct gl_simfleet_cluster_def *cl = &s->f->cl[c];
		snprintf(path, sizeof path, "%s/dcgm-%s.targets", dir, cl->name);
		snprintf(tmp, sizeof tmp, "%s.tmp", path);
		if (!(fp = fopen(tmp, "w")))
			return gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
		fprintf(fp, "# dcgm-exporter targets of the simulated cluster %s (gpuledger-sim)\n", cl->name);
		for (int i = cl->first_node; i < cl->first_node + cl->nnodes; i++)
			/* Kubernetes exporters name themselves, not the node */
			fprintf(fp, "http://127.0.0.1:%d/node/%s/metrics%s%s\n", s->port, s->f->nodes[i].name,
				cl->kind == GL_SIMFLEET_KUBE ? " " : "", cl->kind == GL_SIMFLEET_KUBE ? s->f->nodes[i].name : "");
		if (fclose(fp) || rename(tmp, path))
			return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	}
	snprintf(path, sizeof path, "%s/sim.url", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (!(fp = fopen(tmp, "w")))
		return gl_err_set(err, GL_EIO, "%s: %s", tmp, strerror(errno));
	fprintf(fp, "http://127.0.0.1:%d\n", s->port);
	if (fclose(fp) || rename(tmp, path))
		return gl_err_set(err, GL_EIO, "%s: %s", path, strerror(errno));
	return 0;
}

static void log_state(const struct sim *s)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	state_json(s->f, &b);
	fprintf(stderr, "gpuledger-sim: %s", gl_strbuf_cstr(&b));
	gl_strbuf_fini(&b);
}

static int cmd_serve(int argc, char **argv)
{
	struct opts o = {0};
	struct sim s = {0};
	struct gl_err err = {0};
	struct sigaction sa = {0};
	char path[PATH_MAX];
	int rc = 1;
	int64_t last_log = 0;

	if (parse_opts(argc, argv, 2, &o) || o.rest != argc || !o.dir) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	pthread_mutex_init(&s.mu, NULL);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (mkdir(o.dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "gpuledger-sim: %s: %s\n", o.dir, strerror(errno));
		return 1;
	}
	if (build_from_timeline(&o, &s, &err) || start_http(&s, o.listen, &err) || write_outputs(&s, o.dir, &err)) {
		fprintf(stderr, "gpuledger-sim: %s\n", err.msg);
		goto out;
	}
	fprintf(stderr, "gpuledger-sim: %s and %s, %d GPUs, speed %gx, serving http://127.0.0.1:%d (%s/sim.url)\n",
		s.f->cl[0].name, s.f->cl[1].name, s.f->cl[0].gpus + s.f->cl[1].gpus, o.speed, s.port, o.dir);
	while (!stopping) {
		struct timespec ts = {0, 250 * 1000 * 1000};
		int64_t t = now_s();
		pthread_mutex_lock(&s.mu);
		gl_simfleet_advance(s.f, t);
		if (t - last_log >= 60) {
			log_state(&s);
			last_log = t;
		}
		pthread_mutex_unlock(&s.mu);
		nanosleep(&ts, NULL);
	}
	rc = 0;
out:
	if (s.d)
		MHD_stop_daemon(s.d);
	snprintf(path, sizeof path, "%s/sim.url", o.dir ? o.dir : ".");
	if (s.d)
		unlink(path);
	gl_simfleet_free(s.f);
	gl_simtrace_fini(&s.tr);
	pthread_mutex_destroy(&s.mu);
	return rc;
}

/* ---- the shim ---------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	gl_strbuf_append(ud, p, size * n);
	return size * n;
}

/* GL_SIM_URL, else sim.url beside the bin/ folder the shim was run from. */
static int sim_url(const char *argv0, char *url, size_t n)
{
	const char *env = getenv("GL_SIM_URL");
	char path[PATH_MAX], *slash;
	FILE *fp;
	if (env && *env) {
		snprintf(url, n, "%s", env);
		return 0;
	}
	snprintf(path, sizeof path, "%s", argv0);
	slash = strrchr(path, '/');
	if (!slash)
		return -1;
	snprintf(slash, sizeof path - (size_t)(slash - path), "/../sim.url");
	if (!(fp = fopen(path, "r")))
		return -1;
	if (!fgets(url, (int)n, fp)) {
		fclose(fp);
		return -1;
	}
	fclose(fp);
	url[strcspn(url, "\r\n")] = '\0';
	return 0;
}

static int run_shim(const char *argv0, const char *tool, int argc, char **argv)
{
	char url[512], endpoint[600];
	struct gl_strbuf body = GL_STRBUF_INIT, resp = GL_STRBUF_INIT;
	CURL *h;
	CURLcode cc;
	long status = 0;
	int code = 1, rc;
	size_t errlen = 0;
	char *nl;

	if (sim_url(argv0, url, sizeof url)) {
		fprintf(stderr, "%s: the simulator is not running (no GL_SIM_URL, no sim.url beside %s)\n", tool,
			argv0);
		return 1;
	}
	gl_strbuf_append(&body, tool, strlen(tool) + 1);
	for (int i = 0; i < argc; i++)
		gl_strbuf_append(&body, argv[i], strlen(argv[i]) + 1);
	snprintf(endpoint, sizeof endpoint, "%s/shim", url);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	h = curl_easy_init();
	curl_easy_setopt(h, CURLOPT_URL, endpoint);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.p);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body.len);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (cc != CURLE_OK || status != 200 || !(nl = memchr(resp.p, '\n', resp.len)) ||
	    sscanf(resp.p, "%d %zu", &code, &errlen) != 2 || errlen > resp.len - (size_t)(nl + 1 - resp.p)) {
		fprintf(stderr, "%s: the simulator at %s did not answer (%s, HTTP %ld)\n", tool, url,
			cc != CURLE_OK ? curl_easy_strerror(cc) : "bad answer", status);
		code = 1;
	} else {
		const char *e = nl + 1, *o = e + errlen;
		size_t olen = resp.len - (size_t)(o - resp.p);
		if (errlen)
			fwrite(e, 1, errlen, stderr);
		if (olen && fwrite(o, 1, olen, stdout) != olen)
			code = 1;
	}
	rc = fflush(stdout) ? 1 : code;
	gl_strbuf_fini(&body);
	gl_strbuf_fini(&resp);
	curl_global_cleanup();
	return rc;
}

/* ---- once: the model in this process, for tests and benchmarks ---------- */

static int cmd_once(int argc, char **argv)
{
	struct opts o = {0};
	struct sim s = {0};
	struct gl_err err = {0};
	struct gl_strbuf out = GL_STRBUF_INIT, errout = GL_STRBUF_INIT;
	int code = 1;

	if (parse_opts(argc, argv, 2, &o) || o.rest >= argc || o.start_s == GL_SIMFLEET_NONE || o.at_s == GL_SIMFLEET_NONE) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (new_fleet(&o, &s, o.start_s, &err)) {
		fprintf(stderr, "gpuledger-sim: %s\n", err.msg);
		goto out;
	}
	if (o.speed_from_s != GL_SIMFLEET_NONE)
		gl_simfleet_set_speed(s.f, o.speed_from_s < o.at_s ? o.speed_from_s : o.at_s, o.speed);
	gl_simfleet_advance(s.f, o.at_s);
	if (!strcmp(argv[o.rest], "metrics")) {
		code = o.rest + 1 < argc && !gl_simshow_metrics(s.f, argv[o.rest + 1], &out) ? 0 : 1;
		if (code)
			gl_strbuf_puts(&errout, "gpuledger-sim: metrics NODE: no such node\n");
	} else
		code = gl_simshow_command(s.f, argc - o.rest, (const char *const *)argv + o.rest, &out, &errout);
	fwrite(errout.p ? errout.p : "", 1, errout.len, stderr);
	fwrite(out.p ? out.p : "", 1, out.len, stdout);
out:
	gl_strbuf_fini(&out);
	gl_strbuf_fini(&errout);
	gl_simfleet_free(s.f);
	gl_simtrace_fini(&s.tr);
	return code;
}

int main(int argc, char **argv)
{
	const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	static const char *const tools[] = {"sacct", "scontrol", "sacctmgr", "kubectl"};

	for (size_t i = 0; i < GL_ARRAY_LEN(tools); i++)
		if (!strcmp(self, tools[i]))
			return run_shim(argv[0], self, argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "serve"))
		return cmd_serve(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "once"))
		return cmd_once(argc, argv);
	if (argc >= 3 && (!strcmp(argv[1], "shim")))
		return run_shim(argv[0], argv[2], argc - 3, argv + 3);
	if (argc >= 2 && !strcmp(argv[1], "pods-history"))
		return run_shim(argv[0], "pods-history", argc - 2, argv + 2);
	fprintf(stderr, "%s", usage);
	return argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) ? 0 : 2;
}
