/* The real daemon reading 10,000 GPUs every 30 s from the sources beside
 * dcgm-exporter (issue 27): its CPU share (utime + stime over wall time,
 * /proc/<pid>/stat) and peak RSS (VmHWM), for
 *
 *   amd    an AMD Device Metrics Exporter per node (sources.dcgm targets
 *          with node=NAME), 1,250 nodes x 8 GPUs, served from loopback by
 *          this process: the label set of the real MI300X lines of
 *          tests/fixtures/dcgm/amd_dme_excerpts.prom, 16 families
 *          (SYNTHETIC values);
 *   nvsmi  nvidia-smi captures a node-side cron writes (sources.nvidia_smi,
 *          one entry: node h100-[0000-1249], file {node}.csv), 1,250 nodes
 *          x 8 GPUs, the issue's
 *          11-column --query-gpu CSV from the real H100 load row
 *          (tests/fixtures/nvsmi/h100_query_gpu.csv, SYNTHETIC UUIDs and
 *          values), rewritten by this process every interval as the cron
 *          would.
 *
 * The steady state is measured from the round after the first (the first
 * builds the inventory) over `rounds` intervals; the daemon kept up when
 * every GPU's last applied sample is within two intervals of the end (a
 * figure of its own: a daemon that falls behind uses less CPU).
 * Needs the env of bench/run.sh.
 *
 * Usage: bench_gpu_sources [amd|nvsmi|both [gpus [rounds [interval_s]]]]
 * (both 10000 3 30). */
#include "gl/strbuf.h"
#include "lib/promserve.h"
#include "lib/testlib.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GPUS_PER_NODE 8

static const char *const k_amd_families[] = {
	"gpu_gfx_activity", "gpu_umc_activity", "gpu_used_vram", "gpu_free_vram", "gpu_total_vram", "gpu_power_usage",
	"gpu_package_power", "gpu_average_package_power", "gpu_energy_consumed", "gpu_edge_temperature",
	"gpu_junction_temperature", "gpu_memory_temperature", "gpu_gfx_busy_instantaneous", "gpu_used_visible_vram",
	"pcie_bandwidth", "gpu_clock",
};

/* One node's AMD exporter page: its GPUs, no hostname label (the target's
 * node=NAME names the node, as for an exporter behind a node's own IP). */
static void amd_page(struct gl_strbuf *b, int node, int ngpus)
{
	for (size_t f = 0; f < GL_ARRAY_LEN(k_amd_families); f++) {
		const char *fam = k_amd_families[f];
		gl_strbuf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", fam, fam, fam);
		for (int g = 0; g < ngpus; g++)
			gl_strbuf_printf(b,
					 "%s{card_model=\"102-G30211-0C\",card_series=\"AMD Instinct MI300X OAM\",card_vendor=\"AMD\","
					 "cluster_name=\"\",container=\"\",driver_version=\"6.12.12\",gpu_compute_partition_type=\"spx\","
					 "gpu_id=\"%d\",gpu_memory_partition_type=\"nps1\",gpu_partition_id=\"0\","
					 "gpu_uuid=\"%04xff74-a100-1000-80e0-c6d49f5b%04x\",job_id=\"\",job_partition=\"\","
					 "job_user=\"\",namespace=\"\",pod=\"\",serial_number=\"69240%04d%d\","
					 "vbios_version=\"022.040.003.043.000001\"} %d\n",
					 fam, g, g, node, node, g, (int)((node * 31 + g * 7 + (int)f) % 100));
	}
}

/* One node's capture at time t, written whole then renamed (a reader never
 * sees half of it). */
