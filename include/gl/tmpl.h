/* gpuledger — {name} placeholders in command templates (the idle hook's
 * commands, budget alert commands): which names a template uses.
 *
 * Ownership: pure. gl_tmpl_check allocates nothing (bad is the caller's
 * buffer); gl_tmpl_expand returns a string the caller frees, gl_tmpl_split
 * an array of them (gl_tmpl_words_free).
 *
 * A placeholder is '{', a name of letters, digits and '_', and '}'. Any
 * other brace is text, so a template may carry a literal JSON body.
 */
#ifndef GL_TMPL_H
#define GL_TMPL_H

#include "gl/common.h"

#include <stddef.h>

/* A placeholder's value. */
struct gl_tmpl_var {
	const char *name; /* without braces: "job_id" */
	const char *value; /* NULL expands to "" */
};

/* 0 when every placeholder in s is one of names (NULL-terminated); else -1
 * and the first other one, braces included, in bad. */
int gl_tmpl_check(const char *s, const char *const *names, char *bad, size_t nbad);

/* Splits a command template into words, as every command template is run
 * (no shell): spaces, tabs and newlines separate words; '...' and "..."
 * group them (in "...", \" and \\ escape); a backslash outside quotes
 * escapes one character. *words is NULL-terminated, *n its length; free
 * with gl_tmpl_words_free. -GL_EINVAL ("unterminated ' quote") on an open
 * quote, with nothing allocated. */
int gl_tmpl_split(const char *tmpl, char ***words, size_t *n, struct gl_err *err) GL_MUSTCHECK;
void gl_tmpl_words_free(char **words);

/* s with each placeholder named in vars replaced by its value; others stay
 * as written (gl_tmpl_check rejects them where the template is loaded). */
char *gl_tmpl_expand(const char *s, const struct gl_tmpl_var *vars, size_t nvars);

/* A command (argv as a template splits it, placeholders unexpanded) that
 * hands a script or code written in the template to a shell or an
 * interpreter with a placeholder inside it: sh/bash/dash/zsh/ksh/... with
 * -c (or any option cluster holding c), python -c, perl/ruby/node/lua -e,
 * php -r; ssh HOST CMD (the remote shell reads the words joined); su,
 * runuser, flock -c CMD; sudo -s/-i. Programs are known by basename, and
 * wrappers are looked through (env [-i] [NAME=VALUE] [-S STRING], busybox,
 * nice, nohup, setsid, timeout, stdbuf, ionice, chroot, taskset, time,
 * doas, sudo). A value there (a job named "x; touch f", "$(...)") would be
 * read as code: -1 and why ("runs sh with the placeholder {job_name} inside
 * the script ..."). Placeholders passed as words of their own (sh -c
 * 'echo "$1"' sh {job_name}, or a script file) are safe: 0. */
int gl_tmpl_shell_check(const char *const *argv, size_t argc, char *why, size_t nwhy);

#endif
