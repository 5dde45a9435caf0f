/* What the simulated fleet shows its observers (see include/gl/simshow.h). */
#include "gl/simshow.h"
#include "gl/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CPUS_PER_GPU 8
#define MEM_G_PER_GPU 64

/* ---- small helpers ---------------------------------------------------- */

static void put_time(struct gl_strbuf *b, int64_t t)
{
	char buf[40];
	gl_timeutil_format(t, buf, sizeof buf);
	buf[strlen(buf) - 1] = '\0'; /* Slurm writes local time, no zone: UTC here */
	gl_strbuf_puts(b, buf);
}

static void put_dur(struct gl_strbuf *b, int64_t s)
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		gl_strbuf_printf(b, "%lld-", (long long)(s / 86400));
	gl_strbuf_printf(b, "%02lld:%02lld:%02lld", (long long)(s % 86400 / 3600), (long long)(s % 3600 / 60),
			 (long long)(s % 60));
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* "2026-11-28", "2026-11-28T10:00[:00]", "now"; -1 when none fits */
static int parse_when(const struct gl_simfleet_fleet *f, const char *s, int64_t *out)
{
	char buf[40];
	size_t n = strlen(s);
	if (!strcasecmp(s, "now")) {
		*out = f->now_s;
		return 0;
	}
	if (n == 10)
		snprintf(buf, sizeof buf, "%sT00:00:00Z", s);
	else if (n == 16)
		snprintf(buf, sizeof buf, "%s:00Z", s);
	else if (n == 19)
		snprintf(buf, sizeof buf, "%sZ", s);
	else
		return -1;
	return gl_timeutil_parse(buf, strlen(buf), out) ? -1 : 0;
}

/* One option of argv: "--name=value", "--name value", "-X value", "-Xvalue".
 * Returns the option's index in opts (value in *val), -2 for a positional
 * argument (in *val), -1 for an unknown option. */
struct opt {
	const char *lng;
	char shrt;
	int has_arg;
};

static int next_opt(int argc, const char *const *argv, int *i, const struct opt *opts, size_t nopts,
		    const char **val)
{
	const char *a = argv[*i];
	*val = NULL;
	if (a[0] != '-' || a[1] == '\0') {
		*val = a;
		return -2;
	}
	for (size_t k = 0; k < nopts; k++) {
		size_t ln = opts[k].lng ? strlen(opts[k].lng) : 0;
		if (a[1] == '-' && ln && !strncmp(a + 2, opts[k].lng, ln) && (a[2 + ln] == '\0' || a[2 + ln] == '=')) {
			if (opts[k].has_arg) {
				if (a[2 + ln] == '=')
					*val = a + 3 + ln;
				else if (*i + 1 < argc)
					*val = argv[++*i];
				else
					return -1;
			} else if (a[2 + ln] == '=')
				return -1;
			return (int)k;
		}
		if (a[1] != '-' && opts[k].shrt && a[1] == opts[k].shrt) {
			if (opts[k].has_arg) {
				if (a[2])
					*val = a + 2;
				else if (*i + 1 < argc)
					*val = argv[++*i];
				else
					return -1;
			} else if (a[2])
				return -1;
			return (int)k;
		}
	}
	return -1;
}

static int bad_option(struct gl_strbuf *errout, const char *tool, const char *arg)
{
	gl_strbuf_printf(errout, "%s: unrecognized option '%s'\nTry \"%s --help\" for more information\n", tool, arg,
			 tool);
	return 1;
}

void gl_simshow_hostlist(const struct gl_simfleet_fleet *f, const int *idx, int n, struct gl_strbuf *out)
{
	char prefix[32];
	size_t plen;
	const char *name;
	if (n <= 0) {
		gl_strbuf_puts(out, "None assigned");
		return;
	}
	name = f->nodes[idx[0]].name;
	plen = strcspn(name, "0123456789");
	if (n == 1) {
		gl_strbuf_puts(out, name);
		return;
	}
	snprintf(prefix, sizeof prefix, "%.*s", (int)plen, name);
	gl_strbuf_printf(out, "%s[", prefix);
	for (int i = 0; i < n;) {
		int j = i;
		while (j + 1 < n && idx[j + 1] == idx[j] + 1)
			j++;
		gl_strbuf_printf(out, "%s%s", i ? "," : "", f->nodes[idx[i]].name + plen);
		if (j > i)
			gl_strbuf_printf(out, "-%s", f->nodes[idx[j]].name + plen);
		i = j + 1;
	}
	gl_strbuf_putc(out, ']');
}

static void job_hostlist(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, struct gl_strbuf *out)
{
	int idx[GL_SIMFLEET_MAX_JOB_NODES];
	for (int i = 0; i < j->nnodes; i++)
		idx[i] = j->node[i];
	/* whole-node jobs take nodes in order; sort anyway for the hostlist */
	for (int a = 1; a < j->nnodes; a++)
		for (int b = a; b > 0 && idx[b - 1] > idx[b]; b--) {
			int t = idx[b];
			idx[b] = idx[b - 1];
			idx[b - 1] = t;
		}
	gl_simshow_hostlist(f, idx, j->nnodes, out);
}

/* ---- sacct ------------------------------------------------------------ */

static const char *const sacct_fields[] = {
	"JobID",   "JobIDRaw",  "Cluster",    "Partition", "QOS",      "Account",   "Group",  "GID",
	"User",    "UID",       "Submit",     "Eligible",  "Start",    "End",       "Elapsed", "ElapsedRaw",
	"ExitCode", "State",    "NNodes",     "NCPUS",     "ReqCPUS",  "ReqMem",    "ReqTRES", "AllocTRES",
	"Timelimit", "NodeList", "DBIndex",   "Suspended", "WCKey",    "JobName",   "AllocCPUS",
};
enum {
	F_JOBID, F_JOBIDRAW, F_CLUSTER, F_PARTITION, F_QOS, F_ACCOUNT, F_GROUP, F_GID, F_USER, F_UID, F_SUBMIT,
	F_ELIGIBLE, F_START, F_END, F_ELAPSED, F_ELAPSEDRAW, F_EXITCODE, F_STATE, F_NNODES, F_NCPUS, F_REQCPUS,
	F_REQMEM, F_REQTRES, F_ALLOCTRES, F_TIMELIMIT, F_NODELIST, F_DBINDEX, F_SUSPENDED, F_WCKEY, F_JOBNAME,
	F_ALLOCCPUS, F_COUNT
};

