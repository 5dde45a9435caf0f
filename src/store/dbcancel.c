/* Cancelling database work on stop (see include/gl/dbcancel.h). */
#include "gl/dbcancel.h"
#include "db_int.h"
#include "gl/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
static pthread_cond_t g_sent = PTHREAD_COND_INITIALIZER; /* a sender finished; under g_mu */
static struct gl_dbcancel_slot *g_slots; /* under g_mu */
static _Thread_local struct gl_dbcancel_slot *t_current; /* this thread's slot begun */

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A slot's cancel key. Shared with the sender thread of a request in
 * flight, so that ending the slot never waits for PQcancel. */
struct gl_dbcancel_key {
	PGcancel *cancel;
	int refs;          /* under g_mu: the slot's, and its sender's while one runs */
	int in_flight;     /* under g_mu: a sender is in PQcancel */
	int64_t sent_ms;   /* under g_mu: when it started */
	char what[96];     /* for the sender's log line */
	int backend_pid;
};

/* Under g_mu. */
static void key_unref(struct gl_dbcancel_key *k)
{
	if (k && --k->refs == 0) {
		PQfreeCancel(k->cancel);
		free(k);
	}
}

/* One cancel request, on a thread of its own: PQcancel (libpq 15) connects
 * and reads the server's answer without any timeout. A thread that the
 * stop never waits for is the simplest bound on that: libpq 15 has no
 * non-blocking cancel (PQcancelStart is libpq 17) and the cancel key
 * inside PGcancel is not readable to write our own. A server that never
 * answers keeps this thread until the process exits; the watcher sends
 * no second request for the slot meanwhile and gives up on it (below). */
static void *send_cancel(void *arg)
{
	struct gl_dbcancel_key *k = arg;
	char errbuf[256] = "";
	int ok = PQcancel(k->cancel, errbuf, (int)sizeof errbuf);
	pthread_mutex_lock(&g_mu);
	if (!ok)
		gl_log(GL_LOG_WARN, "stop: %s: cancel request to server pid %d failed: %.*s", k->what, k->backend_pid,
		       (int)strcspn(errbuf, "\n"), errbuf);
	k->in_flight = 0;
	key_unref(k);
	pthread_cond_broadcast(&g_sent);
	pthread_mutex_unlock(&g_mu);
	return NULL;
}

/* Under g_mu: one round over the registered work. Nothing here blocks on
 * the server: each cancel request runs on its own detached thread. */
static void cancel_due(unsigned groups, int64_t now)
{
	for (struct gl_dbcancel_slot *s = g_slots; s; s = s->next) {
		struct gl_dbcancel_key *k = s->key;
		pthread_attr_t at;
		pthread_t th;
		int e;
		if (!(groups & (unsigned)s->group))
			continue;
		if (k && k->in_flight) {
			/* the server took the cancel connection and does not answer:
			 * it will not end the statement either. Shutting the socket
			 * down (not closing it: the owner still owns the descriptor)
			 * ends the owner's wait in libpq. */
			if (!s->shut && s->sock >= 0 && now - k->sent_ms >= GL_DBCANCEL_GIVEUP_MS) {
				s->shut = 1;
				gl_log(GL_LOG_WARN,
				       "stop: %s: no answer to the cancel request in %d s: shutting its connection down "
				       "(server pid %d)",
				       s->what, GL_DBCANCEL_GIVEUP_MS / 1000, s->backend_pid);
				(void)shutdown(s->sock, SHUT_RDWR);
			}
			continue;
		}
		if (now < s->hold_until_ms)
			continue;
		if (s->n_sent && now - s->last_sent_ms < GL_DBCANCEL_RETRY_MS)
			continue;
		s->last_sent_ms = now;
		if (!k) {
			/* nothing is sent: n_sent stays 0 (it was counted, and
			 * gl_dbcancel_sent() then took a statement_timeout of
			 * this work for the stop's cancel) */
			if (!s->no_key_warned) {
				s->no_key_warned = 1;
				gl_log(GL_LOG_WARN, "stop: %s: no cancel key for its connection; it runs to its end",
				       s->what);
			}
			continue;
		}
		if (!s->n_sent)
			gl_log(GL_LOG_INFO, "stop: cancelling the database work of %s (server pid %d)", s->what,
			       s->backend_pid);
		else
			gl_log(GL_LOG_INFO, "stop: %s still busy after %d cancel requests: cancelling again", s->what,
			       s->n_sent);
		s->n_sent++;
		k->in_flight = 1;
		k->sent_ms = now;
		k->refs++;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if ((e = pthread_create(&th, &at, send_cancel, k))) {
			gl_log(GL_LOG_WARN, "stop: %s: cannot start the cancel request: %s", s->what, strerror(e));
			k->in_flight = 0;
			k->refs--;
		}
		pthread_attr_destroy(&at);
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

void gl_dbcancel_begin(struct gl_dbcancel_slot *s, struct gl_store *st, int group, const char *what)
{
	PGconn *c = gl_db_conn(st);
	PGcancel *cancel;
	gl_dbcancel_end(s); /* a slot begun twice stays linked once */
	memset(s, 0, sizeof *s);
	/* made here, by the connection's own thread: PQgetCancel reads the
	 * connection, which the watcher must never touch */
	cancel = PQgetCancel(c);
	s->backend_pid = PQbackendPID(c);
	s->sock = PQsocket(c);
	s->group = group;
	snprintf(s->what, sizeof s->what, "%s", what);
	if (cancel) {
		s->key = gl_xcalloc(1, sizeof *s->key);
		s->key->cancel = cancel;
		s->key->refs = 1;
		s->key->backend_pid = s->backend_pid;
		snprintf(s->key->what, sizeof s->key->what, "%s", what);
	}
	s->active = 1;
	pthread_mutex_lock(&g_mu);
	s->next = g_slots;
	if (g_slots)
		g_slots->prev = s;
	g_slots = s;
	pthread_mutex_unlock(&g_mu);
	t_current = s;
}

int gl_dbcancel_sent(void)
{
	struct gl_dbcancel_slot *s = t_current;
	int sent;
	if (!s)
		return 0;
	pthread_mutex_lock(&g_mu);
	sent = s->n_sent > 0;
	pthread_mutex_unlock(&g_mu);
	return sent;
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
	/* a sender still in PQcancel keeps the key: never waited for here */
	key_unref(s->key);
	pthread_mutex_unlock(&g_mu);
	s->key = NULL;
	s->prev = s->next = NULL;
	s->active = 0;
	if (t_current == s)
		t_current = NULL;
}

void gl_dbcancel_defer(void)
{
	gl_dbcancel_defer_ms(GL_DBCANCEL_RETRY_MS);
}

void gl_dbcancel_defer_ms(int ms)
{
	struct gl_dbcancel_slot *s = t_current;
	struct timespec dl;
	if (!s)
		return;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += GL_DBCANCEL_GIVEUP_MS / 1000;
	/* a cancel request in progress returns once the server has signalled
	 * the backend: that cancel has then hit the statement that failed, or
	 * the idle session, which ignores it. One that does not return is left
	 * to the watcher's give-up. */
	pthread_mutex_lock(&g_mu);
	while (s->key && s->key->in_flight)
		if (pthread_cond_timedwait(&g_sent, &g_mu, &dl) == ETIMEDOUT)
			break;
	s->hold_until_ms = mono_ms() + ms;
	pthread_mutex_unlock(&g_mu);
}
