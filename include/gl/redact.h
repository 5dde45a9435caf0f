/* gpuledger — credentials out of command lines and error texts.
 *
 * A source's command line (sources.kube[].command, sacct extra_args, ...)
 * may carry a credential (`kubectl --token=...`, a URL with a password);
 * ingest_runs.input/error and the /metrics health labels show it to any
 * viewer, so it is blanked before it is stored there. Heuristic by nature:
 * it catches the usual spellings, not every possible one, and the advice
 * stays to keep secrets in files (a kubeconfig), not on command lines.
 *
 * Blanked (the value becomes "***"):
 *   - NAME=VALUE, -NAME=VALUE, --NAME=VALUE and the word after a bare
 *     -NAME / --NAME, when NAME contains (any case) token, passw, pwd,
 *     secret, key, auth, credential or cookie;
 *   - the word after "Bearer" or "Basic" (any case);
 *   - the password of a URL's user:password@ (a lone user@ in a URL:
 *     the user part, often a token);
 *   - a gpuledger token (glt_...).
 * Words are split at spaces, tabs and line breaks, which are kept.
 * Ownership: s is only read; out is appended to.
 */
#ifndef GL_REDACT_H
#define GL_REDACT_H

#include "gl/strbuf.h"

void gl_redact_secrets(const char *s, struct gl_strbuf *out);

#endif
