/* gpuledger — the HTTP server's connection guard: who may open a connection
 * (per client address, in all, the share kept for probes) and the deadlines
 * a request must meet however steadily its bytes trickle in (a slowloris
 * resets an inactivity timeout with every byte; these it cannot).
 *
 * Pure bookkeeping: no sockets, no clock. The server calls it from
 * libmicrohttpd's callbacks and from its sweeper thread, passing the time
 * and functions that read a socket's received bytes and shut it down
 * (tests pass their own).
 *
 * A connection's life: open (accepted) -> for each request: headers (its
 * first byte: the accept for the first request, then the first byte seen
 * after the previous answer) -> body (headers complete) -> handling (the
 * request is whole; no deadline: the pools bound it) -> idle (answered;
 * only the inactivity timeout applies) -> ... -> close.
 *
 * Thread safety: every function may be called from any thread. The phase
 * calls are lock-free (one atomic word per connection, written by the
 * connection's own I/O thread; the sweeper only moves idle -> headers,
 * by compare-and-swap); open, close, check and sweep take one mutex.
 * Ownership: gl_connguard_new's result is freed by gl_connguard_free;
 * a record from gl_connguard_open is the guard's until gl_connguard_close.
 */
#ifndef GL_CONNGUARD_H
#define GL_CONNGUARD_H

#include "gl/common.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define GL_CONNGUARD_KEY_MAX 64

struct gl_connguard_cfg {
	size_t max_total;  /* server.max_connections */
	size_t per_addr;   /* server.max_connections_per_ip ... */
	size_t free_below; /* ... applied once this many connections are open */
	size_t reserved;   /* the last ones of max_total: probe routes only */
	int64_t header_ms; /* server.header_timeout_s */
	int64_t body_ms;   /* server.body_timeout_s */
};

enum gl_connguard_verdict {
	GL_CONNGUARD_ADMIT = 0,
	GL_CONNGUARD_REFUSE_ADDR, /* the address holds per_addr already */
	GL_CONNGUARD_REFUSE_FULL, /* max_total are open */
};

/* Why the sweeper closed a connection. */
enum gl_connguard_kill { GL_CONNGUARD_ALIVE = 0, GL_CONNGUARD_HEADER_LATE, GL_CONNGUARD_BODY_LATE };

struct gl_connguard;
struct gl_conn;

struct gl_connguard *gl_connguard_new(const struct gl_connguard_cfg *cfg);
void gl_connguard_free(struct gl_connguard *g);

/* The limits' key of a client address: IPv4 as text, an IPv4-mapped IPv6
 * address as its IPv4, other IPv6 as its /64 ("2001:db8:1:2::/64": a host
 * is given a /64, so per-address limits per /128 would be none).
 * key gets at least GL_CONNGUARD_KEY_MAX bytes. 0, or -1 for another family. */
int gl_connguard_key(const struct sockaddr *sa, char *key, size_t n);

/* May a new connection from key open now? Counts nothing. */
enum gl_connguard_verdict gl_connguard_check(struct gl_connguard *g, const char *key);
/* Records an accepted connection (fd: its socket, for the sweeper's
 * functions); it is in the reserved share when the others are taken. */
struct gl_conn *gl_connguard_open(struct gl_connguard *g, const char *key, int fd, int64_t now_ms);
/* Forgets it; returns why the sweeper closed it (GL_CONNGUARD_ALIVE: it
 * did not). c is freed. */
enum gl_connguard_kill gl_connguard_close(struct gl_connguard *g, struct gl_conn *c);
int gl_connguard_reserved(const struct gl_conn *c);
/* Whether (and why) the sweeper has closed c's socket. */
enum gl_connguard_kill gl_connguard_killed(const struct gl_conn *c);
size_t gl_connguard_count(struct gl_connguard *g, size_t *reserved);

/* Phases (see above). request_line: a request line has been read (its
 * headers' deadline runs from its first byte, at the latest now). */
void gl_connguard_request_line(struct gl_conn *c, int64_t now_ms);
void gl_connguard_headers_done(struct gl_conn *c, int64_t now_ms);
void gl_connguard_body_done(struct gl_conn *c);
/* Answered: rx is the socket's received byte count now, so bytes that come
 * later are known to be a new request. */
void gl_connguard_answered(struct gl_conn *c, uint64_t rx);
/* 1 while no request line has been read since the last answer (or the
 * accept): bytes received beyond *rx_mark then never made a request (a
 * refused or unfinished request line). */
int gl_connguard_between(const struct gl_conn *c, uint64_t *rx_mark);

/* rx: the socket's received bytes (0 on success, -1 when unknown).
 * kill: close the socket at once (shutdown), for why. Both are called
 * under the guard's lock: they must not block nor call the guard. */
typedef int (*gl_connguard_rx_fn)(int fd, uint64_t *rx);
typedef void (*gl_connguard_kill_fn)(void *cls, int fd, enum gl_connguard_kill why);
/* Closes the connections past a deadline; an idle connection that has
 * received bytes since its last answer starts its headers' deadline now. */
void gl_connguard_sweep(struct gl_connguard *g, int64_t now_ms, gl_connguard_rx_fn rx, gl_connguard_kill_fn kill,
			void *cls);

#endif
