/* gpuledger test support: a tiny HTTP/1.1 server on 127.0.0.1 (port 0)
 * serving fixed bodies per path, optionally after a delay; unknown paths get
 * 404. One thread per connection, Connection: close. Used by the dcgm scrape
 * tests and the fleet benchmark to stand in for dcgm-exporter targets.
 *
 * Ownership: the server copies route bodies; gl_test_server_stop() waits for
 * the connection threads and frees everything.
 */
#ifndef GL_TEST_PROMSERVE_H
#define GL_TEST_PROMSERVE_H

#include <stddef.h>

struct gl_test_server;

/* Starts listening; *port is the bound port. Returns 0 or -1. */
int gl_test_server_start(struct gl_test_server **out, int *port);
/* Adds (or replaces) a route; delay_ms > 0 waits before answering (a slow
 * target). Safe while the server runs. */
void gl_test_server_route(struct gl_test_server *s, const char *path, const char *body, size_t len, int delay_ms);
/* Requests answered so far. */
size_t gl_test_server_requests(struct gl_test_server *s);
void gl_test_server_stop(struct gl_test_server *s);

#endif
