/* Cancelling database work on stop (see include/gl/dbcancel.h). */
#include "gl/dbcancel.h"
#include "gl/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* how often the watcher looks for newly registered work once stopping */
#define ROUND_MS 100

static atomic_uint g_requested; /* enum gl_dbcancel_group mask */
/* the wake pipe's write end, used by the signal handler: -1 until made */
static atomic_int g_wake_fd = -1;
static int g_wake_rd = -1;
static pthread_t g_thread;
static int g_running;
static int g_quit;                      /* under g_mu */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct gl_dbcancel_slot *g_slots; /* under g_mu */
static _Thread_local struct gl_dbcancel_slot *t_current; /* this thread's slot begun */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Under g_mu: one round over the registered work. The lock is held across
 * PQcancel (a short connection to the server) so that no owner frees a
 * cancel object in use; owners only wait on it while the daemon stops. */
static void cancel_due(unsigned groups, int64_t now)
{
	for (struct gl_dbcancel_slot *s = g_slots; s; s = s->next) {
		char errbuf[256] = "";
		if (!(groups & (unsigned)s->group) || now < s->hold_until_ms)
			continue;
		if (s->n_sent && now - s->last_sent_ms < GL_DBCANCEL_RETRY_MS)
			continue;
		s->last_sent_ms = now;
		if (!s->cancel) {
			if (!s->n_sent++)
				gl_log(GL_LOG_WARN, "stop: %s: no cancel key for its connection; it runs to its end",
				       s->what);
			continue;
		}
		if (!PQcancel(s->cancel, errbuf, (int)sizeof errbuf))
			gl_log(GL_LOG_WARN, "stop: %s: cancel request to server pid %d failed: %.*s", s->what,
			       s->backend_pid, (int)strcspn(errbuf, "\n"), errbuf);
		else if (!s->n_sent)
			gl_log(GL_LOG_INFO, "stop: cancelling the database work of %s (server pid %d)", s->what,
			       s->backend_pid);
		else
			gl_log(GL_LOG_INFO, "stop: %s still busy after %d cancel requests: cancelling again", s->what,
			       s->n_sent);
		s->n_sent++;
	}
}

static void *watch(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p = {.fd = g_wake_rd, .events = POLLIN};
		char buf[64];
		int quit;
		/* idle until the stop; then rounds, for work that begins late or
		 * outlives its first cancel */
		if (poll(&p, 1, atomic_load(&g_requested) ? ROUND_MS : -1) > 0)
			while (read(g_wake_rd, buf, sizeof buf) > 0)
				;
		pthread_mutex_lock(&g_mu);
		quit = g_quit;
		if (!quit && atomic_load(&g_requested))
			cancel_due(atomic_load(&g_requested), mono_ms());
		pthread_mutex_unlock(&g_mu);
		if (quit)
			return NULL;
	}
}

int gl_dbcancel_start(struct gl_err *err)
{
	int fds[2], rc = 0, e;

	if (g_running)
		goto out;
	/* made once and never closed: a signal handler may be writing to it
	 * at any moment, and a closed descriptor could be reused by a file */
	if (g_wake_rd < 0) {
		if (pipe2(fds, O_CLOEXEC | O_NONBLOCK)) {
			rc = gl_err_set(err, GL_EIO, "stop watcher: pipe: %s", strerror(errno));
			goto out;
		}
		g_wake_rd = fds[0];
		atomic_store(&g_wake_fd, fds[1]);
	}
	g_quit = 0;
	if ((e = pthread_create(&g_thread, NULL, watch, NULL))) {
		rc = gl_err_set(err, GL_EIO, "stop watcher: thread: %s", strerror(e));
		goto out;
	}
	g_running = 1;
	/* a stop asked before the watcher ran must still wake it */
	if (atomic_load(&g_requested))
		(void)!write(atomic_load(&g_wake_fd), "s", 1);
out:
	return rc;
}

void gl_dbcancel_stop(void)
{
	if (!g_running)
		return;
	pthread_mutex_lock(&g_mu);
	g_quit = 1;
	pthread_mutex_unlock(&g_mu);
	(void)!write(atomic_load(&g_wake_fd), "q", 1);
	pthread_join(g_thread, NULL);
	g_running = 0;
}

void gl_dbcancel_request(unsigned groups)
{
	int fd;
	int saved = errno; /* a signal handler must leave errno as it found it */
	atomic_fetch_or(&g_requested, groups);
	fd = atomic_load(&g_wake_fd);
	if (fd >= 0)
		(void)!write(fd, "s", 1);
	errno = saved;
}

int gl_dbcancel_requested(unsigned groups)
{
	return (atomic_load(&g_requested) & groups) != 0;
}

void gl_dbcancel_begin(struct gl_dbcancel_slot *s, PGconn *c, int group, const char *what)
{
	gl_dbcancel_end(s); /* a slot begun twice stays linked once */
	memset(s, 0, sizeof *s);
	/* made here, by the connection's own thread: PQgetCancel reads the
	 * connection, which the watcher must never touch */
	s->cancel = PQgetCancel(c);
	s->backend_pid = PQbackendPID(c);
	s->group = group;
	snprintf(s->what, sizeof s->what, "%s", what);
	s->active = 1;
	pthread_mutex_lock(&g_mu);
	s->next = g_slots;
	if (g_slots)
		g_slots->prev = s;
	g_slots = s;
	pthread_mutex_unlock(&g_mu);
	t_current = s;
}

void gl_dbcancel_end(struct gl_dbcancel_slot *s)
{
	if (!s->active)
		return;
	pthread_mutex_lock(&g_mu);
	if (s->prev)
		s->prev->next = s->next;
	else
		g_slots = s->next;
	if (s->next)
		s->next->prev = s->prev;
	pthread_mutex_unlock(&g_mu);
	PQfreeCancel(s->cancel);
	s->cancel = NULL;
	s->prev = s->next = NULL;
	s->active = 0;
	if (t_current == s)
		t_current = NULL;
}

void gl_dbcancel_defer(void)
{
	struct gl_dbcancel_slot *s = t_current;
	if (!s)
		return;
	/* taking the lock waits for a PQcancel in progress, which returns once
	 * the server has signalled the backend: that cancel has then hit the
	 * statement that failed, or the idle session, which ignores it */
	pthread_mutex_lock(&g_mu);
	s->hold_until_ms = mono_ms() + GL_DBCANCEL_RETRY_MS;
	pthread_mutex_unlock(&g_mu);
}
