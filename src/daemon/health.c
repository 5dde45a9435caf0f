/* Health registry (see include/gl/health.h). */
#include "gl/health.h"
#include "gl/audit.h"
#include "gl/redact.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct entry {
	char source[16];
	char cluster[64];
	char key[256];
	int up;
	int64_t last_ok_s, last_err_s;
	uint64_t consecutive_failures;
	double duration_s;
	char last_error[256];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry entries[GL_HEALTH_MAX];
static size_t n_entries;
static uint64_t dropped;
static struct {
	int reported, state;
	int64_t at_s;
	uint64_t publish_failures;
} anchor;

void gl_health_anchor_report(int state, int64_t at_s)
{
	pthread_mutex_lock(&mu);
	anchor.reported = 1;
	anchor.state = state;
	anchor.at_s = at_s;
	pthread_mutex_unlock(&mu);
}

void gl_health_anchor_publish_failed(void)
{
	pthread_mutex_lock(&mu);
	anchor.publish_failures++;
	pthread_mutex_unlock(&mu);
}

static void anchor_metrics(struct gl_strbuf *o)
{
	if (!anchor.reported)
		return;
	gl_strbuf_printf(o,
			 "# HELP gpuledger_audit_anchor_mismatch 1 when the audit chain did not match the last anchor of"
			 " audit.anchor_file at the last check (or the file could not be read).\n"
			 "# TYPE gpuledger_audit_anchor_mismatch gauge\ngpuledger_audit_anchor_mismatch %d\n"
			 "# HELP gpuledger_audit_anchor_last_check_timestamp_seconds Time of the last check of the audit chain"
			 " against its anchor.\n"
			 "# TYPE gpuledger_audit_anchor_last_check_timestamp_seconds gauge\n"
			 "gpuledger_audit_anchor_last_check_timestamp_seconds %lld\n"
			 "# HELP gpuledger_audit_anchor_publish_failures_total Audit anchors the anchor command failed to publish.\n"
			 "# TYPE gpuledger_audit_anchor_publish_failures_total counter\n"
			 "gpuledger_audit_anchor_publish_failures_total %llu\n",
			 anchor.state != 1, (long long)anchor.at_s, (unsigned long long)anchor.publish_failures);
}

#define LEASES_MAX 512
struct lease_entry {
	char name[160];
	char holder[128];
	int held;
};
static char instance_name[128];
static struct lease_entry leases[LEASES_MAX];
static size_t n_leases;

void gl_health_instance(const char *instance)
{
	pthread_mutex_lock(&mu);
	gl_audit_clean(instance ? instance : "", instance_name, sizeof instance_name);
	pthread_mutex_unlock(&mu);
}

void gl_health_lease(const char *lease, int held, const char *holder_instance)
{
	char name[sizeof leases[0].name];
	struct lease_entry *e = NULL;
	gl_audit_clean(lease, name, sizeof name);
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_leases && !e; i++)
		if (!strcmp(leases[i].name, name))
			e = &leases[i];
	if (!e && n_leases < LEASES_MAX) {
		e = &leases[n_leases++];
		memcpy(e->name, name, sizeof e->name);
	}
	if (e) {
		e->held = held;
		gl_audit_clean(holder_instance ? holder_instance : "", e->holder, sizeof e->holder);
	}
	pthread_mutex_unlock(&mu);
}

void gl_health_report(const char *source, const char *cluster, const char *key, int ok, int64_t at_s,
		      const char *err, double duration_s)
{
	struct entry *e = NULL, k;
	struct gl_strbuf target = GL_STRBUF_INIT;
	/* label values must be valid UTF-8 or Prometheus drops the whole
	 * scrape: cut on a character boundary, bad bytes become '?'; entries
	 * are found by the cleaned names, as stored. The key is a target's
	 * URL, whose user:password@ a viewer must not read either */
	gl_audit_clean(source, k.source, sizeof k.source);
	gl_audit_clean(cluster, k.cluster, sizeof k.cluster);
	gl_redact_secrets(key ? key : "", &target);
	gl_audit_clean(gl_strbuf_cstr(&target), k.key, sizeof k.key);
	gl_strbuf_fini(&target);
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_entries; i++)
		if (!strcmp(entries[i].source, k.source) && !strcmp(entries[i].cluster, k.cluster) &&
		    !strcmp(entries[i].key, k.key)) {
			e = &entries[i];
			break;
		}
	if (!e) {
		if (n_entries == GL_HEALTH_MAX) {
			dropped++;
			goto out;
		}
		e = &entries[n_entries++];
		memset(e, 0, sizeof *e);
		memcpy(e->source, k.source, sizeof e->source);
		memcpy(e->cluster, k.cluster, sizeof e->cluster);
		memcpy(e->key, k.key, sizeof e->key);
	}
	e->up = ok;
	e->duration_s = duration_s;
	if (ok) {
		e->last_ok_s = at_s;
		e->consecutive_failures = 0;
	} else {
		e->last_err_s = at_s;
		e->consecutive_failures++;
		/* often a command's raw stderr: any bytes at all; and often
		 * its command line, which may carry a credential (any viewer
		 * scrapes /metrics) */
		struct gl_strbuf why = GL_STRBUF_INIT;
		gl_redact_secrets(err ? err : "error", &why);
		gl_audit_clean(gl_strbuf_cstr(&why), e->last_error, sizeof e->last_error);
		gl_strbuf_fini(&why);
	}