static const char *const state_names[] = {"PENDING", "RUNNING", "COMPLETED", "FAILED", "REQUEUED", "CANCELLED"};

static unsigned name_uid(const char *s)
{
	unsigned h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return 10000 + h % 50000;
}

static int64_t job_nodes(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j)
{
	int gpn = f->cl[j->cluster].part[j->part].gpus_per_node;
	return j->nnodes ? j->nnodes : (j->gpus + gpn - 1) / gpn;
}

static void put_tres(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, int alloc, int step,
		     struct gl_strbuf *b)
{
	long long cpus = (long long)j->gpus * CPUS_PER_GPU, nodes = job_nodes(f, j);
	const char *gres = gl_sim_models[f->cl[j->cluster].part[j->part].model].gres;
	if (step) {
		gl_strbuf_printf(b, "cpu=%lld,mem=%lldG,node=%lld", cpus, (long long)j->gpus * MEM_G_PER_GPU, nodes);
		return;
	}
	gl_strbuf_printf(b, "billing=%lld,cpu=%lld,", cpus, cpus);
	if (alloc)
		gl_strbuf_printf(b, "gres/gpu:%s=%d,", gres, (int)j->gpus);
	gl_strbuf_printf(b, "gres/gpu=%d,mem=%lldG,node=%lld", (int)j->gpus, (long long)j->gpus * MEM_G_PER_GPU,
			 nodes);
}

/* step: 0 the allocation, 1 its batch step, 2 its extern step */
static void sacct_field(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, int field, int step,
			struct gl_strbuf *b)
{
	const struct gl_simtrace_pjob *pj = &f->tr->jobs[j->trace];
	const char *suffix = step == 1 ? ".batch" : step == 2 ? ".extern" : "";
	int started = j->start_s != GL_SIMFLEET_NONE;
	int64_t stop = j->end_s != GL_SIMFLEET_NONE ? j->end_s : f->now_s;

	switch (field) {
	case F_JOBID:
	case F_JOBIDRAW:
		gl_strbuf_printf(b, "%u%s", j->id, suffix);
		break;
	case F_CLUSTER:
		gl_strbuf_puts(b, f->cl[j->cluster].name);
		break;
	case F_PARTITION:
		if (!step)
			gl_strbuf_puts(b, f->cl[j->cluster].part[j->part].name);
		break;
	case F_QOS:
		if (!step)
			gl_strbuf_puts(b, "normal");
		break;
	case F_ACCOUNT:
		gl_strbuf_puts(b, pj->vc);
		break;
	case F_GROUP:
	case F_USER:
		if (!step)
			gl_strbuf_puts(b, pj->user);
		break;
	case F_GID:
	case F_UID:
		if (!step)
			gl_strbuf_printf(b, "%u", name_uid(pj->user));
		break;
	case F_SUBMIT:
	case F_ELIGIBLE:
		put_time(b, step ? j->start_s : j->submit_s);
		break;
	case F_START:
		if (started)
			put_time(b, j->start_s);
		else
			gl_strbuf_puts(b, j->end_s != GL_SIMFLEET_NONE ? "None" : "Unknown");
		break;
	case F_END:
		if (j->end_s != GL_SIMFLEET_NONE)
			put_time(b, j->end_s);
		else
			gl_strbuf_puts(b, "Unknown");
		break;
	case F_ELAPSED:
		put_dur(b, started ? stop - j->start_s : 0);
		break;
	case F_ELAPSEDRAW:
		gl_strbuf_printf(b, "%lld", (long long)(started ? stop - j->start_s : 0));
		break;
	case F_EXITCODE:
		gl_strbuf_puts(b, j->state == GL_SIMFLEET_FAILED ? "1:0" : "0:0");
		break;
	case F_STATE:
		if (j->state == GL_SIMFLEET_CANCELLED)
			gl_strbuf_printf(b, "CANCELLED by %u", name_uid(pj->user));
		else
			gl_strbuf_puts(b, state_names[j->state]);
		break;
	case F_NNODES:
		gl_strbuf_printf(b, "%lld", (long long)job_nodes(f, j));
		break;
	case F_NCPUS:
	case F_REQCPUS:
	case F_ALLOCCPUS:
		gl_strbuf_printf(b, "%d", (field != F_REQCPUS && !started) ? 0 : (int)j->gpus * CPUS_PER_GPU);
		break;
	case F_REQMEM:
		gl_strbuf_printf(b, "%dG", (int)j->gpus * MEM_G_PER_GPU);
		break;
	case F_REQTRES:
		if (!step)
			put_tres(f, j, 0, 0, b);
		break;
	case F_ALLOCTRES:
		if (started)
			put_tres(f, j, 1, step, b);
		break;
	case F_TIMELIMIT:
		if (!step)
			gl_strbuf_puts(b, "3-00:00:00");
		break;
	case F_NODELIST:
		job_hostlist(f, j, b);
		break;
	case F_DBINDEX:
		gl_strbuf_printf(b, "%u", j->dbindex);
		break;
	case F_SUSPENDED:
		gl_strbuf_puts(b, "00:00:00");
		break;
	case F_WCKEY:
		break;
	case F_JOBNAME:
		gl_strbuf_puts(b, step == 1 ? "batch" : step == 2 ? "extern" : "");
		if (!step)
			gl_strbuf_printf(b, "philly-%d", (int)j->trace);
		break;
	}
}

struct sacct_req {
	int fields[64], widths[64], nfields;
	int64_t from, to;
	const char *delim;
	int parsable, trailing, header, allocations, duplicates;
	char clusters[256];
	long long only_job;
};

static int sacct_format(struct sacct_req *r, const char *list, struct gl_strbuf *errout)
{
	char *dup = gl_xstrdup(list), *save = NULL;
	int rc = 0;
	r->nfields = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *pct = strchr(t, '%');
		int k;
		r->widths[r->nfields] = 10;
		if (pct) {
			*pct = '\0';
			r->widths[r->nfields] = atoi(pct + 1) > 0 ? atoi(pct + 1) : 10;
		}
		for (k = 0; k < F_COUNT && strcasecmp(t, sacct_fields[k]); k++)
			;
		if (k == F_COUNT || r->nfields == (int)GL_ARRAY_LEN(r->fields)) {
			gl_strbuf_printf(errout, "sacct: error: Invalid field requested: \"%s\"\n", t);
			rc = 1;
			break;
		}
		r->fields[r->nfields++] = k;
	}
	free(dup);
	return rc;
}

