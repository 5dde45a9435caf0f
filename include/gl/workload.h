/* gpuledger — the vocabulary of workload types (docs/config.md,
 * workload_types): which job fields a rule may match and which names a
 * site may give a type. The rule itself (the first rule in force at a
 * job's start that matches it) is written once, in SQL (gl_workload_type,
 * sql/088), where the accounting queries resolve it.
 *
 * Pure: no I/O, no clock, no libpq. Ownership: nothing is allocated.
 */
#ifndef GL_WORKLOAD_H
#define GL_WORKLOAD_H

#include "gl/common.h"

/* The type of a job no rule matches: shown as such, never guessed. */
#define GL_WORKLOAD_UNCLASSIFIED "unclassified"
/* Longest type name a rule may give. */
#define GL_WORKLOAD_NAME_MAX 63

/* 1 when m is a field a workload rule may match: account, user,
 * partition, qos, wckey, namespace, label:<key>, endpoint or run_kind. */
int gl_workload_match_valid(const char *m);
/* 0 when name may be a workload type; else -GL_EINVAL with the reason in
 * err: empty, longer than GL_WORKLOAD_NAME_MAX, a character outside
 * [a-z0-9_.-] (a type is a name shown in CSV headers and URLs), or a name
 * reserved for a synthetic row ("unclassified", "__idle__", ...). */
int gl_workload_name_check(const char *name, struct gl_err *err);

#endif
