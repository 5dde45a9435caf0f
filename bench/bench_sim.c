/* The demo fleet simulator's own cost: build/gpuledger-sim at 1,000 GPUs
 * and a 60x speed-up, with a week of history, polled as the demo config
 * polls it (every node's dcgm-exporter /metrics every 10 s, `kubectl get
 * pods` every 15 s, an sacct chunk every 20 s, scontrol, sacctmgr and
 * kubectl nodes every 30 s, all through the real shims and HTTP). Its CPU
 * share (utime + stime from /proc/<pid>/stat over wall time) against the
 * 20 % of a core issue 28 allows, and its peak RSS. The shims' own
 * processes are the pollers' cost, as sacct's is, and not counted.
 *
 * Usage: bench_sim [gpus [seconds [speed]]] (1000 60 60). Run from the repo
 * root. */
#include "gl/sacct.h"
#include "lib/testlib.h"

#include <curl/curl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	p = fgets(buf, sizeof buf, f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	/* after "(comm)": state and 10 more fields, then utime and stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long hwm_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

static size_t discard(char *p, size_t s, size_t n, void *ud)
{
	(void)p;
	*(size_t *)ud += s * n;
	return s * n;
}

/* A shim run as the daemon runs it: stdout and stderr discarded. */
static void shim(const char *dir, const char *tool, const char *const *args)
{
	char path[PATH_MAX];
	const char *argv[32];
	int n = 0, st;
	pid_t pid;
	snprintf(path, sizeof path, "%s/bin/%s", dir, tool);
	argv[n++] = path;
	while (*args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	if ((pid = fork()) == 0) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(126);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		gl_test_die("a shim failed");
}

static size_t scrape_all(CURLM *m, char urls[][160], size_t n)
{
	size_t bytes = 0;
	int running = 1;
	for (size_t i = 0; i < n; i++) {
		CURL *h = curl_easy_init();
		curl_easy_setopt(h, CURLOPT_URL, urls[i]);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &bytes);
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
		curl_multi_add_handle(m, h);
	}
	while (running) {
		CURLMsg *msg;
		int left;
		curl_multi_perform(m, &running);
		curl_multi_poll(m, NULL, 0, 200, NULL);
		while ((msg = curl_multi_info_read(m, &left)))
			if (msg->msg == CURLMSG_DONE) {
				curl_multi_remove_handle(m, msg->easy_handle);
				curl_easy_cleanup(msg->easy_handle);
			}
	}
	return bytes;
}

