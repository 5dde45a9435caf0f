/* Placeholders in command templates (see include/gl/tmpl.h). */
#include "gl/tmpl.h"

#include "gl/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the placeholder at p ("{name}"), 0 when p starts none:
 * only a name of letters, digits and '_' makes one, so literal braces in
 * a command (a JSON body: {"a":1}) stay text. */
static size_t placeholder_len(const char *p)
{
	size_t i = 1;
	if (*p != '{')
		return 0;
	while ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= '0' && p[i] <= '9') ||
	       p[i] == '_')
		i++;
	return i > 1 && p[i] == '}' ? i + 1 : 0;
}

int gl_tmpl_check(const char *s, const char *const *names, char *bad, size_t nbad)
{
	for (const char *p = s; p && *p; p++) {
		size_t n = placeholder_len(p), i;
		if (!n)
			continue;
		for (i = 0; names[i]; i++)
			if (strlen(names[i]) == n - 2 && !strncmp(p + 1, names[i], n - 2))
				break;
		if (!names[i]) {
			snprintf(bad, nbad, "%.*s", (int)n, p);
			return -1;
		}
		p += n - 1;
	}
	return 0;
}

static void words_push(char ***v, size_t *n, const struct gl_strbuf *w)
{
	*v = gl_xrealloc(*v, (*n + 2) * sizeof **v);
	(*v)[(*n)++] = gl_xstrndup(w->p ? w->p : "", w->len);
	(*v)[*n] = NULL;
}

int gl_tmpl_split(const char *tmpl, char ***words, size_t *n, struct gl_err *err)
{
	struct gl_strbuf w = GL_STRBUF_INIT;
	const char *p = tmpl ? tmpl : "";
	int rc = 0, in_word = 0;

	*words = NULL;
	*n = 0;
	while (*p) {
		if (*p == ' ' || *p == '\t' || *p == '\n') {
			if (in_word)
				words_push(words, n, &w);
			gl_strbuf_reset(&w);
			in_word = 0;
			p++;
			continue;
		}
		in_word = 1;
		if (*p == '\'' || *p == '"') {
			char q = *p++;
			while (*p && *p != q) {
				if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				gl_strbuf_putc(&w, *p++);
			}
			if (!*p) {
				rc = gl_err_set(err, GL_EINVAL, "unterminated %c quote", q);
				goto out;
			}
			p++;
		} else if (*p == '\\' && p[1]) {
			gl_strbuf_putc(&w, p[1]);
			p += 2;
		} else {
			gl_strbuf_putc(&w, *p++);
		}
	}
	if (in_word)
		words_push(words, n, &w);
out:
	gl_strbuf_fini(&w);
	if (rc) {
		gl_tmpl_words_free(*words);
		*words = NULL;
		*n = 0;
	}
	return rc;
}

