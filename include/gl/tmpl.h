/* gpuledger — {name} placeholders in command templates (the idle hook's
 * commands, budget alert commands): which names a template uses.
 *
 * Ownership: pure; nothing is allocated, bad is the caller's buffer.
 */
#ifndef GL_TMPL_H
#define GL_TMPL_H

#include <stddef.h>

/* 0 when every {name} in s is one of names (NULL-terminated); else -1 and
 * the first other one, braces included, in bad. A '{' with no '}' after it
 * is text. */
int gl_tmpl_check(const char *s, const char *const *names, char *bad, size_t nbad);

#endif
