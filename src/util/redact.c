/* Credentials out of command lines and error texts (see include/gl/redact.h).
 *
 * Every rule below is there because a real tool puts a secret in that
 * place; every rule that could hit an ordinary option is narrowed by what
 * the secret looks like (a colon, a name) rather than by the option alone.
 * What each one is for, and what it deliberately leaves alone, is listed in
 * docs/security.md ("Command lines are shown blanked"). */
#include "gl/redact.h"
#include "gl/common.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MASK "***"

/* What the word after the current one is, by what the current one said. */
enum next {
	NX_NONE,
	NX_VALUE,    /* "--token VALUE", "Bearer VALUE" */
	NX_HEADER,   /* "Authorization: [SCHEME] VALUE", "X-Api-Key: VALUE" */
	NX_USERPASS, /* curl "-u USER:PASSWORD", "--user USER:PASSWORD" */
};

struct state {
	enum next next;
	char quote;  /* the quote opened before a header or option: its value runs to the closing one */
	int curl;    /* a curl command line: -u/-U take USER:PASSWORD there */
	int sshpass; /* in sshpass's own options (before the command it runs): -p takes the password */
	int mysql;   /* a MySQL/MariaDB client's command line: -pPASSWORD */
	int ldap;    /* an OpenLDAP client's (ldapsearch, ldapmodify...): -w PASSWORD */
	int redis;   /* redis-cli's: -a PASSWORD */
	int hdr_opt; /* the word before was -H / --header: a header comes */
	int header;  /* the label setting NX_HEADER is a header (-H NAME: VALUE), not an error's prose */
};

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* GL_ARG: the quote gl_redact_argv puts around each argument, which no
 * text to blank contains */
#define GL_ARG '\x01'

static int is_quote(char c)
{
	return c == '\'' || c == '"' || c == GL_ARG;
}

/* The quote opened in s[from..to) and not closed there, 0 if none: one
 * opened before a value ('alice:pw word', "--password=a b") holds the
 * value to its closing quote as one opened at the value does. */
static char open_quote(const char *s, size_t from, size_t to)
{
	char q = 0;
	for (size_t k = from; k < to; k++)
		if (is_quote(s[k]) && (!q || s[k] == q))
			q = q ? 0 : s[k];
	return q;
}

static int is_alnum(char c)
{
	return isalnum((unsigned char)c);
}

static int b64url(char c)
{
	return is_alnum(c) || c == '-' || c == '_';
}

static size_t word_end(const char *s, size_t i)
{
	while (s[i] && !is_space(s[i]))
		i++;
	return i;
}

static int has_ci(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);
	for (size_t i = 0; i + k <= n; i++)
		if (!strncasecmp(s + i, w, k))
			return 1;
	return 0;
}

static int is_ci(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && !strncasecmp(s, w, n);
}

/* One part of a name (see secret_name) that names authentication: auth,
 * authorization, authn, oauth, basicauth... but not author(s) or authority:
 * `git --author=NAME` and kubectl's `--certificate-authority=PATH` are
 * what an operator needs to read. */
static int auth_part(const char *p, size_t n)
{
	if (n >= 4 && !strncasecmp(p + n - 4, "auth", 4))
		return 1;
	if (n < 4 || strncasecmp(p, "auth", 4))
		return 0;
	return n < 6 || strncasecmp(p, "author", 6) || (n >= 8 && !strncasecmp(p, "authoriz", 8));
}

/* Whether name[0..n), its separators dropped, ends with a key that is a
 * credential: api_key, apikey, X-Api-Key, secret_key, access_key,
 * private_key, Azure's AccountKey... A list, not every name ending in
 * "key": a taint's "key", sort --key, monkey, hotkey and kubectl's
 * --client-key (a path) are not; AWS_ACCESS_KEY_ID (an identifier) ends
 * in "id". */
