/* gpuledger — credentials out of command lines and error texts.
 *
 * A source's command line (sources.kube[].command, sacct extra_args, ...)
 * may carry a credential (`kubectl --token=...`, a URL with a password);
 * ingest_runs.input/error and the /metrics health labels show it to any
 * viewer, so it is blanked before it is stored there. Heuristic by nature:
 * it catches the usual spellings, not every possible one, and the advice
 * stays to keep secrets in files (a kubeconfig), not on command lines.
 *
 * Blanked (the value becomes "***"; docs/security.md lists each rule with
 * the tool that needs it and what it leaves alone):
 *   - NAME=VALUE and NAME:VALUE (a header), also inside another option's
 *     value (--set=a.token=x, a URL query, a JSON object), and the word
 *     after a bare -NAME / --NAME (also quoted alone: "--token" "x") or
 *     "NAME:" (unless it reads as an error's prose), when NAME names a
 *     credential (token, passw, passphrase, pwd, secret, credential,
 *     cookie, oauth, an auth part but not author/authority, sig/signature,
 *     a credential key of a list: api_key, secret_key, private_key...); a
 *     quoted value goes whole, to its closing quote, and an unquoted one
 *     through backslash-escaped spaces;
 *   - openssl's pass:PASSWORD, sshpass -p PASSWORD / -pPASSWORD, a MySQL
 *     client's -pPASSWORD;
 *   - the word after "Bearer"/"Basic", and after a header's scheme word
 *     (Authorization: Bearer x);
 *   - the password of --user/--proxy-user/--cert USER:PASSWORD, and on a
 *     curl command line of -u/-U/-E USER:PASSWORD and the value of -b;
 *   - the password of a URL's user:password@ (a lone user@ in a URL:
 *     the user part, often a token);
 *   - gpuledger tokens (glt_...), GitHub/GitLab/Slack tokens by their
 *     prefix, JWTs.
 * Words are split at spaces, tabs and line breaks, which are kept. Running
 * it on its own output changes nothing for these spellings (tested), so
 * stored rows can be cleaned again (`gpuledger db redact`).
 * Ownership: s is only read; out is appended to.
 */
#ifndef GL_REDACT_H
#define GL_REDACT_H

#include "gl/strbuf.h"

void gl_redact_secrets(const char *s, struct gl_strbuf *out);

/* The same over a command's argv (the idle hook's commands, as stored and
 * logged): an element's meaning goes on into the next (--token, then its
 * value), and an element with a space in it is one value, as if quoted
 * ("X-Api-Key: a b" -> "X-Api-Key: ***"; every element is read in a quote
 * of its own, so a second pass reads it alike). Returns a new NULL-terminated
 * array of as many elements; the caller frees it with
 * gl_redact_argv_free(). argv is only read. */
char **gl_redact_argv(const char *const *argv);
void gl_redact_argv_free(char **argv);

#endif
