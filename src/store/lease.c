/* Leases and the fence (see include/gl/lease.h, sql/055). */
#include "gl/lease.h"
#include "db_int.h"
#include "gl/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void gl_lease_identity(const char *configured, int64_t start_s, char *instance, size_t in, char *holder, size_t hn)
{
	char host[64] = "localhost";
	uint32_t rnd = 0;
	(void)gethostname(host, sizeof host - 1);
	host[sizeof host - 1] = '\0';
	if (configured && *configured)
		snprintf(instance, in, "%s", configured);
	else
		snprintf(instance, in, "%s:%ld:%lld", host, (long)getpid(), (long long)start_s);
	/* a failed getrandom leaves 0: pid and start already tell processes
	 * of one host apart */
	(void)!getrandom(&rnd, sizeof rnd, GRND_NONBLOCK);
	snprintf(holder, hn, "%s/%s:%ld:%lld:%08x", instance, host, (long)getpid(), (long long)start_s, (unsigned)rnd);
}

/* One statement: take the lease when it is free, expired or ours (a new
 * holder gets a new token; the same holder keeps its own), set the fence
 * to what we hold (or clear it), and say who holds it otherwise. The
 * statement's snapshot precedes its own upsert, so "who" is the holder it
 * found. */
static const char take_sql[] =
	"WITH t AS ("
	" INSERT INTO leases AS l (name, holder, instance, token, ttl_s, acquired_at, renewed_at, expires_at)"
	" VALUES ($1, $2, $3, nextval('lease_tokens'), $4::integer, now(), now(), now() + $4::integer * interval '1 second')"
	" ON CONFLICT (name) DO UPDATE SET"
	"  token = CASE WHEN l.holder = EXCLUDED.holder THEN l.token ELSE EXCLUDED.token END,"
	"  acquired_at = CASE WHEN l.holder = EXCLUDED.holder THEN l.acquired_at ELSE now() END,"
	"  holder = EXCLUDED.holder, instance = EXCLUDED.instance, ttl_s = EXCLUDED.ttl_s,"
	"  renewed_at = now(), expires_at = EXCLUDED.expires_at"
	" WHERE l.holder = EXCLUDED.holder OR l.expires_at <= now()"
	" RETURNING token)"
	" SELECT (SELECT token FROM t),"
	"  (SELECT instance FROM leases WHERE name = $1),"
	"  set_config('gpuledger.fence', coalesce((SELECT token FROM t)::text || ':' || $1, ''), false)";

int gl_lease_take(struct gl_store *st, const char *name, const char *holder, const char *instance, int64_t ttl_s,
		  int64_t *token, char *who, size_t whon, struct gl_err *err)
{
	PGresult *r = NULL;
	char ttl[24];
	int rc;
	*token = 0;
	if (who && whon)
		who[0] = '\0';
	snprintf(ttl, sizeof ttl, "%lld", (long long)(ttl_s < GL_LEASE_MIN_TTL_S ? GL_LEASE_MIN_TTL_S : ttl_s));
	if ((rc = gl_db_query(gl_db_conn(st), take_sql, 4, (const char *[]){name, holder, instance, ttl}, &r, err)))
		return rc;
	if (!PQgetisnull(r, 0, 0))
		*token = atoll(PQgetvalue(r, 0, 0));
	else if (who && whon)
		snprintf(who, whon, "%s", PQgetisnull(r, 0, 1) ? "" : PQgetvalue(r, 0, 1));
	PQclear(r);
	return 0;
}

int gl_lease_unfence(struct gl_store *st, struct gl_err *err)
{
	return gl_db_exec(gl_db_conn(st), "SELECT set_config('gpuledger.fence', '', false)", err);
}

