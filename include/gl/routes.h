/* gpuledger — the route table and the handlers behind it.
 * Ownership: static table; handlers follow include/gl/server.h. */
#ifndef GL_ROUTES_H
#define GL_ROUTES_H

#include "gl/server.h"

/* Terminated by an entry with path == NULL. */
extern const struct gl_route gl_routes[];

int gl_route_healthz(struct gl_req *req, struct gl_resp *resp);
int gl_route_metrics(struct gl_req *req, struct gl_resp *resp);
int gl_route_jobs(struct gl_req *req, struct gl_resp *resp);
int gl_route_ingest_runs(struct gl_req *req, struct gl_resp *resp);

#define GL_VERSION "0.1.0"

#endif