out:
	pthread_mutex_unlock(&mu);
}

static void label_value(struct gl_strbuf *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			gl_strbuf_putc(o, '\\');
		if (*s == '\n') {
			gl_strbuf_puts(o, "\\n");
			continue;
		}
		gl_strbuf_putc(o, *s);
	}
}

/* source="...",cluster="...",target="...": the labels naming a source,
 * without braces so that a metric can add its own */
static void labels(struct gl_strbuf *o, const struct entry *e)
{
	gl_strbuf_puts(o, "source=\"");
	label_value(o, e->source);
	gl_strbuf_puts(o, "\",cluster=\"");
	label_value(o, e->cluster);
	gl_strbuf_puts(o, "\",target=\"");
	label_value(o, e->key);
	gl_strbuf_putc(o, '"');
}

void gl_health_metrics(struct gl_strbuf *o)
{
	static const char *const names[] = {"up", "last_success_timestamp_seconds", "last_error_timestamp_seconds",
					    "consecutive_failures", "last_duration_seconds"};
	static const char *const help[] = {
		"1 when the source's last run (or scrape of this target) succeeded.",
		"Time of the source's last successful run (0: none since the daemon started).",
		"Time of the source's last failed run (0: none since the daemon started).",
		"Failed runs of the source since its last success.",
		"Seconds the source's last run took.",
	};
	pthread_mutex_lock(&mu);
	for (size_t m = 0; m < GL_ARRAY_LEN(names); m++) {
		gl_strbuf_printf(o, "# HELP gpuledger_source_%s %s\n# TYPE gpuledger_source_%s gauge\n", names[m], help[m],
				 names[m]);
		for (size_t i = 0; i < n_entries; i++) {
			const struct entry *e = &entries[i];
			gl_strbuf_printf(o, "gpuledger_source_%s{", names[m]);
			labels(o, e);
			gl_strbuf_putc(o, '}');
			switch (m) {
			case 0: gl_strbuf_printf(o, " %d\n", e->up); break;
			case 1: gl_strbuf_printf(o, " %lld\n", (long long)e->last_ok_s); break;
			case 2: gl_strbuf_printf(o, " %lld\n", (long long)e->last_err_s); break;
			case 3: gl_strbuf_printf(o, " %llu\n", (unsigned long long)e->consecutive_failures); break;
			default: gl_strbuf_printf(o, " %.3f\n", e->duration_s); break;
			}
		}
	}
	gl_strbuf_puts(o, "# HELP gpuledger_source_last_error_info The last error of each failing source, as a label.\n"
			  "# TYPE gpuledger_source_last_error_info gauge\n");
	for (size_t i = 0; i < n_entries; i++) {
		const struct entry *e = &entries[i];
		if (e->up || !e->last_error[0])
			continue;
		gl_strbuf_puts(o, "gpuledger_source_last_error_info{");
		labels(o, e);
		gl_strbuf_puts(o, ",error=\"");
		label_value(o, e->last_error);
		gl_strbuf_puts(o, "\"} 1\n");
	}
	gl_strbuf_printf(o, "# HELP gpuledger_source_health_dropped_total Source targets not tracked because the registry"
			    " was full (4096 entries).\n"
			    "# TYPE gpuledger_source_health_dropped_total counter\ngpuledger_source_health_dropped_total %llu\n",
			 (unsigned long long)dropped);
	anchor_metrics(o);
	if (instance_name[0]) {
		gl_strbuf_puts(o, "# HELP gpuledger_instance_info This instance (server.instance_name, else host:pid:start).\n"
				  "# TYPE gpuledger_instance_info gauge\ngpuledger_instance_info{instance=\"");
		label_value(o, instance_name);
		gl_strbuf_puts(o, "\"} 1\n");
	}
	gl_strbuf_puts(o, "# HELP gpuledger_lease_held 1 when this instance runs the job (holds its lease).\n"
			  "# TYPE gpuledger_lease_held gauge\n");
	for (size_t i = 0; i < n_leases; i++) {
		gl_strbuf_puts(o, "gpuledger_lease_held{lease=\"");
		label_value(o, leases[i].name);
		gl_strbuf_printf(o, "\"} %d\n", leases[i].held);
	}
	gl_strbuf_puts(o, "# HELP gpuledger_lease_holder_info The instance that held the job's lease when last asked.\n"
			  "# TYPE gpuledger_lease_holder_info gauge\n");
	for (size_t i = 0; i < n_leases; i++) {
		if (!leases[i].holder[0])
			continue;
		gl_strbuf_puts(o, "gpuledger_lease_holder_info{lease=\"");
		label_value(o, leases[i].name);
		gl_strbuf_puts(o, "\",instance=\"");
		label_value(o, leases[i].holder);
		gl_strbuf_puts(o, "\"} 1\n");
	}
	pthread_mutex_unlock(&mu);
}

size_t gl_health_failing(void)
{
	size_t n = 0;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_entries; i++)
		n += !entries[i].up;
	pthread_mutex_unlock(&mu);
	return n;
}

void gl_health_reset(void)
{
	pthread_mutex_lock(&mu);
	n_entries = 0;
	dropped = 0;
	memset(&anchor, 0, sizeof anchor);
	n_leases = 0;
	instance_name[0] = '\0';
	pthread_mutex_unlock(&mu);
}
