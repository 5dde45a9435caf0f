/* Identifier byte bounds (see include/gl/bounds.h). */
#include "gl/bounds.h"

#include <stdio.h>

/* Kubernetes' own limits where it has them (object names are DNS
 * subdomains of at most 253 bytes, label values 63, namespaces 63; label
 * keys a 253-byte prefix, '/', 63), Linux's and Slurm's where they are
 * smaller than ours; otherwise room for any real value and well inside a
 * PostgreSQL index entry (~2.7 kB). The GPU model bound is the parsers'
 * fixed buffers' (GL_SACCT_GPU_TYPE_MAX, GL_NODEOBS_MODEL_MAX). */
static const struct {
	size_t max;
	const char *what;
} bounds[GL_BOUNDS__COUNT] = {
	[GL_BOUNDS_CLUSTER] = {255, "cluster names"},
	[GL_BOUNDS_NODE] = {255, "node and host names"},
	[GL_BOUNDS_USER] = {255, "user and group names"},
	[GL_BOUNDS_ACCOUNT] = {255, "accounts, partitions, QoS and WCKeys"},
	[GL_BOUNDS_NAMESPACE] = {63, "Kubernetes namespaces"},
	[GL_BOUNDS_OBJECT] = {253, "Kubernetes object names and kinds"},
	[GL_BOUNDS_LABEL] = {317, "label keys and values"},
	[GL_BOUNDS_JOB_ID] = {255, "job ids"},
	[GL_BOUNDS_JOB_NAME] = {1024, "job names"},
	[GL_BOUNDS_NAME] = {255, "policy and owner names"},
	[GL_BOUNDS_GPU_MODEL] = {63, "GPU model names"},
	[GL_BOUNDS_UUID] = {128, "uids and GPU UUIDs"},
	[GL_BOUNDS_TEXT] = {4096, "states, exit codes, reasons and TRES"},
	[GL_BOUNDS_NODE_LIST] = {65536, "node lists"},
};

size_t gl_bounds_max(enum gl_bounds k)
{
	return (unsigned)k < GL_BOUNDS__COUNT ? bounds[k].max : 0;
}

const char *gl_bounds_what(enum gl_bounds k)
{
	return (unsigned)k < GL_BOUNDS__COUNT ? bounds[k].what : "values";
}

int gl_bounds_check(enum gl_bounds k, size_t len, char *why, size_t n)
{
	if (len <= gl_bounds_max(k))
		return 0;
	snprintf(why, n, "%zu bytes, over the %zu-byte bound of %s", len, gl_bounds_max(k), gl_bounds_what(k));
	return -1;
}
