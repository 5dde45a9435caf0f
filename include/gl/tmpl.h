/* gpuledger — {name} placeholders in command templates (the idle hook's
 * commands, budget alert commands): which names a template uses.
 *
 * Ownership: pure. gl_tmpl_check allocates nothing (bad is the caller's
 * buffer); gl_tmpl_expand returns a string the caller frees.
 *
 * A placeholder is '{', a name of letters, digits and '_', and '}'. Any
 * other brace is text, so a template may carry a literal JSON body.
 */
#ifndef GL_TMPL_H
#define GL_TMPL_H

#include <stddef.h>

/* A placeholder's value. */
struct gl_tmpl_var {
	const char *name; /* without braces: "job_id" */
	const char *value; /* NULL expands to "" */
};

/* 0 when every placeholder in s is one of names (NULL-terminated); else -1
 * and the first other one, braces included, in bad. */
int gl_tmpl_check(const char *s, const char *const *names, char *bad, size_t nbad);

/* s with each placeholder named in vars replaced by its value; others stay
 * as written (gl_tmpl_check rejects them where the template is loaded). */
char *gl_tmpl_expand(const char *s, const struct gl_tmpl_var *vars, size_t nvars);

#endif