static void nvsmi_capture(const char *dir, int node, int ngpus, time_t t, int round)
{
	char tmp[400], path[400], ts[32];
	FILE *f;
	snprintf(tmp, sizeof tmp, "%s/h100-%04d.csv.tmp", dir, node);
	snprintf(path, sizeof path, "%s/h100-%04d.csv", dir, node);
	strftime(ts, sizeof ts, "%Y/%m/%d %H:%M:%S", gmtime(&t));
	if (!(f = fopen(tmp, "w")))
		gl_test_die("capture file");
	fputs("timestamp, uuid, index, name, pci.bus_id, utilization.gpu [%], utilization.memory [%], "
	      "memory.used [MiB], memory.total [MiB], power.draw [W], enforced.power.limit [W]\n",
	      f);
	for (int g = 0; g < ngpus; g++)
		fprintf(f,
			"%s.%03d, GPU-%08x-0000-0000-0000-%012x, %d, NVIDIA H100 80GB HBM3, 00000000:%02X:00.0, %d %%, %d %%, "
			"%d MiB, 81559 MiB, %d.%02d W, 700.00 W\n",
			ts, 353 + g, node, g, g, 0x18 + g, (node * 37 + g * 11 + round) % 101, 11 + g, 19818 - g * 100,
			600 + g, g % 100);
	if (fclose(f) || rename(tmp, path))
		gl_test_die("capture file");
}

struct fleet {
	const char *kind;
	int gpus, nodes, interval;
	char dir[300];
	struct gl_test_server *srv;
	struct gl_strbuf cfg;
};

static void amd_setup(struct fleet *fl)
{
	int port;
	if (gl_test_server_start(&fl->srv, &port))
		gl_test_die("server");
	gl_strbuf_printf(&fl->cfg, "sources:\n  dcgm:\n    - cluster: amd\n      interval_s: %d\n      timeout_s: 10\n"
				   "      max_parallel: 64\n      targets: >-\n",
			 fl->interval);
	for (int n = 0; n < fl->nodes; n++) {
		struct gl_strbuf page = GL_STRBUF_INIT;
		char path[64];
		int ng = fl->gpus - n * GPUS_PER_NODE < GPUS_PER_NODE ? fl->gpus - n * GPUS_PER_NODE : GPUS_PER_NODE;
		amd_page(&page, n, ng);
		snprintf(path, sizeof path, "/mi300x-%04d/metrics", n);
		gl_test_server_route(fl->srv, path, page.p, page.len, 0);
		gl_strbuf_printf(&fl->cfg, "        http://127.0.0.1:%d%s node=mi300x-%04d\n", port, path, n);
		gl_strbuf_fini(&page);
	}
}

static void nvsmi_write_round(const struct fleet *fl, int round)
{
	time_t t = time(NULL);
	for (int n = 0; n < fl->nodes; n++) {
		int ng = fl->gpus - n * GPUS_PER_NODE < GPUS_PER_NODE ? fl->gpus - n * GPUS_PER_NODE : GPUS_PER_NODE;
		nvsmi_capture(fl->dir, n, ng, t, round);
	}
}

static void nvsmi_setup(struct fleet *fl)
{
	/* one entry for the fleet: a hostlist, {node} in the file */
	gl_strbuf_printf(&fl->cfg,
			 "sources:\n  nvidia_smi:\n    - cluster: nvsmi\n      node: h100-[0000-%04d]\n"
			 "      file: %s/{node}.csv\n      interval_s: %d\n",
			 fl->nodes - 1, fl->dir, fl->interval);
	nvsmi_write_round(fl, 0);
}

/* Seconds since the epoch of the oldest GPU's last applied sample. */
static long long oldest_sample(PGconn *c)
{
	return gl_test_qint(c, "SELECT coalesce(extract(epoch FROM min(last_sample_at))::bigint, 0) FROM dcgm_gpu_state");
}