static int secret_key_name(const char *name, size_t n)
{
	static const char *const keys[] = {"apikey",	 "accesskey",	  "secretkey",	     "privatekey",
					   "accountkey", "signingkey",	  "masterkey",	     "sharedkey",
					   "sessionkey", "encryptionkey", "subscriptionkey", "hmackey"};
	char tail[24];
	size_t t = sizeof tail;

	for (size_t i = n; i > 0 && t > 0; i--)
		if (is_alnum(name[i - 1]))
			tail[--t] = (char)tolower((unsigned char)name[i - 1]);
	for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
		size_t kl = strlen(keys[k]);
		if (kl <= sizeof tail - t && !memcmp(tail + sizeof tail - kl, keys[k], kl))
			return 1;
	}
	return 0;
}

/* Whether name[0..n) names a credential. Substrings, in any case: token,
 * passw (password, passwd), passphrase, pwd, secret, credential, cookie,
 * oauth. By part (split at non-alphanumerics and lower-to-upper changes,
 * so apiKey is api + Key): an auth part (auth_part), sig or signature (a
 * signed URL's query). And a credential key (secret_key_name). */
static int secret_name(const char *name, size_t n)
{
	static const char *const words[] = {"token", "passw", "passphrase", "pwd", "secret", "credential", "cookie",
					    "oauth"};
	size_t i = 0;

	for (size_t w = 0; w < sizeof words / sizeof *words; w++)
		if (has_ci(name, n, words[w]))
			return 1;
	while (i < n) {
		size_t b;
		while (i < n && !is_alnum(name[i]))
			i++;
		b = i;
		while (i < n && is_alnum(name[i]) &&
		       !(i > b && isupper((unsigned char)name[i]) && islower((unsigned char)name[i - 1])))
			i++;
		if (i == b)
			break;
		if (auth_part(name + b, i - b) || is_ci(name + b, i - b, "sig") || is_ci(name + b, i - b, "signature"))
			return 1;
	}
	return secret_key_name(name, n);
}

/* Words of an error message that say a credential is wrong, never the
 * credential itself: after a label they stay, so libpq's "fe_sendauth: no
 * password supplied" and "oauth2: cannot fetch token" keep their sense. */
static int error_word(const char *w, size_t n)
{
	static const char *const words[] = {"no",      "not",	   "none",   "missing", "invalid", "expired",
					    "empty",   "required", "cannot", "failed",  "unable",  "denied",
					    "refused", "rejected", "unknown"};
	for (size_t k = 0; k < sizeof words / sizeof *words; k++)
		if (is_ci(w, n, words[k]))
			return 1;
	return 0;
}

/* A word of an error's prose after a label ("invalid token: signature
 * mismatch"): 2 to 16 letters, lower case but perhaps the first, perhaps
 * ending in , . ; or ), with more words after it on its line. A credential
 * rarely looks like that, and one that ends its line (YAML's "token: abc")
 * or has a digit, a symbol or mixed case still goes. */
static int prose_word(const char *s, size_t b, size_t we)
{
	size_t e = we, k;
	while (e > b && (s[e - 1] == ',' || s[e - 1] == '.' || s[e - 1] == ';' || s[e - 1] == ')'))
		e--;
	if (e - b < 2 || e - b > 16)
		return 0;
	for (k = b; k < e; k++)
		if (!(islower((unsigned char)s[k]) || (k == b && isupper((unsigned char)s[k]))))
			return 0;
	for (k = we; s[k] == ' ' || s[k] == '\t'; k++)
		;
	return s[k] && s[k] != '\n' && s[k] != '\r';
}

/* A label of an error's chain: letters, digits, '-', '_' or '.', then
 * one colon ("exec:", "oauth2:", "x509:"). */
static int plain_label(const char *w, size_t n)
{
	if (n < 2 || w[n - 1] != ':')
		return 0;
	for (size_t k = 0; k + 1 < n; k++)
		if (!is_alnum(w[k]) && w[k] != '-' && w[k] != '_' && w[k] != '.')
			return 0;
	return 1;
}

