/* Child processes (see include/gl/proc.h). */
#include "gl/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static volatile int *g_stop_flag;

void gl_proc_set_stop_flag(volatile int *flag)
{
	g_stop_flag = flag;
}

int gl_proc_stopping(void)
{
	return g_stop_flag && *g_stop_flag;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gl_proc_run(const char *const *argv, const struct gl_proc_opts *opts, struct gl_proc_result *res,
		struct gl_err *err)
{
	static const struct gl_proc_opts none = {0};
	const char **full = NULL;
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, rc = 0, stop = 0;
	size_t n = 0, k = 0;
	pid_t pid = -1;
	int64_t deadline;
	char buf[65536];

	if (!opts)
		opts = &none;
	memset(res, 0, sizeof *res);
	while (argv[n])
		n++;
	full = gl_xcalloc(n + 8, sizeof *full);
	if (opts->run_as && geteuid() == 0) {
		full[k++] = "runuser";
		full[k++] = "-u";
		full[k++] = opts->run_as;
		full[k++] = "--";
	}
	for (size_t i = 0; i < n; i++)
		full[k++] = argv[i];
	full[k] = NULL;

	if (pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
		rc = gl_err_set(err, GL_EIO, "%s: pipe: %s", argv[0], strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = gl_err_set(err, GL_EIO, "%s: fork: %s", argv[0], strerror(errno));
		goto out;
	}
	if (pid == 0) {
		/* child: own process group so a timeout kills grandchildren too */
		setpgid(0, 0);
		if (opts->stdout_path) {
			int fd = open(opts->stdout_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (fd < 0)
				_exit(126);
			dup2(fd, 1);
		} else {
			dup2(out[1], 1);
		}
		dup2(errp[1], 2);
		if (opts->env)
			for (size_t i = 0; opts->env[i]; i++)
				putenv((char *)opts->env[i]);
		execvp(full[0], (char *const *)full);
		dprintf(2, "exec %s: %s", full[0], strerror(errno));
		_exit(127);
	}
	/* the parent sets the group too: a kill(-pid) right after fork (a stop
	 * already requested) must not race the child's own setpgid */
	setpgid(pid, pid);
	close(out[1]);
	close(errp[1]);
	out[1] = errp[1] = -1;
	deadline = opts->timeout_s > 0 ? mono_ms() + (int64_t)opts->timeout_s * 1000 : INT64_MAX;
	{
		/* The child's exit ends the wait, not the pipes closing: a command
		 * that leaves a background process holding them (`daemon &`) has
		 * finished. After the exit the pipes are drained for a moment (what
		 * the child wrote is already in them) and then left. */
		struct pollfd pf[2] = {{out[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
		int open_fds = 2, reaped = 0, st = 0;
		int64_t drain_until = 0;
		/* until the child is reaped, too: one that closed its output and
		 * kept running (`exec >&-; sleep`) is still bound by the deadline */
		while (open_fds > 0 || !reaped) {
			int64_t now = mono_ms(), left, slice;
			int pr;
			if (!reaped) {
				pid_t w = waitpid(pid, &st, WNOHANG);
				if (w == pid) {
					reaped = 1;
					drain_until = now + 100;
				} else if (w < 0 && errno != EINTR) {
					rc = gl_err_set(err, GL_EIO, "%s: waitpid: %s", argv[0], strerror(errno));
					goto out;
				}
			}
			if (reaped) {
				left = drain_until - now;
				if (left <= 0)
					break;
				slice = left;
			} else {
				left = deadline == INT64_MAX ? INT64_MAX : deadline - now;
				if (left <= 0 || gl_proc_stopping()) {
					if (left <= 0)
						res->timed_out = 1;
					else
						res->stopped = 1;
					kill(-pid, SIGKILL);
					break;
				}
				/* no pipe event tells of the exit: look again soon */
				slice = left < 50 ? left : 50;
			}
			pr = poll(pf, 2, (int)slice);
			if (pr < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			if (pr == 0 && reaped)
				break; /* drained: nothing more is waiting */
			for (int i = 0; i < 2; i++) {
				ssize_t r;
				if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				r = read(pf[i].fd, buf, sizeof buf);
				if (r <= 0) {
					if (r < 0 && errno == EINTR)
						continue;
					pf[i].fd = -1;
					open_fds--;
					continue;
				}
				if (i == 0) {
					if (!stop && opts->on_stdout)
						stop = opts->on_stdout(buf, (size_t)r, opts->ud);
					if (stop) {
						kill(-pid, SIGKILL);
						pf[0].fd = -1;
						open_fds--;
					}
				} else {
					size_t room = sizeof res->stderr_excerpt - 1 - res->stderr_bytes;
					if (res->stderr_bytes < sizeof res->stderr_excerpt - 1) {
						size_t c = (size_t)r < room ? (size_t)r : room;
						memcpy(res->stderr_excerpt + res->stderr_bytes, buf, c);
						res->stderr_bytes += c;
						res->stderr_excerpt[res->stderr_bytes] = '\0';
					}
				}
			}
		}
		while (!reaped && waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				rc = gl_err_set(err, GL_EIO, "%s: waitpid: %s", argv[0], strerror(errno));
				goto out;
			}
		}
		if (WIFEXITED(st)) {
			res->exited = 1;
			res->status = WEXITSTATUS(st);
		} else {
			res->status = WIFSIGNALED(st) ? WTERMSIG(st) : -1;
		}
	}
	/* trim trailing newlines of the excerpt for one-line messages */
	while (res->stderr_bytes && (res->stderr_excerpt[res->stderr_bytes - 1] == '\n'))
		res->stderr_excerpt[--res->stderr_bytes] = '\0';
	if (stop)
		rc = stop;
out:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (errp[i] >= 0)
			close(errp[i]);
	}
	free(full);
	return rc;
}

void gl_proc_describe(const struct gl_proc_result *res, char *buf, size_t n)
{
	if (res->timed_out)
		snprintf(buf, n, "timed out");
	else if (res->stopped)
		snprintf(buf, n, "stopped (the daemon is stopping)");
	else if (res->exited)
		snprintf(buf, n, "exit %d", res->status);
	else
		snprintf(buf, n, "killed by signal %d", res->status);
}

struct capture {
	struct gl_strbuf *out;
	size_t cap;
	int over;
};

static int on_capture(const char *buf, size_t n, void *ud)
{
	struct capture *k = ud;
	if (k->out->len + n > k->cap) {
		k->over = 1;
		return -GL_ERANGE; /* gl_proc_run kills the command */
	}
	gl_strbuf_append(k->out, buf, n);
	return 0;
}

int gl_proc_capture(const char *const *argv, const char *const *env, int timeout_s, size_t cap, struct gl_strbuf *out,
		    struct gl_err *err)
{
	struct capture k = {out, cap, 0};
	struct gl_proc_opts po = {0};
	struct gl_proc_result pr;
	char how[64];
	int rc;

	po.env = env;
	po.timeout_s = timeout_s;
	po.on_stdout = on_capture;
	po.ud = &k;
	rc = gl_proc_run(argv, &po, &pr, err);
	if (k.over)
		return gl_err_set(err, GL_ERANGE, "%s: output over %zu bytes", argv[0], cap);
	if (rc)
		return rc;
	if (!pr.exited || pr.status != 0) {
		gl_proc_describe(&pr, how, sizeof how);
		return gl_err_set(err, GL_EIO, "%s: %s%s%.400s", argv[0], how, pr.stderr_bytes ? ": " : "",
				  pr.stderr_excerpt);
	}
	return 0;
}