static size_t read_targets(const char *dir, char urls[][160], size_t cap)
{
	static const char *const files[] = {"dcgm-sim-slurm.targets", "dcgm-sim-k8s.targets"};
	size_t n = 0;
	for (size_t i = 0; i < 2; i++) {
		char path[PATH_MAX], line[512];
		FILE *f;
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		if (!(f = fopen(path, "r")))
			gl_test_die("no targets file");
		while (fgets(line, sizeof line, f) && n < cap)
			if (line[0] == 'h') {
				line[strcspn(line, " \n")] = '\0';
				snprintf(urls[n++], 160, "%s", line);
			}
		fclose(f);
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *gpus = argc > 1 ? argv[1] : "1000", *speed = argc > 3 ? argv[3] : "60";
	int seconds = argc > 2 ? atoi(argv[2]) : 60;
	char dir[PATH_MAX], url[PATH_MAX + 16], s_from[32], s_to[32], sa[48], ea[48];
	static char urls[4096][160];
	size_t ntargets, bytes = 0;
	double c0, c1, t0, t1, last_pods = 0, last_sacct = 0, last_nodes = 0;
	pid_t pid;
	CURLM *m;
	int rounds = 0;

	snprintf(dir, sizeof dir, "%s/bench-sim.%d", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp",
		 (int)getpid());
	t0 = gl_test_now_s();
	if ((pid = fork()) == 0) {
		if (!freopen("/dev/null", "w", stderr))
			_exit(126);
		execl("build/gpuledger-sim", "gpuledger-sim", "serve", "--dir", dir, "--gpus", gpus, "--speed", speed,
		      "--history-days", "7", (char *)NULL);
		_exit(127);
	}
	snprintf(url, sizeof url, "%s/sim.url", dir);
	for (int i = 0; i < 300 && access(url, R_OK); i++)
		usleep(100000);
	if (access(url, R_OK))
		gl_test_die("the simulator did not start (build/gpuledger-sim, run from the repo root)");
	t1 = gl_test_now_s() - t0; /* the week of history replayed, the server up */
	ntargets = read_targets(dir, urls, 4096);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	c0 = cpu_s(pid);
	t0 = gl_test_now_s();
	for (double t = t0; t - t0 < seconds; t = gl_test_now_s()) {
		time_t now = time(NULL);
		struct tm tm;
		bytes += scrape_all(m, urls, ntargets);
		rounds++;
		if (t - last_pods >= 15) {
			shim(dir, "kubectl", (const char *[]){"get", "pods", "-A", "-o", "json", NULL});
			last_pods = t;
		}
		if (t - last_sacct >= 20) {
			time_t f = now - 900;
			strftime(s_from, sizeof s_from, "%Y-%m-%dT%H:%M:%S", gmtime_r(&f, &tm));
			strftime(s_to, sizeof s_to, "%Y-%m-%dT%H:%M:%S", gmtime_r(&now, &tm));
			shim(dir, "sacct",
			     (const char *[]){"--allusers", "--parsable2", "--noheader", "--allocations", "--duplicates",
					      "--clusters", "sim-slurm", "--starttime", s_from, "--endtime", s_to,
					      "--delimiter", "|", "--format", GL_SACCT_DEFAULT_FIELDS, NULL});
			last_sacct = t;
		}
		if (t - last_nodes >= 30) {
			time_t f = now - 86400;
			strftime(s_from, sizeof s_from, "%Y-%m-%dT%H:%M:%S", gmtime_r(&f, &tm));
			snprintf(sa, sizeof sa, "start=%s", s_from);
			strftime(s_to, sizeof s_to, "%Y-%m-%dT%H:%M:%S", gmtime_r(&now, &tm));
			snprintf(ea, sizeof ea, "end=%s", s_to);
			shim(dir, "scontrol", (const char *[]){"show", "node", "-o", NULL});
			shim(dir, "sacctmgr",
			     (const char *[]){"-P", "show", "event", "events=node,cluster", "clusters=sim-slurm", sa, ea,
					      "format=Cluster,Event,NodeName,ClusterNodes,Start,End,State,StateRaw,"
					      "Reason,User,TRES",
					      NULL});
			shim(dir, "scontrol", (const char *[]){"show", "reservation", "-o", NULL});
			shim(dir, "kubectl", (const char *[]){"get", "nodes", "-o", "json", NULL});
			last_nodes = t;
		}
		while (gl_test_now_s() - t < 10 && gl_test_now_s() - t0 < seconds)
			usleep(100000);
	}
	printf("| simulator %s GPUs: start, a week of history replayed (wall) | %.2f s | - | - |\n", gpus, t1);
	c1 = cpu_s(pid);
	t1 = gl_test_now_s();
	fprintf(stderr, "bench_sim: %zu targets, %d scrape rounds, %.1f MB served\n", ntargets, rounds,
		(double)bytes / 1e6);
	printf("| simulator %s GPUs at %sx, polled as the demo polls it: CPU (%% of one core) | %.2f %% | 20 %% | "
	       "%.3f |\n",
	       gpus, speed, 100.0 * (c1 - c0) / (t1 - t0), (c1 - c0) / (t1 - t0) / 0.20);
	printf("| simulator %s GPUs: peak RSS (VmHWM) | %.1f MB | - | - |\n", gpus, (double)hwm_kb(pid) / 1024.0);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	curl_multi_cleanup(m);
	curl_global_cleanup();
	return 0;
}