void gl_tmpl_words_free(char **words)
{
	for (size_t i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

char *gl_tmpl_expand(const char *s, const struct gl_tmpl_var *vars, size_t nvars)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	for (const char *p = s; *p;) {
		size_t n = placeholder_len(p), k = nvars;
		if (n)
			for (k = 0; k < nvars; k++)
				if (strlen(vars[k].name) == n - 2 && !strncmp(vars[k].name, p + 1, n - 2))
					break;
		if (k < nvars) {
			gl_strbuf_puts(&b, vars[k].value ? vars[k].value : "");
			p += n;
			continue;
		}
		gl_strbuf_putc(&b, *p++);
	}
	return gl_strbuf_steal(&b);
}

/* ---- templates that hand a script to a shell ---- */

enum prog_kind {
	P_SHELL,  /* sh -c SCRIPT: a short option cluster with 'c', the script is the next operand */
	P_INTERP, /* python -c CODE, perl -e CODE: the code follows the flag (or is attached to it) */
	P_WRAP,   /* env, nice, sudo ...: runs the command after its options and fixed operands */
	P_REMOTE, /* ssh HOST CMD...: the words after the host are joined into one shell command */
};

struct prog {
	const char *name;     /* basename; a trailing '*' matches any suffix (python3.11) */
	enum prog_kind kind;
	const char *argopts;  /* short options that take an argument */
	const char *code;     /* P_SHELL/P_INTERP: the flags that give code; P_WRAP: flags that make it a shell */
	int operands;         /* P_WRAP: operands before the command (timeout DURATION) */
};

static const struct prog progs[] = {
	{"sh", P_SHELL, "oO", "c", 0}, {"bash", P_SHELL, "oO", "c", 0}, {"rbash", P_SHELL, "oO", "c", 0},
	{"dash", P_SHELL, "o", "c", 0}, {"ash", P_SHELL, "o", "c", 0}, {"zsh", P_SHELL, "o", "c", 0},
	{"ksh", P_SHELL, "o", "c", 0}, {"ksh93", P_SHELL, "o", "c", 0}, {"mksh", P_SHELL, "o", "c", 0},
	{"pdksh", P_SHELL, "o", "c", 0}, {"oksh", P_SHELL, "o", "c", 0}, {"yash", P_SHELL, "o", "c", 0},
	{"posh", P_SHELL, "o", "c", 0}, {"csh", P_SHELL, "", "c", 0}, {"tcsh", P_SHELL, "", "c", 0},
	{"fish", P_SHELL, "", "c", 0},
	{"python*", P_INTERP, "WXm", "c", 0}, {"perl*", P_INTERP, "IMmx", "eE", 0}, {"ruby*", P_INTERP, "IrC", "e", 0},
	{"node", P_INTERP, "r", "ep", 0}, {"nodejs", P_INTERP, "r", "ep", 0}, {"php*", P_INTERP, "cdz", "rBRFE", 0},
	{"lua*", P_INTERP, "l", "e", 0}, {"luajit", P_INTERP, "lj", "e", 0}, {"Rscript", P_INTERP, "", "e", 0},
	{"env", P_WRAP, "uCS", "", 0}, {"busybox", P_WRAP, "", "", 0}, {"nice", P_WRAP, "n", "", 0},
	{"nohup", P_WRAP, "", "", 0}, {"setsid", P_WRAP, "", "", 0}, {"time", P_WRAP, "fo", "", 0},
	{"command", P_WRAP, "", "", 0}, {"exec", P_WRAP, "a", "", 0}, {"timeout", P_WRAP, "ks", "", 1},
	{"stdbuf", P_WRAP, "ioe", "", 0}, {"ionice", P_WRAP, "cnpPu", "", 0}, {"chroot", P_WRAP, "", "", 1},
	{"taskset", P_WRAP, "", "", 1}, {"doas", P_WRAP, "uC", "", 0},
	/* sudo -s / -i runs the command through the target user's shell */
	{"sudo", P_WRAP, "ughpCDrtUT", "si", 0},
	/* su/runuser -c CMD and flock FILE -c CMD run CMD through a shell */
	{"su", P_WRAP, "cgGsw", "c", 0}, {"runuser", P_WRAP, "cgGsuw", "c", 0}, {"flock", P_WRAP, "wEc", "c", 1},
	{"ssh", P_REMOTE, "BbcDEeFIiJLlmOoPpQRSWw", "", 0},
};

/* Long options (GNU style) that take the next word as their argument. */
static int long_takes_arg(const char *w)
{
	static const char *const longs[] = {"--rcfile", "--init-file", "--unset", "--chdir", "--split-string",
					    "--user", "--group", "--signal", "--kill-after", "--input", "--output",
					    "--error", "--class", "--classdata", "--command", "--shell", "--eval",
					    "--print", "--timeout", "--conflict-exit-code", "--require", "--pid"};
	for (size_t i = 0; i < sizeof longs / sizeof longs[0]; i++)
		if (!strcmp(w, longs[i]))
			return 1;
	return 0;
}

static const struct prog *find_prog(const char *word)
{
	const char *b = strrchr(word, '/');
	b = b ? b + 1 : word;
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
		size_t n = strlen(progs[i].name);
		if (progs[i].name[n - 1] == '*' ? !strncmp(b, progs[i].name, n - 1) : !strcmp(b, progs[i].name))
			return &progs[i];
	}
	return NULL;
}

