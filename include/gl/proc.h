/* gpuledger — run a child process without a shell, with a timeout, streaming
 * its stdout to a callback and keeping an excerpt of its stderr. The run ends
 * when the child exits (its pipes are then drained briefly), not when the
 * pipes close: a background grandchild holding them does not keep it waiting.
 *
 * Ownership: argv is borrowed. struct gl_proc_result is caller-owned; its
 * stderr excerpt is an inline array (no heap).
 */
#ifndef GL_PROC_H
#define GL_PROC_H

#include "gl/common.h"
#include "gl/strbuf.h"

#include <stddef.h>

struct gl_proc_opts {
	const char *run_as;     /* when euid is 0, run as this user via runuser(1); NULL = as we are */
	const char *const *env; /* extra "K=V" entries added to the environment; NULL-terminated or NULL */
	int timeout_s;          /* 0 = none; the child's process group is killed (SIGKILL) after it */
	const char *stdout_path;/* when set, stdout is appended to this file instead of the callback */
	/* called with each stdout chunk; return non-zero to stop (child is killed) */
	int (*on_stdout)(const char *buf, size_t n, void *ud);
	void *ud;
};

struct gl_proc_result {
	int exited;             /* 1 when the child exited normally */
	int status;             /* exit status, or the signal number when !exited */
	int timed_out;
	int stopped;            /* killed because the process is stopping (gl_proc_set_stop_flag) */
	char stderr_excerpt[1024]; /* first bytes of stderr */
	size_t stderr_bytes;
};

/* Returns 0 when the child ran (whatever its status), -GL_EIO when it could not
 * be started or waited for. An on_stdout stop is returned as that value. */
int gl_proc_run(const char *const *argv, const struct gl_proc_opts *opts, struct gl_proc_result *res,
		struct gl_err *err) GL_MUSTCHECK;

/* The daemon's stop flag, set by its signal handler (NULL: none). A command
 * still running when it is set is killed with its process group and
 * reported as stopped, so SIGTERM never waits for a slow or hung command;
 * loops of several commands ask gl_proc_stopping() between them. The flag
 * is borrowed for the life of the process. */
void gl_proc_set_stop_flag(volatile int *flag);
int gl_proc_stopping(void);

/* "exit 1" / "killed by signal 9" / "timed out after N s" for messages. */
void gl_proc_describe(const struct gl_proc_result *res, char *buf, size_t n);

/* Runs argv (env: extra "K=V" entries, NULL-terminated, or NULL) and appends
 * its stdout to out; 0 when it exited 0. Else an error naming argv[0]: its
 * exit or signal with the start of its stderr, a timeout, the daemon's
 * stop, or an output over cap bytes (the command is killed). out may hold
 * part of the output after an error: the caller finalises it. */
int gl_proc_capture(const char *const *argv, const char *const *env, int timeout_s, size_t cap, struct gl_strbuf *out,
		    struct gl_err *err) GL_MUSTCHECK;

#endif
