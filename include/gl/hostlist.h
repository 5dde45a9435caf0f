/* gpuledger — Slurm hostlist expansion ("gpu[01-04,07]", "a[1-2]b[3-4]",
 * "d09n04s[01-02],d13n[03,05,07-08,16]", "None assigned").
 *
 * Pure. Ownership: gl_hostlist_expand() calls cb once per host name with a
 * NUL-terminated buffer valid only during the call.
 */
#ifndef GL_HOSTLIST_H
#define GL_HOSTLIST_H

#include "gl/common.h"

#define GL_HOSTLIST_MAX_HOSTS 65536 /* refuse absurd ranges rather than allocate */

typedef int (*gl_hostlist_cb)(const char *host, void *ud);

/* Expands s[0..n) calling cb for each host in order (zero padding kept).
 * "None assigned" and "" expand to nothing. A cb returning non-zero stops
 * the walk and that value is returned. Errors: -GL_EINVAL (syntax),
 * -GL_ERANGE (more than GL_HOSTLIST_MAX_HOSTS). */
int gl_hostlist_expand(const char *s, size_t n, gl_hostlist_cb cb, void *ud, struct gl_err *err) GL_MUSTCHECK;

#endif