static int is_short_cluster(const char *w)
{
	return w[0] == '-' && w[1] && w[1] != '-';
}

/* The first word of argv[from..argc) holding a placeholder, -1 when none. */
static int first_placeholder(const char *const *argv, size_t from, size_t argc, char *name, size_t nname)
{
	for (size_t i = from; i < argc; i++)
		for (const char *p = argv[i]; *p; p++) {
			size_t n = placeholder_len(p);
			if (n) {
				snprintf(name, nname, "%.*s", (int)n, p);
				return (int)i;
			}
		}
	return -1;
}

/* A P_SHELL or P_INTERP program at argv[at]: [*lo, *hi) the words of code
 * written on its command line; 0 when it is given none (a script file). */
static int code_words(const struct prog *pg, const char *const *argv, size_t at, size_t argc, size_t *lo, size_t *hi)
{
	int saw_code = 0;
	for (size_t i = at + 1; i < argc; i++) {
		const char *w = argv[i];
		if (!strcmp(w, "--")) {
			if (saw_code && i + 1 < argc)
				return *lo = i + 1, *hi = i + 2, 1;
			return 0;
		}
		if (w[0] == '-' && w[1] == '-') {
			/* node --eval CODE, fish --command=CODE */
			if (pg->kind == P_INTERP || pg->kind == P_SHELL) {
				if (!strncmp(w, "--eval", 6) || !strncmp(w, "--print", 7) || !strncmp(w, "--command", 9)) {
					if (strchr(w, '='))
						return *lo = i, *hi = i + 1, 1;
					return i + 1 < argc ? (*lo = i + 1, *hi = i + 2, 1) : 0;
				}
			}
			if (long_takes_arg(w))
				i++;
			continue;
		}
		if (is_short_cluster(w) || (pg->kind == P_SHELL && w[0] == '+' && w[1])) {
			for (size_t k = 1; w[k]; k++) {
				if (strchr(pg->code, w[k])) {
					if (pg->kind == P_INTERP && w[k + 1]) /* -c'print(1)': attached */
						return *lo = i, *hi = i + 1, 1;
					if (pg->kind == P_INTERP)
						return i + 1 < argc ? (*lo = i + 1, *hi = i + 2, 1) : 0;
					saw_code = 1;
				} else if (strchr(pg->argopts, w[k])) {
					if (!w[k + 1])
						i++; /* its argument is the next word */
					break;
				}
			}
			continue;
		}
		/* the first operand: the script (after -c) or a script file */
		return saw_code ? (*lo = i, *hi = i + 1, 1) : 0;
	}
	return 0;
}

/* Where a finding stops the walk: why says what runs the code. */
struct finding {
	char *why;
	size_t nwhy;
};

static int refuse(struct finding *f, const char *prog, const char *name, const char *where)
{
	snprintf(f->why, f->nwhy, "runs %s with the placeholder %s %s", prog, name, where);
	return -1;
}

/* ssh [options] HOST CMD...: the remote shell reads CMD's words joined. */
static int check_remote(const struct prog *pg, const char *prog, const char *const *argv, size_t at, size_t argc,
			struct finding *f)
{
	char name[64];
	size_t i;
	for (i = at + 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		if (!is_short_cluster(argv[i]))
			break;
		if (strlen(argv[i]) == 2 && strchr(pg->argopts, argv[i][1]))
			i++;
	}
	if (i + 1 < argc && first_placeholder(argv, i + 1, argc, name, sizeof name) >= 0)
		return refuse(f, prog, name, "in the command line its remote shell reads as shell code");
	return 0;
}