static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	if (!strcasecmp(list, "all"))
		return 1;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && !strncmp(p, name, n))
			return 1;
		p += len + (p[len] == ',');
	}
	return 0;
}

static void sacct_row(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, int step, const struct sacct_req *r,
		      struct gl_strbuf *out)
{
	for (int k = 0; k < r->nfields; k++) {
		if (r->parsable) {
			if (k)
				gl_strbuf_puts(out, r->delim);
			sacct_field(f, j, r->fields[k], step, out);
		} else {
			struct gl_strbuf cell = GL_STRBUF_INIT;
			int w = r->widths[k];
			sacct_field(f, j, r->fields[k], step, &cell);
			if ((int)cell.len > w)
				gl_strbuf_printf(out, "%s%.*s+", k ? " " : "", w - 1, gl_strbuf_cstr(&cell));
			else
				gl_strbuf_printf(out, "%s%*s", k ? " " : "", w, gl_strbuf_cstr(&cell));
			gl_strbuf_fini(&cell);
		}
	}
	if (r->parsable && r->trailing)
		gl_strbuf_puts(out, r->delim);
	gl_strbuf_putc(out, '\n');
}

static void sacct_header(const struct sacct_req *r, struct gl_strbuf *out)
{
	for (int k = 0; k < r->nfields; k++) {
		if (r->parsable)
			gl_strbuf_printf(out, "%s%s", k ? r->delim : "", sacct_fields[r->fields[k]]);
		else
			gl_strbuf_printf(out, "%s%*.*s", k ? " " : "", r->widths[k], r->widths[k],
					 sacct_fields[r->fields[k]]);
	}
	if (r->parsable && r->trailing)
		gl_strbuf_puts(out, r->delim);
	gl_strbuf_putc(out, '\n');
	if (!r->parsable) {
		for (int k = 0; k < r->nfields; k++) {
			gl_strbuf_puts(out, k ? " " : "");
			for (int i = 0; i < r->widths[k]; i++)
				gl_strbuf_putc(out, '-');
		}
		gl_strbuf_putc(out, '\n');
	}
}

static int sacct_args(const struct gl_simfleet_fleet *f, int argc, const char *const *argv, struct sacct_req *r,
		      struct gl_strbuf *errout)
{
	static const struct opt opts[] = {
		{"starttime", 'S', 1}, {"endtime", 'E', 1},   {"format", 'o', 1},      {"delimiter", 0, 1},
		{"parsable2", 'P', 0}, {"parsable", 'p', 0},  {"noheader", 'n', 0},    {"allocations", 'X', 0},
		{"duplicates", 'D', 0}, {"clusters", 'M', 1}, {"allusers", 'a', 0},    {"jobs", 'j', 1},
	};
	memset(r, 0, sizeof *r);
	r->delim = "|";
	r->header = 1;
	r->only_job = -1;
	r->to = f->now_s;
	/* sacct's default window: since midnight */
	r->from = f->now_s - f->now_s % 86400;
	snprintf(r->clusters, sizeof r->clusters, "%s", f->cl[0].name);
	sacct_format(r, "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode", errout);
	for (int i = 1; i < argc; i++) {
		const char *v;
		int k = next_opt(argc, argv, &i, opts, GL_ARRAY_LEN(opts), &v);
		switch (k) {
		case 0:
		case 1:
			if (parse_when(f, v, k == 0 ? &r->from : &r->to)) {
				gl_strbuf_printf(errout, "sacct: error: Invalid time specification (pos=0): %s\n", v);
				return 1;
			}
			break;
		case 2:
			if (sacct_format(r, v, errout))
				return 1;
			break;
		case 3:
			r->delim = v;
			break;
		case 4:
			r->parsable = 1;
			break;
		case 5:
			r->parsable = r->trailing = 1;
			break;
		case 6:
			r->header = 0;
			break;
		case 7:
			r->allocations = 1;
			break;
		case 8:
			r->duplicates = 1;
			break;
		case 9:
			snprintf(r->clusters, sizeof r->clusters, "%s", v);
			break;
		case 10:
			break;
		case 11:
			r->only_job = atoll(v);
			break;
		default:
			return bad_option(errout, "sacct", argv[i]);
		}
	}
	return 0;
}

/* Jobs active in [from, to] as sacct selects them without --state: submitted
 * by `to` and not ended before `from`. */
static int sacct_run(const struct gl_simfleet_fleet *f, int argc, const char *const *argv, struct gl_strbuf *out,
		     struct gl_strbuf *errout)
{
	struct sacct_req r;
	int rc = sacct_args(f, argc, argv, &r, errout);
	if (rc)
		return rc;
	if (r.header)
		sacct_header(&r, out);
	for (size_t i = 0; i < f->njobs; i++) {
		const struct gl_simfleet_job *j = &f->jobs[i];
		if (f->cl[j->cluster].kind != GL_SIMFLEET_SLURM || !in_list(r.clusters, f->cl[j->cluster].name))
			continue;
		if (j->submit_s > r.to || (j->end_s != GL_SIMFLEET_NONE && j->end_s < r.from))
			continue;
		if (r.only_job >= 0 && (long long)j->id != r.only_job)
			continue;
		/* without --duplicates only a job's last attempt is shown */
		if (!r.duplicates && j->state == GL_SIMFLEET_REQUEUED)
			continue;
		sacct_row(f, j, 0, &r, out);
		if (!r.allocations && j->start_s != GL_SIMFLEET_NONE) {
			sacct_row(f, j, 1, &r, out);
			sacct_row(f, j, 2, &r, out);
		}
	}
	return 0;
}

/* ---- scontrol ----------------------------------------------------------- */