/* An HTTP authentication scheme: the word after "Authorization:" that is
 * kept, the one after it blanked. */
static int is_scheme(const char *w, size_t n)
{
	static const char *const schemes[] = {"bearer", "basic", "digest", "token", "negotiate", "ntlm", "apikey"};
	for (size_t k = 0; k < sizeof schemes / sizeof *schemes; k++)
		if (is_ci(w, n, schemes[k]))
			return 1;
	return 0;
}

/* NAME= at p (a name of [A-Za-z0-9_.-] and brackets): where a comma,
 * semicolon or ampersand starts the next item of a list (helm --set
 * a=1,b=2; a URL query; a cookie header) rather than going on with a
 * secret that has a comma in it. '*': a name blanked before (glt_***=)
 * still ends the value, so a second pass changes nothing. */
static int starts_name_eq(const char *p)
{
	size_t k = 0;
	while (is_alnum(p[k]) || p[k] == '_' || p[k] == '.' || p[k] == '-' || p[k] == '[' || p[k] == ']' || p[k] == '*')
		k++;
	return k > 0 && p[k] == '=';
}

/* Blanks the value starting at s[v] and returns where it ends. A value in
 * quotes (its own, or outer: the quote opened before the header or option
 * that names it) runs to the closing quote on the same line, spaces and
 * all ("--password 'correct horse'"); the closing quote is kept so the
 * text still reads as it was quoted. Otherwise the value is the rest of
 * the word, up to the next item of a list. An unclosed quote blanks only
 * the word: running to the end of the text would destroy the rest of an
 * error message for a typo. */
static size_t mask_value(struct gl_strbuf *o, const char *s, size_t v, char outer)
{
	/* the value's own quote, else (or when it is not closed: a stray one
	 * inside 'X-Api-Key: "abc def') the outer one; leaving the outer one
	 * open let the rest of the value out and made a second pass blank it */
	char qs[2] = {is_quote(s[v]) ? s[v] : outer, outer};
	size_t e, k;

	for (int t = 0; t < 2; t++) {
		char q = qs[t];
		size_t c;
		if (!q || (t && q == qs[0]))
			continue;
		c = v + (s[v] == q);
		while (s[c] && s[c] != q && s[c] != '\n')
			c++;
		if (s[c] == q) {
			if (s[v] == q)
				gl_strbuf_putc(o, q);
			gl_strbuf_puts(o, MASK);
			gl_strbuf_putc(o, q);
			return c + 1;
		}
	}
	e = v;
	while (s[e] && !is_space(s[e]) && !((s[e] == ',' || s[e] == ';' || s[e] == '&') && starts_name_eq(s + e + 1))) {
		/* a backslash-escaped space is in the value, as the shell reads
		 * it (--password=ab\ cd); one ending a line continues the
		 * command, not the value */
		if (s[e] == '\\' && s[e + 1] == '\n')
			break;
		if (s[e] == '\\' && s[e + 1])
			e++;
		e++;
	}
	/* quotes closing the word were opened before the value */
	for (k = e; k > v && is_quote(s[k - 1]); k--)
		;
	if (k > v)
		gl_strbuf_puts(o, MASK);
	gl_strbuf_append(o, s + k, e - k);
	return e;
}

/* A well-known token format at s[p] (p at a word boundary): its length,
 * and in *keep how much of it (the prefix naming the kind) stays. Leaked
 * GitHub, GitLab and Slack tokens and JWTs (Kubernetes service-account
 * tokens are JWTs) are recognisable without a name before them. */
