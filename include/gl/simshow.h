/* gpuledger fleet simulator — what the fleet shows its observers: the
 * answers of `sacct`, `scontrol`, `sacctmgr` and `kubectl` to the argv they
 * are run with, and each node's dcgm-exporter /metrics, all at f->now_s.
 *
 * Pure (no I/O, no clock): the caller advances the fleet to now first.
 * Ownership: output is appended to caller-owned buffers.
 */
#ifndef GL_SIMSHOW_H
#define GL_SIMSHOW_H
#include "gl/simfleet.h"
#include "gl/strbuf.h"

/* Finished pods stay listed this long (wall seconds), as a cluster keeps
 * them until they are garbage-collected. */
#define GL_SIMSHOW_POD_TTL_S 900

/* Runs argv as the tool argv[0] names (its basename: sacct, scontrol,
 * sacctmgr, kubectl; `pods-history` lists every pod that ever ran, for
 * loading history): stdout to out, error text to errout. Returns the exit
 * status the real tool gives (0, or 1 for an unknown option, entity or
 * field, with a message as the tool's). Options the tools take and this
 * honours: sacct -S/--starttime -E/--endtime -o/--format --delimiter
 * -P/--parsable2 -p/--parsable -n/--noheader -X/--allocations
 * -D/--duplicates -M/--clusters -a/--allusers -j/--jobs; scontrol
 * [-o|--oneliner] show node[s] [NAME] | reservation[s]; sacctmgr
 * [-P|-p|-n] show|list event[s] events= clusters= start= end= format= nodes=;
 * kubectl get pods|nodes [-A|--all-namespaces|-n NS] -o json. Times are
 * written in UTC (the daemon runs them with TZ=UTC). */
int gl_simshow_command(const struct gl_simfleet_fleet *f, int argc, const char *const *argv, struct gl_strbuf *out,
		       struct gl_strbuf *errout);

/* dcgm-exporter's text for the node named node (0), or -1 when there is no
 * such node. Advances the node's energy counters to f->now_s. */
int gl_simshow_metrics(struct gl_simfleet_fleet *f, const char *node, struct gl_strbuf *out);

/* The exporter's Hostname label of a node: the node itself on Slurm, the
 * exporter pod's name on Kubernetes (as a DaemonSet's pods are named). */
void gl_simshow_exporter_host(const struct gl_simfleet_fleet *f, int node, char *buf, size_t n);

/* Slurm hostlist of nodes idx[0..n) (sorted, one name prefix, numeric
 * suffixes): gpu-a[001-003,007]. */
void gl_simshow_hostlist(const struct gl_simfleet_fleet *f, const int *idx, int n, struct gl_strbuf *out);

#endif