static void scontrol_node(const struct gl_simfleet_fleet *f, int ni, int oneliner, struct gl_strbuf *out)
{
	const struct gl_simfleet_node *n = &f->nodes[ni];
	const struct gl_simfleet_part *p = &f->cl[n->cluster].part[n->part];
	const char *gres = gl_sim_models[p->model].gres;
	const char *sep = oneliner ? " " : "\n   ";
	int used = 0, cpus = n->ngpus * CPUS_PER_GPU;
	const char *st;
	char boot[40];

	for (int k = 0; k < n->ngpus; k++)
		used += n->slot[k] >= 0;
	st = used == 0 ? "IDLE" : used == n->ngpus ? "ALLOCATED" : "MIXED";
	gl_timeutil_format(f->p.start_s, boot, sizeof boot);
	boot[strlen(boot) - 1] = '\0';
	gl_strbuf_printf(out, "NodeName=%s Arch=x86_64 CoresPerSocket=%d%sCPUAlloc=%d CPUEfctv=%d CPUTot=%d CPULoad=%.2f",
			 n->name, cpus / 2, sep, used * CPUS_PER_GPU, cpus, cpus, used * 7.5);
	gl_strbuf_printf(out, "%sAvailableFeatures=%s ActiveFeatures=%s%sGres=gpu:%s:%d%sNodeAddr=%s NodeHostName=%s "
			      "Version=22.05.8",
			 sep, gres, gres, sep, gres, n->ngpus, sep, n->name, n->name);
	gl_strbuf_printf(out, "%sOS=Linux 5.15.0-91-generic #101-Ubuntu SMP %sRealMemory=%d AllocMem=%d FreeMem=%d "
			      "Sockets=2 Boards=1",
			 sep, sep, n->ngpus * MEM_G_PER_GPU * 1024, used * MEM_G_PER_GPU * 1024,
			 (n->ngpus - used) * MEM_G_PER_GPU * 1024);
	if (n->avail == GL_SIMFLEET_DOWN)
		gl_strbuf_printf(out, "%sState=DOWN+NOT_RESPONDING", sep);
	else if (n->avail == GL_SIMFLEET_DRAIN)
		gl_strbuf_printf(out, "%sState=%s+DRAIN", sep, st);
	else
		gl_strbuf_printf(out, "%sState=%s", sep, st);
	gl_strbuf_printf(out, " ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A%sPartitions=%s %sBootTime=",
			 sep, p->name, sep);
	put_time(out, f->p.start_s);
	gl_strbuf_puts(out, " SlurmdStartTime=");
	put_time(out, f->p.start_s);
	gl_strbuf_printf(out, "%sLastBusyTime=", sep);
	put_time(out, f->now_s);
	gl_strbuf_printf(out, "%sCfgTRES=cpu=%d,mem=%dG,billing=%d,gres/gpu=%d,gres/gpu:%s=%d%sAllocTRES=", sep, cpus,
			 n->ngpus * MEM_G_PER_GPU, cpus, n->ngpus, gres, n->ngpus, sep);
	if (used)
		gl_strbuf_printf(out, "cpu=%d,mem=%dG,gres/gpu=%d,gres/gpu:%s=%d", used * CPUS_PER_GPU,
				 used * MEM_G_PER_GPU, used, gres, used);
	gl_strbuf_printf(out, "%sCapWatts=n/a%sCurrentWatts=0 AveWatts=0%sExtSensorsJoules=n/s ExtSensorsWatts=0 "
			      "ExtSensorsTemp=n/s",
			 sep, sep, sep);
	if (n->avail != GL_SIMFLEET_UP) {
		gl_strbuf_printf(out, "%sReason=%s [%s@", sep, n->reason, n->avail == GL_SIMFLEET_DOWN ? "slurm" : "root");
		put_time(out, n->avail_since_s);
		gl_strbuf_putc(out, ']');
	}
	gl_strbuf_puts(out, oneliner ? "\n" : "\n\n");
}

static int scontrol_run(const struct gl_simfleet_fleet *f, int argc, const char *const *argv, struct gl_strbuf *out,
			struct gl_strbuf *errout)
{
	static const struct opt opts[] = {{"oneliner", 'o', 0}, {"clusters", 'M', 1}};
	const char *pos[4] = {0};
	int npos = 0, oneliner = 0;
	for (int i = 1; i < argc; i++) {
		const char *v;
		int k = next_opt(argc, argv, &i, opts, GL_ARRAY_LEN(opts), &v);
		if (k == 0)
			oneliner = 1;
		else if (k == -2 && npos < 4)
			pos[npos++] = v;
		else if (k != 1)
			return bad_option(errout, "scontrol", argv[i]);
	}
	if (npos < 2 || strcmp(pos[0], "show")) {
		gl_strbuf_puts(errout, "scontrol: the simulator answers `show node` and `show reservation` only\n");
		return 1;
	}
	if (!strcmp(pos[1], "node") || !strcmp(pos[1], "nodes")) {
		int shown = 0;
		for (int i = f->cl[0].first_node; i < f->cl[0].first_node + f->cl[0].nnodes; i++)
			if (npos < 3 || !strcmp(pos[2], f->nodes[i].name)) {
				scontrol_node(f, i, oneliner, out);
				shown++;
			}
		if (!shown) {
			gl_strbuf_printf(errout, "Node %s not found\n", pos[2]);
			return 1;
		}
		return 0;
	}
	if (!strcmp(pos[1], "reservation") || !strcmp(pos[1], "reservations")) {
		gl_strbuf_puts(out, "No reservations in the system\n");
		return 0;
	}
	gl_strbuf_printf(errout, "invalid entity:%s for keyword:show\n", pos[1]);
	return 1;
}

/* ---- sacctmgr ----------------------------------------------------------- */

static const char *const ev_fields[] = {"Cluster", "Event", "EventRaw", "NodeName", "ClusterNodes",
					"Start",   "End",   "Duration", "State",    "StateRaw",
					"Reason",  "User",  "TRES"};
static const char *const ev_headers[] = {"Cluster", "Event", "EventRaw", "NodeName", "Cluster Nodes",
					 "TimeStart", "TimeEnd", "Duration", "State",   "StateRaw",
					 "Reason",  "User",  "TRES"};

struct ev_row {
	int cluster_event;
	int node;
	const struct gl_simfleet_nodeevent *e;
};

static void node_tres(const struct gl_simfleet_fleet *f, int cpus, int gpus, const char *gres, struct gl_strbuf *b)
{
	(void)f;
	gl_strbuf_printf(b, "billing=%d,cpu=%d,gres/gpu:%s=%d,gres/gpu=%d,mem=%dG", cpus, cpus, gres, gpus, gpus,
			 gpus * MEM_G_PER_GPU);
}