static size_t known_token(const char *s, size_t p, size_t we, size_t *keep)
{
	static const char *const prefixes[] = {"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-",
					       "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"};
	for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
		size_t pl = strlen(prefixes[k]), e = p + pl;
		if (we - p <= pl || strncmp(s + p, prefixes[k], pl))
			continue;
		while (e < we && b64url(s[e]))
			e++;
		if (e - p - pl >= 10) { /* "ghp_" in prose is not a token */
			*keep = pl;
			return e - p;
		}
	}
	if (we - p > 3 && !strncmp(s + p, "eyJ", 3)) {
		/* header.payload.signature, base64url; the header's JSON starts {" */
		size_t e = p, dots = 0;
		while (e < we && (b64url(s[e]) || s[e] == '.'))
			dots += s[e++] == '.';
		if (dots == 2 && e - p >= 24) {
			*keep = 0;
			return e - p;
		}
	}
	return 0;
}

/* s[p] starts "://": copies it and the authority (to '/', '?', '#' or the
 * word's end), blanking the password of user:password@, or a lone user@
 * (often a token); returns where the authority ends. */
static size_t put_url(struct gl_strbuf *o, const char *s, size_t p, size_t we)
{
	size_t a = p + 3, e = a, at = 0, colon = 0;
	while (e < we && s[e] != '/' && s[e] != '?' && s[e] != '#')
		e++;
	for (size_t k = a; k < e; k++)
		if (s[k] == '@')
			at = k; /* the userinfo ends at the last '@' */
	gl_strbuf_append(o, s + p, 3);
	if (at) {
		for (size_t k = a; k < at && !colon; k++)
			if (s[k] == ':')
				colon = k;
		if (colon)
			gl_strbuf_append(o, s + a, colon + 1 - a);
		gl_strbuf_puts(o, MASK);
		a = at;
	}
	gl_strbuf_append(o, s + a, e - a);
	return e;
}

/* Whether the word s[i..we) is an option, quoted alone or not: a long
 * one, or a lone short one. */
static int option_word(const char *s, size_t i, size_t we)
{
	size_t b = i;
	char q = 0;
	while (b < we && is_quote(s[b]))
		q = s[b++];
	if (q && (we == b || s[we - 1] != q))
		return 0; /* '--x y': a quoted value running on, not an option */
	while (q && we > b && s[we - 1] == q)
		we--;
	return !strncmp(s + b, "--", 2) || (we - b == 2 && s[b] == '-' && is_alnum(s[b + 1]));
}

/* Copies the word at s[i], blanking what it carries; sets st->next for the
 * word after it. Returns where it ended (past the word when a quoted value
 * ran on). */