/* A wrapper at argv[at]: -1 when one of its options hands a placeholder to
 * a shell (su/runuser/flock -c CMD, sudo -s/-i, env -S STRING), else 0
 * with *next the word of the command it runs (argc: none). */
static int check_wrapper(const struct prog *pg, const char *prog, const char *const *argv, size_t at, size_t argc,
			 size_t *next, struct finding *f)
{
	const int is_env = !strcmp(prog, "env"), is_sudo = !strcmp(prog, "sudo");
	const int takes_users = !strcmp(prog, "su") || !strcmp(prog, "runuser");
	int operands = pg->operands;
	char name[64];
	size_t i;

	for (i = at + 1; i < argc; i++) {
		const char *w = argv[i];
		/* the word an option's argument is in, and whether it is a shell's */
		size_t arg = argc;
		int shell = 0;
		if (!strcmp(w, "--")) {
			i++;
			break;
		}
		if (w[0] == '-' && w[1] == '-') {
			const char *eq = strchr(w, '=');
			if (is_sudo && (!strcmp(w, "--shell") || !strcmp(w, "--login")))
				goto rest_is_shell;
			shell = (*pg->code && !strncmp(w, "--command", 9)) || (is_env && !strncmp(w, "--split-string", 14));
			if (eq)
				arg = i;
			else if (long_takes_arg(w))
				arg = ++i;
		} else if (is_short_cluster(w)) {
			for (size_t k = 1; w[k]; k++) {
				int code = strchr(pg->code, w[k]) != NULL, env_split = is_env && w[k] == 'S';
				if (code && is_sudo)
					goto rest_is_shell;
				if (code || env_split || strchr(pg->argopts, w[k])) {
					shell = code || env_split;
					arg = w[k + 1] ? i : ++i;
					break;
				}
			}
		} else if (is_env && strchr(w, '=') && w[0] != '=') {
			continue; /* NAME=VALUE */
		} else if (takes_users || operands-- > 0) {
			continue; /* su USER, timeout DURATION, flock FILE */
		} else {
			break;
		}
		if (shell && arg < argc && first_placeholder(argv, arg, arg + 1, name, sizeof name) >= 0)
			return refuse(f, prog, name, "inside a command line it hands to a shell");
	}
	*next = i;
	return 0;
rest_is_shell:
	if (first_placeholder(argv, at + 1, argc, name, sizeof name) >= 0)
		return refuse(f, prog, name, "in a command line its -s/-i shell reads");
	*next = argc;
	return 0;
}

int gl_tmpl_shell_check(const char *const *argv, size_t argc, char *why, size_t nwhy)
{
	struct finding f = {why, nwhy};
	size_t at = 0;
	char name[64];

	/* through wrappers (env, nice, sudo ...) to the program that runs */
	for (int depth = 0; at < argc && depth < 16; depth++) {
		const struct prog *pg = find_prog(argv[at]);
		const char *prog = strrchr(argv[at], '/');
		size_t lo, hi;
		prog = prog ? prog + 1 : argv[at];
		if (!pg)
			return 0;
		switch (pg->kind) {
		case P_SHELL:
		case P_INTERP:
			if (code_words(pg, argv, at, argc, &lo, &hi) && first_placeholder(argv, lo, hi, name, sizeof name) >= 0)
				return refuse(&f, prog, name,
					      pg->kind == P_SHELL ? "inside the script it is given (-c)"
								  : "inside the code it is given (-c/-e)");
			return 0;
		case P_REMOTE:
			return check_remote(pg, prog, argv, at, argc, &f);
		case P_WRAP:
			if (check_wrapper(pg, prog, argv, at, argc, &at, &f))
				return -1;
			break;
		}
	}
	return 0;
}