static void ev_field(const struct gl_simfleet_fleet *f, const struct ev_row *r, int field, struct gl_strbuf *b)
{
	const struct gl_simfleet_cluster_def *c = &f->cl[0];
	const struct gl_simfleet_node *n = r->cluster_event ? NULL : &f->nodes[r->e->node];
	int64_t start = r->cluster_event ? f->p.start_s : r->e->start_s;
	int64_t end = r->cluster_event ? GL_SIMFLEET_NONE : r->e->end_s;

	switch (field) {
	case 0:
		gl_strbuf_puts(b, c->name);
		break;
	case 1:
		gl_strbuf_puts(b, r->cluster_event ? "Cluster" : "Node");
		break;
	case 2:
		gl_strbuf_puts(b, r->cluster_event ? "1" : "2");
		break;
	case 3:
		if (n)
			gl_strbuf_puts(b, n->name);
		break;
	case 4:
		if (r->cluster_event) {
			int idx[4096], k = 0;
			for (int i = c->first_node; i < c->first_node + c->nnodes && k < 4096; i++)
				idx[k++] = i;
			/* one hostlist per name prefix, as Slurm prints a mixed one */
			for (int i = 0; i < k;) {
				int j = i;
				size_t plen = strcspn(f->nodes[idx[i]].name, "0123456789");
				while (j < k && !strncmp(f->nodes[idx[j]].name, f->nodes[idx[i]].name, plen))
					j++;
				if (i)
					gl_strbuf_putc(b, ',');
				gl_simshow_hostlist(f, idx + i, j - i, b);
				i = j;
			}
		}
		break;
	case 5:
		put_time(b, start);
		break;
	case 6:
		if (end == GL_SIMFLEET_NONE)
			gl_strbuf_puts(b, "Unknown");
		else
			put_time(b, end);
		break;
	case 7:
		put_dur(b, (end == GL_SIMFLEET_NONE ? f->now_s : end) - start);
		break;
	case 8:
		if (n)
			gl_strbuf_puts(b, r->e->kind == GL_SIMFLEET_DOWN ? "DOWN" : "DRAIN");
		break;
	case 9:
		gl_strbuf_puts(b, n ? (r->e->kind == GL_SIMFLEET_DOWN ? "1" : "514") : "0");
		break;
	case 10:
		gl_strbuf_puts(b, n ? r->e->reason : "Cluster Registered TRES");
		break;
	case 11:
		if (n)
			gl_strbuf_puts(b, r->e->kind == GL_SIMFLEET_DOWN ? "slurm(64030)" : "root(0)");
		break;
	case 12:
		if (n) {
			const struct gl_simfleet_part *p = &c->part[n->part];
			node_tres(f, n->ngpus * CPUS_PER_GPU, n->ngpus, gl_sim_models[p->model].gres, b);
		} else {
			int cpus = c->gpus * CPUS_PER_GPU;
			gl_strbuf_printf(b, "billing=%d,cpu=%d,energy=0,fs/disk=0", cpus, cpus);
			for (int i = 0; i < c->nparts; i++)
				gl_strbuf_printf(b, ",gres/gpu:%s=%d", gl_sim_models[c->part[i].model].gres,
						 c->part[i].nnodes * c->part[i].gpus_per_node);
			gl_strbuf_printf(b, ",gres/gpu=%d,mem=%dG,node=%d,pages=0,vmem=0", c->gpus,
					 c->gpus * MEM_G_PER_GPU, c->nnodes);
		}
		break;
	}
}

static int ev_format(const char *list, int *fields, int *n, struct gl_strbuf *errout)
{
	char *dup = gl_xstrdup(list), *save = NULL;
	*n = 0;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t k;
		for (k = 0; k < GL_ARRAY_LEN(ev_fields); k++)
			if (!strcasecmp(t, ev_fields[k]) || !strcasecmp(t, ev_headers[k]))
				break;
		if (k == GL_ARRAY_LEN(ev_fields) || *n == 32) {
			gl_strbuf_printf(errout, " Unknown field '%s'\n", t);
			free(dup);
			return 1;
		}
		fields[(*n)++] = (int)k;
	}
	free(dup);
	return 0;
}

static void ev_print(const struct gl_simfleet_fleet *f, const struct ev_row *r, const int *fields, int nf, int trailing,
		     struct gl_strbuf *out)
{
	for (int k = 0; k < nf; k++) {
		if (k)
			gl_strbuf_putc(out, '|');
		ev_field(f, r, fields[k], out);
	}
	gl_strbuf_puts(out, trailing ? "|\n" : "\n");
}

static int sacctmgr_run(const struct gl_simfleet_fleet *f, int argc, const char *const *argv, struct gl_strbuf *out,
			struct gl_strbuf *errout)
{
	static const struct opt opts[] = {{"parsable2", 'P', 0}, {"parsable", 'p', 0}, {"noheader", 'n', 0}};
	int fields[32], nf = 0, header = 1, trailing = 0, verb = 0, noun = 0, want_cluster = 1, want_node = 1;
	int64_t from = 0, to = f->now_s;
	const char *clusters = "all", *nodes = NULL;

	ev_format("Cluster,NodeName,Start,End,State,Reason,User", fields, &nf, errout);
	for (int i = 1; i < argc; i++) {
		const char *v, *eq;
		int k = next_opt(argc, argv, &i, opts, GL_ARRAY_LEN(opts), &v);
		if (k == 0)
			;
		else if (k == 1)
			trailing = 1;
		else if (k == 2)
			header = 0;
		else if (k == -1)
			return bad_option(errout, "sacctmgr", argv[i]);
		else if (k == -2 && !verb && (!strcmp(v, "show") || !strcmp(v, "list")))
			verb = 1;
		else if (k == -2 && verb && !noun && (!strcasecmp(v, "event") || !strcasecmp(v, "events")))
			noun = 1;
		else if (k == -2 && noun && (eq = strchr(v, '='))) {
			size_t kl = (size_t)(eq - v);
			const char *val = eq + 1;
			if (kl == 6 && !strncasecmp(v, "events", 6)) {
				want_cluster = in_list(val, "cluster") || !strcasecmp(val, "all");
				want_node = in_list(val, "node") || !strcasecmp(val, "all");
			} else if (kl == 8 && !strncasecmp(v, "clusters", 8))
				clusters = val;
			else if (kl == 5 && !strncasecmp(v, "nodes", 5))
				nodes = val;
			else if (kl == 5 && !strncasecmp(v, "start", 5) && !parse_when(f, val, &from))
				;
			else if (kl == 3 && !strncasecmp(v, "end", 3) && !parse_when(f, val, &to))
				;
			else if (kl == 6 && !strncasecmp(v, "format", 6)) {
				if (ev_format(val, fields, &nf, errout))
					return 1;
			} else {
				gl_strbuf_printf(errout, " Unknown condition: %s\n", v);
				return 1;
			}
		} else {
			gl_strbuf_printf(errout, " Unknown option: %s\n", v ? v : argv[i]);
			return 1;
		}
	}
	if (!noun) {
		gl_strbuf_puts(errout, "sacctmgr: the simulator answers `show event` only\n");
		return 1;
	}
	if (header) {
		for (int k = 0; k < nf; k++)
			gl_strbuf_printf(out, "%s%s", k ? "|" : "", ev_headers[fields[k]]);
		gl_strbuf_puts(out, trailing ? "|\n" : "\n");
	}
	if (!in_list(clusters, f->cl[0].name))
		return 0;
	if (want_cluster && f->p.start_s <= to) {
		struct ev_row r = {1, -1, NULL};
		ev_print(f, &r, fields, nf, trailing, out);
	}
	for (size_t i = 0; want_node && i < f->nevents; i++) {
		const struct gl_simfleet_nodeevent *e = &f->events[i];
		struct ev_row r = {0, e->node, e};
		if (f->nodes[e->node].cluster != 0 || e->start_s > to || (e->end_s != GL_SIMFLEET_NONE && e->end_s < from))
			continue;
		if (nodes && !in_list(nodes, f->nodes[e->node].name))
			continue;
		ev_print(f, &r, fields, nf, trailing, out);
	}
	return 0;
}