static size_t put_word(struct gl_strbuf *o, const char *s, size_t i, struct state *st)
{
	size_t we = word_end(s, i), b = i, d, nl, ns, p, wq;
	char q = 0;
	int after_h = st->hdr_opt;

	st->hdr_opt = 0;

	while (b < we && is_quote(s[b]))
		q = s[b++];
	/* an argument quoted alone ('--token' 'abc', Go's exec: "kubectl"
	 * "--token" "abc") reads as the bare word, and its quote is closed:
	 * the value after it is not inside it */
	for (wq = we; q && wq > b && s[wq - 1] == q; wq--)
		;
	for (d = b; d < we && s[d] == '-'; d++)
		;
	for (nl = 0; d + nl < we && (is_alnum(s[d + nl]) || s[d + nl] == '-' || s[d + nl] == '_' || s[d + nl] == '.');
	     nl++)
		;
	if (d == b) {
		/* the program itself: curl, /usr/bin/curl; only a word that
		 * is a path (what is after a '/' of "x=a/curl" changes when
		 * the value is blanked, and a second pass must read alike) */
		const char *w = s + b, *slash;
		size_t n = wq - b;
		for (size_t k = 0; k < n; k++)
			if (!is_alnum(w[k]) && !strchr("._/+-", w[k]))
				n = 0;
		slash = memrchr(w, '/', n);
		if (slash) {
			n -= (size_t)(slash + 1 - w);
			w = slash + 1;
		}
		if (is_ci(w, n, "curl"))
			st->curl = 1;
		/* sshpass's options end at the command it runs (ssh -p PORT) */
		st->sshpass = is_ci(w, n, "sshpass");
		if ((n >= 5 && !strncasecmp(w, "mysql", 5)) || (n >= 7 && !strncasecmp(w, "mariadb", 7)))
			st->mysql = 1;
		if (n > 4 && !strncasecmp(w, "ldap", 4))
			st->ldap = 1;
		if (is_ci(w, n, "redis-cli"))
			st->redis = 1;
	}
	if (d == b + 1 && wq > d + 1 &&
	    (((st->sshpass || st->mysql) && s[d] == 'p') || (st->ldap && s[d] == 'w') || (st->redis && s[d] == 'a'))) {
		/* sshpass -pPASSWORD, mysql -pPASSWORD (-P is mysql's port),
		 * ldapsearch -wPASSWORD, redis-cli -aPASSWORD */
		gl_strbuf_append(o, s + i, d + 1 - i);
		return mask_value(o, s, d + 1, open_quote(s, i, d + 1));
	}
	if (d > b && nl && d + nl == wq) {
		/* a bare option: what it names is the next word */
		st->hdr_opt = (wq - b == 2 && s[b + 1] == 'H') || is_ci(s + b, wq - b, "--header");
		if (is_ci(s + b, wq - b, "--user") || is_ci(s + b, wq - b, "--proxy-user") ||
		    is_ci(s + b, wq - b, "--cert") ||
		    (st->curl && wq - b == 2 && (s[b + 1] == 'u' || s[b + 1] == 'U' || s[b + 1] == 'E'))) {
			/* curl: -u/--user, -U/--proxy-user USER:PASSWORD, -E/--cert
			 * FILE:PASSWORD */
			st->next = NX_USERPASS;
			st->quote = wq < we ? 0 : q;
		} else if (secret_name(s + d, nl) || (st->curl && wq - b == 2 && s[b + 1] == 'b') ||
			   (st->sshpass && wq - b == 2 && s[b + 1] == 'p') || (st->ldap && wq - b == 2 && s[b + 1] == 'w') ||
			   (st->redis && wq - b == 2 && s[b + 1] == 'a')) {
			/* curl -b NAME=VALUE sends cookies (a session); sshpass -p,
			 * ldapsearch -w, redis-cli -a PASSWORD. mysql's lone -p
			 * prompts: its next word is a database */
			st->next = NX_VALUE;
			st->quote = wq < we ? 0 : q;
		}
		gl_strbuf_append(o, s + i, we - i);
		return we;
	}
	if (we - b > 5 && !strncmp(s + b, "pass:", 5)) {
		/* openssl -passin/-passout/-pass pass:PASSWORD (env:VAR and
		 * file:PATH name where it is, and stay) */
		gl_strbuf_append(o, s + i, b + 5 - i);
		return mask_value(o, s, b + 5, q);
	}
	if (d > b && nl) {
		/* --user=USER:PASSWORD, and curl's -uUSER:PASSWORD */
		const char *colon = memchr(s + d, ':', we - d);
		int user_eq = s[d + nl] == '=' && (is_ci(s + d, nl, "user") || is_ci(s + d, nl, "proxy-user") ||
						   is_ci(s + d, nl, "cert"));
		int curl_u = st->curl && d == b + 1 && (s[d] == 'u' || s[d] == 'U');
		if (colon && (user_eq || curl_u) && (curl_u || colon > s + d + nl)) {
			size_t c = (size_t)(colon - s);
			gl_strbuf_append(o, s + i, c + 1 - i);
			return mask_value(o, s, c + 1, open_quote(s, i, c));
		}
	}
	if (d == b && (is_ci(s + b, we - b, "bearer") || is_ci(s + b, we - b, "basic"))) {
		/* "Bearer VALUE" wherever it is written */
		st->next = NX_VALUE;
		st->quote = q;
		gl_strbuf_append(o, s + i, we - i);
		return we;
	}

	ns = i; /* where the current name started */
	for (p = i; p < we;) {
		char c = s[p];
		size_t k, keep;
		if (we - p > 4 && !strncmp(s + p, "glt_", 4)) {
			gl_strbuf_puts(o, "glt_" MASK);
			/* '*': one blanked before is not blanked twice */
			for (p += 4; p < we && (b64url(s[p]) || s[p] == '*'); p++)
				;
			continue;
		}
		if ((p == i || !is_alnum(s[p - 1])) && (k = known_token(s, p, we, &keep))) {
			gl_strbuf_append(o, s + p, keep);
			gl_strbuf_puts(o, MASK);
			p += k;
			continue;
		}
		if (c == ':' && s[p + 1] == '/' && s[p + 2] == '/') {
			p = put_url(o, s, p, we);
			ns = p;
			continue;
		}
		if (c == '=' && p > ns && secret_name(s + ns, p - ns)) {
			/* NAME=VALUE, also inside another's value (--set=a.token=x).
			 * An option quoted whole ("--password=a b") is its value's
			 * quote; a quoted shell line ('PGPASSWORD=pw psql') is not */
			gl_strbuf_putc(o, '=');
			p = mask_value(o, s, p + 1, ns == i && d > b ? q : 0);
			if (p > we) {
				/* the value ran on past a space: so does the word */
				we = word_end(s, p);
				for (wq = we; q && wq > b && s[wq - 1] == q; wq--)
					;
			}
			ns = p;
			continue;
		}
		if (c == ':' && p > ns && !memchr(s + ns, '.', p - ns) && secret_name(s + ns, p - ns)) {
			/* a header: "Authorization:Bearer x", "X-Api-Key:x", or the
			 * value in the next word(s). A header name has no dot: a
			 * host (secrets.example.com:443) keeps its port */
			gl_strbuf_putc(o, ':');
			p++;
			if (p == we || p == wq) {
				/* the value in the next word; a label quoted alone
				 * ('X-Api-Key:' 'abc', an argument) closed its quote */
				gl_strbuf_append(o, s + p, we - p);
				st->next = NX_HEADER;
				st->quote = p == we ? q : 0;
				/* -H NAME:, --header NAME:, --header=NAME: */
				st->header = after_h || (d == b + 1 && s[d] == 'H') ||
					     (d == b + 2 && we - d > 7 && !strncasecmp(s + d, "header=", 7));
				return we;
			}
			if (is_scheme(s + p, we - p)) {
				gl_strbuf_append(o, s + p, we - p);
				st->next = NX_VALUE;
				st->quote = q;
				return we;
			}
			p = mask_value(o, s, p, q);
			if (p > we) {
				/* the value ran on past a space: so does the word */
				we = word_end(s, p);
				for (wq = we; q && wq > b && s[wq - 1] == q; wq--)
					;
			}
			ns = p;
			continue;
		}
		/* the next name starts after a separator (a.b=c,d.token=x;
		 * ?x=1&token=y; gres/gpu:a100=4) */
		if (c == '=' || c == ',' || c == ';' || c == '&' || c == '?' || c == '/' || c == ':' || c == '{' ||
		    c == '(')
			ns = p + 1;
		gl_strbuf_putc(o, c);
		p++;
	}
	return p;
}