static void run(const char *kind, int gpus, int rounds, int interval)
{
	struct fleet fl = {kind, gpus, (gpus + GPUS_PER_NODE - 1) / GPUS_PER_NODE, interval, "", NULL, GL_STRBUF_INIT};
	int nv = !strcmp(kind, "nvsmi");
	char dsn[512], db[64];
	struct gl_test_daemon d;
	double cpu0, cpu1, t0, t1, next;
	long hwm = 0;
	long long behind;
	PGconn *c;

	snprintf(db, sizeof db, "gl_bench_%s", kind);
	snprintf(fl.dir, sizeof fl.dir, "%s/bench-%s", getenv("GL_TEST_TMP") ? getenv("GL_TEST_TMP") : "/tmp", kind);
	mkdir(fl.dir, 0755);
	if (gl_test_db_fresh(db, dsn, sizeof dsn) || PQstatus(c = PQconnectdb(dsn)) != CONNECTION_OK)
		gl_test_die("database");
	gl_strbuf_puts(&fl.cfg, "log:\n  level: warn\n");
	if (nv)
		nvsmi_setup(&fl);
	else
		amd_setup(&fl);
	if (gl_test_daemon_start(&d, dsn, gl_strbuf_cstr(&fl.cfg), NULL))
		gl_test_die("daemon");
	/* the first round: every GPU in the inventory with a sample applied */
	t0 = gl_test_now_s();
	while (gl_test_qint(c, "SELECT count(*) FROM dcgm_gpu_state") < gpus) {
		if (gl_test_now_s() - t0 > 4.0 * interval)
			gl_test_die("the first round did not complete in 4 intervals");
		usleep(200 * 1000);
	}
	fprintf(stderr, "  %s: %d GPUs on %d nodes, first round complete after %.1f s\n", kind, gpus, fl.nodes,
		gl_test_now_s() - t0);
	gl_test_proc_usage(d.pid, &cpu0, &hwm);
	t0 = gl_test_now_s();
	next = t0;
	for (int r = 1; r <= rounds; r++) {
		next += interval;
		if (nv)
			nvsmi_write_round(&fl, r); /* the node-side cron */
		while (gl_test_now_s() < next)
			usleep(100 * 1000);
	}
	gl_test_proc_usage(d.pid, &cpu1, &hwm);
	t1 = gl_test_now_s();
	behind = (long long)time(NULL) - oldest_sample(c);
	fprintf(stderr, "  %s: oldest GPU's last sample %lld s before the end; %lld ingest runs\n", kind, behind,
		gl_test_qint(c, "SELECT count(*) FROM ingest_runs"));
	{
		double share = (cpu1 - cpu0) / (t1 - t0) * 100.0;
		const char *what = nv ? "nvidia-smi captures (sources.nvidia_smi, 1,250 nodes' files)"
				      : "AMD exporter scrapes (sources.dcgm, node=)";
		printf("| %s, %d GPUs / %d s: daemon CPU (%% of one core, %d rounds) | %.2f %% | 10 %% | %.3f |\n", what, gpus,
		       interval, rounds, share, share / 10.0);
		printf("| %s, %d GPUs: daemon peak RSS (VmHWM) | %.1f MB | 100 MB | %.3f |\n", what, gpus, (double)hwm / 1024.0,
		       (double)hwm / 1024.0 / 100.0);
		/* kept up: every GPU's last sample at most two intervals old */
		printf("| %s, %d GPUs: oldest GPU's last sample at the end | %lld s | %d s (2 intervals) | %.3f |\n", what,
		       gpus, behind, 2 * interval, (double)behind / (2.0 * interval));
	}
	gl_test_daemon_stop(&d);
	if (fl.srv)
		gl_test_server_stop(fl.srv);
	gl_strbuf_fini(&fl.cfg);
	PQfinish(c);
}

int main(int argc, char **argv)
{
	const char *kind = argc > 1 ? argv[1] : "both";
	int gpus = argc > 2 ? atoi(argv[2]) : 10000, rounds = argc > 3 ? atoi(argv[3]) : 3;
	int interval = argc > 4 ? atoi(argv[4]) : 30;

	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(kind, "amd") || !strcmp(kind, "both"))
		run("amd", gpus, rounds, interval);
	if (!strcmp(kind, "nvsmi") || !strcmp(kind, "both"))
		run("nvsmi", gpus, rounds, interval);
	return 0;
}