/* ---- kubectl ------------------------------------------------------------ */

static void pod_name(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, struct gl_strbuf *b)
{
	const struct gl_simfleet_namespace *ns = &gl_sim_namespaces[j->owner];
	(void)f;
	gl_strbuf_printf(b, "%s-%u-%x", ns->project, j->id, (j->id * 2654435761u) >> 20);
}

static void json_time(struct gl_strbuf *b, const char *key, int64_t t)
{
	char buf[40];
	gl_timeutil_format(t, buf, sizeof buf);
	gl_strbuf_printf(b, "\"%s\":\"%s\"", key, buf);
}

static void pod_json(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, struct gl_strbuf *b)
{
	const struct gl_simfleet_namespace *ns = &gl_sim_namespaces[j->owner];
	const struct gl_simtrace_pod *tp = &f->tr->pods[j->trace];
	int ended = j->end_s != GL_SIMFLEET_NONE, started = j->start_s != GL_SIMFLEET_NONE;
	const char *phase = !started ? "Pending"
			    : !ended ? "Running"
			    : j->state == GL_SIMFLEET_COMPLETED ? "Succeeded"
							   : "Failed";

	gl_strbuf_puts(b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"");
	pod_name(f, j, b);
	gl_strbuf_printf(b, "\",\"namespace\":\"%s\",\"uid\":\"5e1a%04x-%04x-4000-8000-%012x\",", ns->name,
			 (unsigned)(j->id >> 16) & 0xffff, (unsigned)j->id & 0xffff, j->dbindex);
	json_time(b, "creationTimestamp", j->submit_s);
	gl_strbuf_printf(b, ",\"labels\":{\"team\":\"%s\",\"project\":\"%s\",\"cost-center\":\"%s\",\"qos\":\"%s\"},",
			 ns->team, ns->project, ns->cost_center, tp->qos);
	gl_strbuf_printf(b, "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"%s-%u\","
			    "\"controller\":true}]},",
			 ns->project, j->trace);
	gl_strbuf_puts(b, "\"spec\":{");
	if (started)
		gl_strbuf_printf(b, "\"nodeName\":\"%s\",", f->nodes[j->node[0]].name);
	gl_strbuf_printf(b, "\"restartPolicy\":\"Never\",\"schedulerName\":\"default-scheduler\",\"containers\":[{"
			    "\"name\":\"main\",\"image\":\"registry.local/%s:latest\",\"resources\":{"
			    "\"limits\":{\"cpu\":\"%d\",\"memory\":\"%dGi\",\"nvidia.com/gpu\":\"%d\"},"
			    "\"requests\":{\"cpu\":\"%d\",\"memory\":\"%dGi\",\"nvidia.com/gpu\":\"%d\"}}}]},",
			 ns->project, (int)j->gpus * CPUS_PER_GPU, (int)j->gpus * MEM_G_PER_GPU, (int)j->gpus,
			 (int)j->gpus * CPUS_PER_GPU, (int)j->gpus * MEM_G_PER_GPU, (int)j->gpus);
	gl_strbuf_printf(b, "\"status\":{\"phase\":\"%s\",", phase);
	if (j->state == GL_SIMFLEET_REQUEUED)
		gl_strbuf_puts(b, "\"reason\":\"NodeLost\",\"message\":\"Node running the pod became unreachable\",");
	gl_strbuf_printf(b, "\"qosClass\":\"Guaranteed\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"%s\"",
			 started ? "True" : "False");
	if (started) {
		gl_strbuf_putc(b, ',');
		json_time(b, "lastTransitionTime", j->start_s);
	} else
		gl_strbuf_puts(b, ",\"reason\":\"Unschedulable\",\"message\":\"0/1 nodes are available: Insufficient "
				  "nvidia.com/gpu.\"");
	gl_strbuf_puts(b, "}]");
	if (started) {
		gl_strbuf_putc(b, ',');
		json_time(b, "startTime", j->start_s);
		gl_strbuf_puts(b, ",\"containerStatuses\":[{\"name\":\"main\",\"ready\":");
		gl_strbuf_puts(b, ended ? "false" : "true");
		gl_strbuf_puts(b, ",\"restartCount\":0,\"state\":{");
		if (ended) {
			gl_strbuf_printf(b, "\"terminated\":{\"exitCode\":%d,\"reason\":\"%s\",",
					 j->state == GL_SIMFLEET_COMPLETED ? 0 : 1,
					 j->state == GL_SIMFLEET_COMPLETED ? "Completed" : "Error");
			json_time(b, "startedAt", j->start_s);
			gl_strbuf_putc(b, ',');
			json_time(b, "finishedAt", j->end_s);
			gl_strbuf_putc(b, '}');
		} else {
			gl_strbuf_puts(b, "\"running\":{");
			json_time(b, "startedAt", j->start_s);
			gl_strbuf_putc(b, '}');
		}
		gl_strbuf_puts(b, "}}]");
	}
	gl_strbuf_puts(b, "}}");
}