/* Blanks s into out, going on from *st (what the words before said). */
static void redact_run(const char *s, struct state *st_, struct gl_strbuf *out)
{
	struct state st = *st_;
	size_t i = 0;

	while (s[i]) {
		size_t we;
		if (is_space(s[i])) {
			if (s[i] == '\n')
				st.next = NX_NONE; /* a value does not run on to the next line */
			gl_strbuf_putc(out, s[i++]);
			continue;
		}
		we = word_end(s, i);
		switch (st.next) {
		case NX_VALUE:
			/* a flag followed by another option took no value: a long
			 * one, or a lone short one (psql --no-password -h db); a
			 * one-letter secret is none */
			if (!option_word(s, i, we)) {
				st.next = NX_NONE;
				i = mask_value(out, s, i, st.quote);
				continue;
			}
			break;
		case NX_HEADER: {
			size_t b = i;
			st.next = NX_NONE;
			/* another label of an error's chain ("getting credentials:
			 * exec: executable aws not found"), not the value: a plain
			 * name and a colon, read as a word of its own (which keeps
			 * it as it is, so a second pass reads it alike). In quotes
			 * the header's value runs on */
			if (!st.quote && error_word(s + b, we - b))
				break;
			if (!st.quote && plain_label(s + b, we - b)) {
				/* unless it holds a token of its own (glpat-...:) */
				struct gl_strbuf w = GL_STRBUF_INIT;
				struct state st2 = st;
				int same;
				put_word(&w, s, i, &st2);
				same = w.len == we - i && !memcmp(gl_strbuf_cstr(&w), s + i, w.len);
				gl_strbuf_fini(&w);
				if (same)
					break;
			}
			if (is_scheme(s + b, we - b)) {
				gl_strbuf_append(out, s + i, we - i);
				st.next = NX_VALUE;
				i = we;
				continue;
			}
			if (!st.quote && !st.header && prose_word(s, b, we))
				break;
			i = mask_value(out, s, i, st.quote);
			continue;
		}
		case NX_USERPASS: {
			const char *colon = memchr(s + i, ':', we - i);
			st.next = NX_NONE;
			if (colon && strncmp(s + i, "--", 2)) {
				size_t c = (size_t)(colon - s);
				gl_strbuf_append(out, s + i, c + 1 - i);
				i = mask_value(out, s, c + 1, open_quote(s, i, c));
				continue;
			}
			break;
		}
		case NX_NONE:
			break;
		}
		st.next = NX_NONE;
		st.quote = 0;
		i = put_word(out, s, i, &st);
	}
	*st_ = st;
}