int gl_lease_renew_all(struct gl_store *store, const char *holder, int *n, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	PGresult *r = NULL;
	int rc = gl_db_query(c,
			     "UPDATE leases SET renewed_at = now(), expires_at = now() + ttl_s * interval '1 second'"
			     " WHERE holder = $1 AND expires_at > now()",
			     1, (const char *[]){holder}, &r, err);
	if (!rc && n)
		*n = atoi(PQcmdTuples(r));
	PQclear(r);
	return rc;
}

int gl_lease_release_all(struct gl_store *store, const char *holder, struct gl_err *err)
{
	PGconn *c = gl_db_conn(store);
	return gl_db_query(c, "UPDATE leases SET expires_at = now() WHERE holder = $1 AND expires_at > now()", 1,
			   (const char *[]){holder}, NULL, err);
}

struct gl_lease_keeper {
	char dsn[1024];
	char holder[GL_LEASE_HOLDER_MAX];
	int64_t period_ms;
	PGconn *c;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stopping, started;
	struct gl_log_limiter lim;
};

static int keeper_conn(struct gl_lease_keeper *k, struct gl_err *err)
{
	if (k->c && PQstatus(k->c) == CONNECTION_OK)
		return 0;
	if (k->c)
		return gl_db_reset(k->c, err);
	return gl_db_connect_dsn(k->dsn, &k->c, err);
}

static void *keeper_main(void *arg)
{
	struct gl_lease_keeper *k = arg;
	pthread_mutex_lock(&k->mu);
	while (!k->stopping) {
		struct timespec dl;
		struct gl_err err = {0};
		int rc;
		pthread_mutex_unlock(&k->mu);
		/* an expired lease is not renewed: it may be another's by now,
		 * and the job's next run takes it again if it is free */
		rc = keeper_conn(k, &err) ?: gl_lease_renew_all(gl_db_store(k->c), k->holder, NULL, &err);
		if (rc)
			gl_log_fail(&k->lim, (int64_t)time(NULL), GL_LOG_WARN, "lease: renewal: %s", err.msg);
		else
			gl_log_ok(&k->lim, "lease: renewal");
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += k->period_ms / 1000;
		dl.tv_nsec += (k->period_ms % 1000) * 1000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&k->mu);
		while (!k->stopping && pthread_cond_timedwait(&k->cv, &k->mu, &dl) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int gl_lease_keeper_start(const char *dsn, const char *holder, int64_t period_ms, struct gl_lease_keeper **out,
			  struct gl_err *err)
{
	struct gl_lease_keeper *k = gl_xcalloc(1, sizeof *k);
	int rc;
	*out = NULL;
	snprintf(k->dsn, sizeof k->dsn, "%s", dsn);
	snprintf(k->holder, sizeof k->holder, "%s", holder);
	k->period_ms = period_ms > 0 ? period_ms : 1000;
	k->lim = (struct gl_log_limiter)GL_LOG_LIMITER_INIT(60);
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	if ((rc = gl_db_connect_dsn(k->dsn, &k->c, err)))
		goto fail;
	if ((rc = pthread_create(&k->th, NULL, keeper_main, k)) != 0) {
		rc = gl_err_set(err, GL_EIO, "lease keeper: pthread_create: %s", strerror(rc));
		goto fail;
	}
	k->started = 1;
	*out = k;
	return 0;
fail:
	gl_lease_keeper_stop(k);
	return rc;
}

void gl_lease_keeper_stop(struct gl_lease_keeper *k)
{
	struct gl_err err = {0};
	if (!k)
		return;
	if (k->started) {
		pthread_mutex_lock(&k->mu);
		k->stopping = 1;
		pthread_cond_signal(&k->cv);
		pthread_mutex_unlock(&k->mu);
		pthread_join(k->th, NULL);
		/* the next instance takes over at its next try, not after a ttl */
		if (keeper_conn(k, &err) || gl_lease_release_all(gl_db_store(k->c), k->holder, &err))
			gl_log(GL_LOG_WARN, "lease: release at stop: %s (the leases expire by themselves)", err.msg);
	}
	PQfinish(k->c);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
	free(k);
}