static void node_json(const struct gl_simfleet_fleet *f, int ni, struct gl_strbuf *b)
{
	const struct gl_simfleet_node *n = &f->nodes[ni];
	const struct gl_simfleet_part *p = &f->cl[n->cluster].part[n->part];
	const struct gl_simfleet_model *m = &gl_sim_models[p->model];
	int cpus = n->ngpus * CPUS_PER_GPU, memg = n->ngpus * MEM_G_PER_GPU;

	gl_strbuf_printf(b, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"uid\":\"node-%s\",",
			 n->name, n->name);
	json_time(b, "creationTimestamp", f->p.start_s);
	gl_strbuf_printf(b, ",\"labels\":{\"kubernetes.io/hostname\":\"%s\",\"node-pool\":\"%s\","
			    "\"nvidia.com/gpu.product\":\"%s\",\"nvidia.com/gpu.count\":\"%d\","
			    "\"nvidia.com/gpu.memory\":\"%d\"}},\"spec\":{",
			 n->name, p->name, m->label, n->ngpus, m->fb_mib);
	if (n->avail == GL_SIMFLEET_DRAIN) {
		gl_strbuf_puts(b, "\"unschedulable\":true,\"taints\":[{\"key\":\"node.kubernetes.io/unschedulable\","
				  "\"effect\":\"NoSchedule\",");
		json_time(b, "timeAdded", n->avail_since_s);
		gl_strbuf_puts(b, "}]");
	} else if (n->avail == GL_SIMFLEET_DOWN) {
		gl_strbuf_puts(b, "\"taints\":[{\"key\":\"node.kubernetes.io/unreachable\",\"effect\":\"NoExecute\",");
		json_time(b, "timeAdded", n->avail_since_s);
		gl_strbuf_puts(b, "}]");
	}
	gl_strbuf_printf(b, "},\"status\":{\"capacity\":{\"cpu\":\"%d\",\"memory\":\"%dGi\",\"pods\":\"110\","
			    "\"nvidia.com/gpu\":\"%d\"},\"allocatable\":{\"cpu\":\"%d\",\"memory\":\"%dGi\","
			    "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\","
			    "\"status\":\"%s\",",
			 cpus, memg, n->ngpus, cpus, memg, n->ngpus, n->avail == GL_SIMFLEET_DOWN ? "False" : "True");
	json_time(b, "lastHeartbeatTime", f->now_s);
	gl_strbuf_putc(b, ',');
	json_time(b, "lastTransitionTime", n->avail == GL_SIMFLEET_DRAIN ? f->p.start_s : n->avail_since_s);
	gl_strbuf_printf(b, ",\"reason\":\"%s\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1.29.4\"}}}",
			 n->avail == GL_SIMFLEET_DOWN ? "KubeletNotReady" : "KubeletReady");
}

static int pod_listed(const struct gl_simfleet_fleet *f, const struct gl_simfleet_job *j, int history, const char *ns)
{
	if (f->cl[j->cluster].kind != GL_SIMFLEET_KUBE || j->state == GL_SIMFLEET_CANCELLED)
		return 0;
	if (ns && strcmp(ns, gl_sim_namespaces[j->owner].name))
		return 0;
	if (history)
		return j->start_s != GL_SIMFLEET_NONE;
	return j->end_s == GL_SIMFLEET_NONE || j->end_s >= f->now_s - GL_SIMSHOW_POD_TTL_S;
}