void gl_redact_secrets(const char *s, struct gl_strbuf *out)
{
	struct state st = {.next = NX_NONE};
	redact_run(s, &st, out);
}

char **gl_redact_argv(const char *const *argv)
{
	struct state st = {.next = NX_NONE};
	struct gl_strbuf b = GL_STRBUF_INIT, w = GL_STRBUF_INIT;
	size_t n = 0;
	char **out;

	while (argv[n])
		n++;
	out = gl_xcalloc(n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++) {
		const char *a = argv[i];
		gl_strbuf_reset(&b);
		if (!strchr(a, GL_ARG)) {
			/* every argument is read as if quoted: one with a space is
			 * one value ('X-Api-Key: a b', 'Authorization: Bearer x');
			 * always, not only when it has a space, so that a second
			 * pass, whose argument lost its space to a "***", reads it
			 * alike. The quote is one no argument has, taken off again */
			struct state st2 = st;
			gl_strbuf_reset(&w);
			gl_strbuf_putc(&w, GL_ARG);
			gl_strbuf_puts(&w, a);
			gl_strbuf_putc(&w, GL_ARG);
			redact_run(gl_strbuf_cstr(&w), &st2, &b);
			if (b.len >= 2 && b.p[0] == GL_ARG && b.p[b.len - 1] == GL_ARG &&
			    !memchr(b.p + 1, GL_ARG, b.len - 2)) {
				st = st2;
				st.quote = 0;
				out[i] = gl_xstrndup(b.p + 1, b.len - 2);
				continue;
			}
			gl_strbuf_reset(&b);
		}
		redact_run(a, &st, &b);
		out[i] = gl_xstrdup(gl_strbuf_cstr(&b));
	}
	gl_strbuf_fini(&b);
	gl_strbuf_fini(&w);
	return out;
}

void gl_redact_argv_free(char **argv)
{
	for (size_t i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}