static int kubectl_run(const struct gl_simfleet_fleet *f, int argc, const char *const *argv, int history,
		       struct gl_strbuf *out, struct gl_strbuf *errout)
{
	static const struct opt opts[] = {{"all-namespaces", 'A', 0}, {"namespace", 'n', 1}, {"output", 'o', 1}};
	const char *pos[3] = {0}, *ns = NULL, *fmt = NULL;
	int npos = 0, first = 1;
	for (int i = 1; i < argc; i++) {
		const char *v;
		int k = next_opt(argc, argv, &i, opts, GL_ARRAY_LEN(opts), &v);
		if (k == 0)
			ns = NULL;
		else if (k == 1)
			ns = v;
		else if (k == 2)
			fmt = v;
		else if (k == -2 && npos < 3)
			pos[npos++] = v;
		else
			return bad_option(errout, "kubectl", argv[i]);
	}
	if (history) {
		pos[0] = "get";
		pos[1] = "pods";
		npos = 2;
		fmt = "json";
	}
	if (npos != 2 || strcmp(pos[0], "get")) {
		gl_strbuf_puts(errout, "error: the simulator answers `kubectl get pods|nodes -o json` only\n");
		return 1;
	}
	if (!fmt || strcmp(fmt, "json")) {
		gl_strbuf_printf(errout, "error: unable to match a printer suitable for the output format \"%s\"\n",
				 fmt ? fmt : "");
		return 1;
	}
	gl_strbuf_puts(out, "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
	if (!strcmp(pos[1], "pods") || !strcmp(pos[1], "pod") || !strcmp(pos[1], "po")) {
		for (size_t i = 0; i < f->njobs; i++)
			if (pod_listed(f, &f->jobs[i], history, ns)) {
				gl_strbuf_puts(out, first ? "\n" : ",\n");
				pod_json(f, &f->jobs[i], out);
				first = 0;
			}
	} else if (!strcmp(pos[1], "nodes") || !strcmp(pos[1], "node") || !strcmp(pos[1], "no")) {
		for (int i = f->cl[1].first_node; i < f->cl[1].first_node + f->cl[1].nnodes; i++) {
			gl_strbuf_puts(out, first ? "\n" : ",\n");
			node_json(f, i, out);
			first = 0;
		}
	} else {
		gl_strbuf_reset(out);
		gl_strbuf_printf(errout, "error: the server doesn't have a resource type \"%s\"\n", pos[1]);
		return 1;
	}
	gl_strbuf_puts(out, "\n],\"metadata\":{\"resourceVersion\":\"\"}}\n");
	return 0;
}

int gl_simshow_command(const struct gl_simfleet_fleet *f, int argc, const char *const *argv, struct gl_strbuf *out,
		       struct gl_strbuf *errout)
{
	const char *tool = argc > 0 ? base_name(argv[0]) : "";
	if (!strcmp(tool, "sacct"))
		return sacct_run(f, argc, argv, out, errout);
	if (!strcmp(tool, "scontrol"))
		return scontrol_run(f, argc, argv, out, errout);
	if (!strcmp(tool, "sacctmgr"))
		return sacctmgr_run(f, argc, argv, out, errout);
	if (!strcmp(tool, "kubectl"))
		return kubectl_run(f, argc, argv, 0, out, errout);
	if (!strcmp(tool, "pods-history"))
		return kubectl_run(f, argc, argv, 1, out, errout);
	gl_strbuf_printf(errout, "gpuledger-sim: no tool called '%s' (sacct, scontrol, sacctmgr, kubectl)\n", tool);
	return 127;
}

/* ---- dcgm-exporter ------------------------------------------------------ */

struct metric {
	const char *name, *type, *help;
};
static const struct metric metrics[] = {
	{"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."},
	{"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."},
	{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."},
	{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."},
	{"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."},
	{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."},
	{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."},
	{"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."},
};

void gl_simshow_exporter_host(const struct gl_simfleet_fleet *f, int node, char *buf, size_t n)
{
	if (f->cl[f->nodes[node].cluster].kind == GL_SIMFLEET_SLURM)
		snprintf(buf, n, "%s", f->nodes[node].name);
	else
		snprintf(buf, n, "nvidia-dcgm-exporter-%05x", (name_uid(f->nodes[node].name) * 7919u) & 0xfffff);
}

struct gpu_sample {
	double util, active, power, fb_used;
	const struct gl_simfleet_job *job;
};

static struct gpu_sample sample(const struct gl_simfleet_fleet *f, const struct gl_simfleet_node *n, int k)
{
	const struct gl_simfleet_model *m = &gl_sim_models[f->cl[n->cluster].part[n->part].model];
	struct gpu_sample s = {0};
	int32_t ji = n->slot[k];
	if (ji >= 0 && f->jobs[ji].state == GL_SIMFLEET_RUNNING) {
		s.job = &f->jobs[ji];
		s.util = gl_simfleet_util(f, s.job, k, f->now_s);
		/* a job holds its memory whether it computes or not */
		s.fb_used = m->fb_mib * (0.35 + 0.5 * (double)((s.job->id + (unsigned)k) % 7) / 6.0);
	}
	/* an idle engine reads slightly above zero (docs: 0.00006 seen) */
	s.active = s.util > 0 ? s.util / 100.0 : 0.00006;
	s.power = m->idle_w + (m->max_w - m->idle_w) * s.util / 100.0;
	return s;
}

static void labels(const struct gl_simfleet_fleet *f, const struct gl_simfleet_node *n, int k, const struct gpu_sample *s,
		   const char *host, struct gl_strbuf *b)
{
	const struct gl_simfleet_model *m = &gl_sim_models[f->cl[n->cluster].part[n->part].model];
	unsigned h = name_uid(n->name) * 2654435761u + (unsigned)k * 40503u;
	gl_strbuf_printf(b,
			 "{gpu=\"%d\",UUID=\"GPU-%08x-%04x-%04x-%04x-%012x\",pci_bus_id=\"00000000:%02X:00.0\","
			 "device=\"nvidia%d\",modelName=\"%s\",Hostname=\"%s\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"",
			 k, h, (h >> 7) & 0xffff, 0x4000 | (k & 0xfff), 0x8000 | ((h >> 3) & 0xfff),
			 (unsigned)name_uid(n->name), 0x18 + k * 0x10, k, m->product, host);
	if (f->cl[n->cluster].kind == GL_SIMFLEET_SLURM) {
		if (s->job)
			gl_strbuf_printf(b, ",hpc_job=\"%u\"", s->job->id);
	} else if (s->job) {
		gl_strbuf_printf(b, ",container=\"main\",namespace=\"%s\",pod=\"", gl_sim_namespaces[s->job->owner].name);
		pod_name(f, s->job, b);
		gl_strbuf_putc(b, '"');
	} else
		gl_strbuf_puts(b, ",container=\"\",namespace=\"\",pod=\"\"");
	gl_strbuf_putc(b, '}');
}

static void value(const struct gl_simfleet_node *n, int k, int metric, const struct gpu_sample *s, int fb_mib,
		  struct gl_strbuf *b)
{
	switch (metric) {
	case 0:
		gl_strbuf_printf(b, "%d", s->util > 0 ? 1410 : 210);
		break;
	case 1:
		gl_strbuf_printf(b, "%d", s->util > 0 ? 1593 : 405);
		break;
	case 2:
		gl_strbuf_printf(b, "%d", 32 + (int)(s->util * 0.4));
		break;
	case 3:
		gl_strbuf_printf(b, "%.3f", s->power);
		break;
	case 4:
		gl_strbuf_printf(b, "%.0f", n->energy_mj[k]);
		break;
	case 5:
		gl_strbuf_printf(b, "%d", (int)s->util);
		break;
	case 6:
		gl_strbuf_printf(b, "%d", (int)(s->util * 0.3));
		break;
	case 7:
		gl_strbuf_printf(b, "%d", fb_mib - (int)s->fb_used);
		break;
	case 8:
		gl_strbuf_printf(b, "%d", (int)s->fb_used);
		break;
	case 9:
		gl_strbuf_puts(b, "0");
		break;
	case 10:
		gl_strbuf_printf(b, "%.6f", s->active);
		break;
	}
}

int gl_simshow_metrics(struct gl_simfleet_fleet *f, const char *node, struct gl_strbuf *out)
{
	struct gpu_sample s[GL_SIMFLEET_MAX_GPUS_PER_NODE];
	struct gl_simfleet_node *n = NULL;
	char host[64];
	int fb_mib;

	for (int i = 0; i < f->nnodes && !n; i++)
		if (!strcmp(f->nodes[i].name, node))
			n = &f->nodes[i];
	if (!n)
		return -1;
	fb_mib = gl_sim_models[f->cl[n->cluster].part[n->part].model].fb_mib;
	gl_simshow_exporter_host(f, (int)(n - f->nodes), host, sizeof host);
	for (int k = 0; k < n->ngpus; k++) {
		s[k] = sample(f, n, k);
		if (f->now_s > n->energy_at_s[k]) {
			/* power held since the last scrape: the counter only grows */
			n->energy_mj[k] += s[k].power * 1000.0 * (double)(f->now_s - n->energy_at_s[k]);
			n->energy_at_s[k] = f->now_s;
		}
	}
	for (size_t m = 0; m < GL_ARRAY_LEN(metrics); m++) {
		gl_strbuf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", metrics[m].name, metrics[m].help, metrics[m].name,
				 metrics[m].type);
		for (int k = 0; k < n->ngpus; k++) {
			gl_strbuf_puts(out, metrics[m].name);
			labels(f, n, k, &s[k], host, out);
			gl_strbuf_putc(out, ' ');
			value(n, k, (int)m, &s[k], fb_mib, out);
			gl_strbuf_putc(out, '\n');
		}
	}
	return 0;
}
