/* Credentials blanked from command lines and error texts before they reach
 * ingest_runs or /metrics (include/gl/redact.h): each spelling, and what
 * must stay as it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"

#include "gl/redact.h"

#include <stdlib.h>
#include <string.h>

static void check(const char *in, const char *want)
{
	struct gl_strbuf b = GL_STRBUF_INIT;
	gl_redact_secrets(in, &b);
	if (strcmp(gl_strbuf_cstr(&b), want))
		fail_msg("redact(\"%s\")\n  got  \"%s\"\n  want \"%s\"", in, gl_strbuf_cstr(&b), want);
	gl_strbuf_fini(&b);
}

static void test_options_with_a_value(void **state)
{
	(void)state;
	check("kubectl --token=s3cr3t get pods -A -o json", "kubectl --token=*** get pods -A -o json");
	check("kubectl --token s3cr3t get pods", "kubectl --token *** get pods");
	check("tool -password=hunter2 --Client-Secret=abc --api-key=k1 --auth-header=x",
	      "tool -password=*** --Client-Secret=*** --api-key=*** --auth-header=***");
	check("env KUBE_TOKEN=abc PGPASSWORD=pw kubectl", "env KUBE_TOKEN=*** PGPASSWORD=*** kubectl");
	check("curl -H Authorization: Bearer abc.def https://x", "curl -H Authorization: Bearer *** https://x");
	check("basic dXNlcjpwYXNz end", "basic *** end");
	/* the value a flag names is blanked, the flag and its neighbours kept */
	check("x --password\thunter2\n--next", "x --password\t***\n--next");
}

static void test_urls_and_tokens(void **state)
{
	(void)state;
	check("curl https://admin:hunter2@k8s.example:6443/api", "curl https://admin:***@k8s.example:6443/api");
	check("--server=https://u:p@h/x: exit 1", "--server=https://u:***@h/x: exit 1");
	check("git clone https://ghp_abcdef@github.com/o/r", "git clone https://***@github.com/o/r");
	check("http://host/path?u=a@b", "http://host/path?u=a@b");
	check("token glt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA, more", "token glt_***, more");
}

static void test_leaves_the_rest_alone(void **state)
{
	(void)state;
	check("", "");
	check("sacct --allusers --parsable2 --noheader --clusters c1 --starttime 2026-11-01T00:00:00",
	      "sacct --allusers --parsable2 --noheader --clusters c1 --starttime 2026-11-01T00:00:00");
	check("kubectl get pods -A -o json: exit 1: error: the server doesn't have a resource type",
	      "kubectl get pods -A -o json: exit 1: error: the server doesn't have a resource type");
	check("s.txt", "s.txt");
	check("  lead and trail  ", "  lead and trail  ");
	check("3 targets", "3 targets");
	check("a=b c==d -- -", "a=b c==d -- -");
	check("caf\xc3\xa9 http://h:80/", "caf\xc3\xa9 http://h:80/");
}

/* curl's -u/--user take user:password: the user stays, the password goes.
 * -u is "user list" to sacct/squeue and uid:gid to docker, so the short
 * forms count only on a curl command line. */
static void test_curl_user_password(void **state)
{
	(void)state;
	check("curl -u admin:hunter2 https://h/metrics", "curl -u admin:*** https://h/metrics");
	check("curl --user admin:hunter2 -s https://h", "curl --user admin:*** -s https://h");
	check("curl --user=admin:hunter2 https://h", "curl --user=admin:*** https://h");
	check("/usr/bin/curl -sS -uadmin:hunter2 https://h", "/usr/bin/curl -sS -uadmin:*** https://h");
	check("curl -U proxy:pw -x http://p:3128 https://h", "curl -U proxy:*** -x http://p:3128 https://h");
	check("curl --proxy-user proxy:pw https://h", "curl --proxy-user proxy:*** https://h");
	/* a password with a colon in it goes whole */
	check("curl -u a:b:c https://h", "curl -u a:*** https://h");
	/* curl's client certificate password, and its cookies */
	check("curl -E client.pem:pw --cert=c.pem:pw2 https://h", "curl -E client.pem:*** --cert=c.pem:*** https://h");
	check("curl -b session=abc https://h", "curl -b *** https://h");
	/* names without a password, and -u of other programs, stay */
	check("curl -u admin https://h", "curl -u admin https://h");
	check("sacct -u alice,bob -S 2026-11-01", "sacct -u alice,bob -S 2026-11-01");
	check("squeue --user=alice --format=%i:%u", "squeue --user=alice --format=%i:%u");
	check("docker run -u 1000:1000 img", "docker run -u 1000:1000 img");
}

/* NAME=VALUE inside an option's value (helm --set, kubectl
 * --from-literal, comma lists): the inner name decides. */
static void test_nested_names(void **state)
{
	(void)state;
	check("helm upgrade x --set=auth.token=s3cr3t", "helm upgrade x --set=auth.token=***");
	check("helm upgrade x --set auth.token=s3cr3t", "helm upgrade x --set auth.token=***");
	check("--set a=b,auth.token=x,c=d", "--set a=b,auth.token=***,c=d");
	check("kubectl create secret generic s --from-literal=password=pw1",
	      "kubectl create secret generic s --from-literal=password=***");
	/* a comma inside the secret (not starting another NAME=) goes with it */
	check("--set db.password=ab,cd", "--set db.password=***");
	check("http://h:9400/metrics?job=x&access_token=abc&n=1", "http://h:9400/metrics?job=x&access_token=***&n=1");
	check("https://acct.blob.example/c?sv=2022&sig=AbC%2B", "https://acct.blob.example/c?sv=2022&sig=***");
	check("{\"user\":\"u\",\"password\":\"p w\"}", "{\"user\":\"u\",\"password\":\"***\"}");
}

/* HTTP header forms, quoted or not, with or without a space after the
 * colon; the scheme word stays. */
static void test_headers(void **state)
{
	(void)state;
	check("curl -H Authorization:Bearer xyz https://h", "curl -H Authorization:Bearer *** https://h");
	check("curl -H 'Authorization: Basic abc' https://h", "curl -H 'Authorization: Basic ***' https://h");
	check("curl -H \"Authorization: Bearer abc\" https://h", "curl -H \"Authorization: Bearer ***\" https://h");
	check("curl -H 'X-Api-Key: abc' https://h", "curl -H 'X-Api-Key: ***' https://h");
	check("curl -H X-Api-Key:abc https://h", "curl -H X-Api-Key:*** https://h");
	check("curl -H X-Api-Key: abc https://h", "curl -H X-Api-Key: *** https://h");
	check("curl --header=X-Auth-Token:abc https://h", "curl --header=X-Auth-Token:*** https://h");
	check("curl -H 'PRIVATE-TOKEN: glpat-abcdefghijklmnopqrst' https://h", "curl -H 'PRIVATE-TOKEN: ***' https://h");
	check("curl -H 'Cookie: session=abc; theme=dark' https://h", "curl -H 'Cookie: ***' https://h");
	check("Authorization: Token abc", "Authorization: Token ***");
	check("proxy-authorization:Digest x", "proxy-authorization:Digest ***");
}

/* Other common spellings: environment assignments, quoted values, option
 * and value as two words, well-known token formats. */
static void test_other_forms(void **state)
{
	(void)state;
	check("PGPASSWORD=pw psql -h db", "PGPASSWORD=*** psql -h db");
	check("AWS_SECRET_ACCESS_KEY=abc AWS_SESSION_TOKEN=def aws s3 ls",
	      "AWS_SECRET_ACCESS_KEY=*** AWS_SESSION_TOKEN=*** aws s3 ls");
	check("tool --password \"correct horse battery\" --next", "tool --password \"***\" --next");
	check("tool --token='abc' x", "tool --token='***' x");
	check("psql \"host=db password=pw dbname=x\"", "psql \"host=db password=*** dbname=x\"");
	check("tool --apiKey=abc --passphrase=xyz", "tool --apiKey=*** --passphrase=***");
	check("curl --oauth2-bearer abc https://h", "curl --oauth2-bearer *** https://h");
	check("AUTHORIZATION: BEARER abc", "AUTHORIZATION: BEARER ***");
	check("git push https://x/y ghp_abcdefghijklmnopqrstuvwxyz0123456789",
	      "git push https://x/y ghp_***");
	check("notify xoxb-1234567890-abcdefghij", "notify xoxb-***");
	check("kubectl --server=https://k:6443 get pods eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJlX2hlcmU",
	      "kubectl --server=https://k:6443 get pods ***");
	/* a flag naming a secret and followed by another option did not take
	 * a value: the option stays */
	check("tool --use-token --verbose get", "tool --use-token --verbose get");
}

/* Running the redaction again changes nothing (the stored rows are
 * cleaned by `gpuledger db redact`, which may run any number of times). */
static void test_idempotent(void **state)
{
	static const char *const in[] = {
		"curl -u admin:hunter2 -H 'Authorization: Bearer abc' https://u:p@h/x?token=t",
		"--set a=b,auth.token=x,c=d --password \"a b\" PGPASSWORD=pw",
		"kubectl --token s3cr3t get pods glt_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"X-Api-Key: abc Authorization:Bearer x curl -uadmin:pw",
		/* found by test_idempotent_random: a word read as a program
		 * by what followed its last '/', which blanking removed */
		"mysqltoken:--user://token:\"kubectl\", -pcurlno?",
		"mysqlapi_key=|/\t\n-p/key",
	};
	(void)state;
	for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
		struct gl_strbuf a = GL_STRBUF_INIT, b = GL_STRBUF_INIT;
		gl_redact_secrets(in[i], &a);
		gl_redact_secrets(gl_strbuf_cstr(&a), &b);
		assert_string_equal(gl_strbuf_cstr(&a), gl_strbuf_cstr(&b));
		assert_null(strstr(gl_strbuf_cstr(&a), "hunter2"));
		gl_strbuf_fini(&a);
		gl_strbuf_fini(&b);
	}
}

/* Scheduler and exporter command lines that hold no secret stay exactly
 * as they are: they are what an operator reads to find a failing source. */
static void test_scheduler_commands_stay(void **state)
{
	static const char *const same[] = {
		"sacct --allusers --parsable2 --noheader --partition=gpu --format=JobID,JobName,Partition,Account,"
		"AllocTRES,State -S 2026-11-01T00:00:00 -E now -X",
		"kubectl get pods -A -o json",
		"kubectl get pods -o jsonpath={.items[*].metadata.name} --sort-by=.metadata.name",
		"kubectl --kubeconfig=/etc/gl/kubeconfig --certificate-authority=/etc/k8s/ca.crt get pods",
		"sort --key-col 3 --key-col=4",
		"git log --author=Jane --keep-going",
		"AllocTRES billing=8,cpu=8,gres/gpu:a100=4,mem=64G,node=1",
		"scontrol show node -o gpu[01-04]",
		"psql -h db -p 5432 -U gpuledger",
		"srun -p gpu --gres=gpu:4 -t 1:00:00",
		"dcgm c1: all 2 targets failed (http://h:9400/metrics: Couldn't connect to server)",
		"AWS_ACCESS_KEY_ID=AKIAEXAMPLE aws s3 ls",
		"ghp_ short",
		"dcgm c1: 1 of 2 targets failed (https://secrets.example.com:443/metrics: HTTP 500)",
		"curl --cert client.pem https://h",
		"probe secrets.example.com:443",
		"kube c1: kubectl get pods: exit 1: error: You must be logged in to the server (Unauthorized)",
	};
	(void)state;
	for (size_t i = 0; i < sizeof same / sizeof *same; i++)
		check(same[i], same[i]);
}

/* A flag that names a secret but takes no value (psql's --no-password and
 * --password only choose whether to prompt) is followed by a short option:
 * the option is not the flag's value, and blanking it hid which option the
 * next word belongs to. */
static void test_flag_then_short_option(void **state)
{
	(void)state;
	check("psql --no-password -h db -U gl", "psql --no-password -h db -U gl");
	check("psql --password -p 5432 -d gl", "psql --password -p 5432 -d gl");
	check("tool --token -v", "tool --token -v");
	/* a value that only starts with a dash still goes */
	check("tool --token -abc123", "tool --token ***");
}

/* A quote opened before the password (around the whole USER:PASSWORD, or
 * the whole --option=VALUE) holds it to its closing quote, as a quote
 * opened at the value does: the words after the first space went out. */
static void test_quote_opened_before_the_value(void **state)
{
	(void)state;
	check("curl -u 'alice:pw word' https://h", "curl -u 'alice:***' https://h");
	check("curl --user \"alice:pw word\" https://h", "curl --user \"alice:***\" https://h");
	check("curl --user='alice:pw word' https://h", "curl --user='alice:***' https://h");
	check("tool \"--password=a b\" --next", "tool \"--password=***\" --next");
	/* a quoted shell line keeps what follows its assignment */
	check("sh -c 'PGPASSWORD=pw psql -h db'", "sh -c 'PGPASSWORD=*** psql -h db'");
}

/* A stray quote at the start of a value inside a quoted header or option
 * is not the value's end: the outer quote still holds it, or the words
 * after the first went out and a second pass (`db redact`) blanked them. */
static void test_stray_quote_inside_a_quoted_value(void **state)
{
	static const char *const in[] = {
		"curl -H 'X-Api-Key: \"abc def' https://h",
		"curl -H \"Authorization: Bearer 'abc def\" https://h",
	};
	static const char *const want[] = {
		"curl -H 'X-Api-Key: ***' https://h",
		"curl -H \"Authorization: Bearer ***\" https://h",
	};
	(void)state;
	for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
		struct gl_strbuf b = GL_STRBUF_INIT;
		check(in[i], want[i]);
		gl_redact_secrets(want[i], &b);
		assert_string_equal(gl_strbuf_cstr(&b), want[i]);
		gl_strbuf_fini(&b);
	}
}

/* Error texts chain their context with colons ("getting credentials:
 * exec: ..."): after a label naming a credential, the next label is not
 * its value. A quoted header's value, and a value not ending in a colon,
 * still go. */
static void test_label_after_a_credential_label(void **state)
{
	(void)state;
	check("kube c1: Unable to connect to the server: getting credentials: exec: executable aws not found",
	      "kube c1: Unable to connect to the server: getting credentials: exec: executable aws not found");
	check("error: refresh token: x509: certificate has expired", "error: refresh token: x509: certificate has expired");
	check("password: hunter2 rejected", "password: *** rejected");
	check("curl -H 'X-Api-Key: abc:' https://h", "curl -H 'X-Api-Key: ***' https://h");
	/* a label that is a token itself is still the value */
	check("token: glpat-abcdefghijklmnopqrst: rejected", "token: *** rejected");
	check("token: *** rejected", "token: *** rejected");
	/* words that say a credential is wrong are no credential */
	check("migrate: connection to server on socket \"/x/.s.PGSQL.5432\" failed: fe_sendauth: no password supplied",
	      "migrate: connection to server on socket \"/x/.s.PGSQL.5432\" failed: fe_sendauth: no password supplied");
	check("oauth2: cannot fetch token: 400 Bad Request", "oauth2: cannot fetch token: *** Bad Request");
	check("Authorization: invalid", "Authorization: invalid");
	check("password: Invalid-Hunter2 rejected", "password: *** rejected");
	check("X-Api-Key: 'no' x", "X-Api-Key: '***' x");
}

/* Arguments quoted one by one, as a program quotes an argv it prints (Go's
 * exec errors: exec: "kubectl" "--token" "abc"): the option is still a
 * bare option, and its value the next (quoted) word. */
static void test_arguments_quoted_one_by_one(void **state)
{
	(void)state;
	check("run '--token' 'abc' get", "run '--token' '***' get");
	check("run \"--password\" \"s3cr3t\" -v", "run \"--password\" \"***\" -v");
	check("exec: \"kubectl\" \"--token\" \"abc\": executable file not found in $PATH",
	      "exec: \"kubectl\" \"--token\" \"***\": executable file not found in $PATH");
	check("\"curl\" \"-u\" \"svc:pw\" \"https://h\"", "\"curl\" \"-u\" \"svc:***\" \"https://h\"");
	/* an option quoted alone and followed by another still took no value */
	check("'--use-token' '--verbose'", "'--use-token' '--verbose'");
}

/* openssl's password arguments: pass:SECRET is the secret itself; env:VAR
 * and file:PATH only say where it is. */
static void test_openssl_pass_arguments(void **state)
{
	(void)state;
	check("openssl pkcs12 -in a.p12 -passin pass:hunter2 -passout pass:s3cr3t -nodes",
	      "openssl pkcs12 -in a.p12 -passin pass:*** -passout pass:*** -nodes");
	check("openssl enc -aes-256-cbc -pass pass:abc -in f", "openssl enc -aes-256-cbc -pass pass:*** -in f");
	check("openssl enc -aes-256-cbc -pass 'pass:a b' -in f", "openssl enc -aes-256-cbc -pass 'pass:***' -in f");
	check("openssl rsa -passin env:KEYPASS -passout file:/etc/pw.txt -in k.pem",
	      "openssl rsa -passin env:KEYPASS -passout file:/etc/pw.txt -in k.pem");
	check("openssl rsa -passin stdin -passout fd:3", "openssl rsa -passin stdin -passout fd:3");
}

/* sshpass and the MySQL clients put the password right after -p; -p alone
 * makes mysql prompt (the next word is a database), -P is a port, and -p
 * off these command lines stays (Slurm partitions, ports). */
static void test_sshpass_and_mysql(void **state)
{
	(void)state;
	check("sshpass -p hunter2 ssh -p 2222 gpu01 scancel 1", "sshpass -p *** ssh -p 2222 gpu01 scancel 1");
	check("sshpass -phunter2 ssh gpu01", "sshpass -p*** ssh gpu01");
	check("/usr/bin/sshpass -p 'a b' ssh gpu01", "/usr/bin/sshpass -p '***' ssh gpu01");
	check("sshpass -f /etc/pw ssh -p 2222 gpu01", "sshpass -f /etc/pw ssh -p 2222 gpu01");
	check("mysql -h db -u gl -phunter2 -P 3306 gl", "mysql -h db -u gl -p*** -P 3306 gl");
	check("mysqldump --password=hunter2 gl", "mysqldump --password=*** gl");
	check("mysql -h db -u gl -p -P 3306 gl", "mysql -h db -u gl -p -P 3306 gl");
	check("mysql -p gl", "mysql -p gl");
	check("mariadb -ps3cr3t gl", "mariadb -p*** gl");
	check("srun -pgpu -p gpu hostname", "srun -pgpu -p gpu hostname");
	/* OpenLDAP's -w and redis-cli's -a take the password; -W and -x stay */
	check("ldapsearch -x -D cn=admin -w hunter2 -b dc=x", "ldapsearch -x -D cn=admin -w *** -b dc=x");
	check("ldapmodify -whunter2 -f a.ldif", "ldapmodify -w*** -f a.ldif");
	check("ldapsearch -x -W -b dc=x", "ldapsearch -x -W -b dc=x");
	check("redis-cli -h r1 -a hunter2 INFO", "redis-cli -h r1 -a *** INFO");
	check("/usr/bin/redis-cli -ahunter2 PING", "/usr/bin/redis-cli -a*** PING");
	check("tar -a -cf x.tgz dir", "tar -a -cf x.tgz dir");
	check("sort -w x", "sort -w x");
}

/* A space escaped with a backslash is part of the value, as the shell
 * reads it. */
static void test_backslash_escaped_space(void **state)
{
	(void)state;
	check("tool --password=ab\\ cd --next", "tool --password=*** --next");
	check("tool --token ab\\ cd\\ ef x", "tool --token *** x");
	check("PGPASSWORD=a\\ b psql", "PGPASSWORD=*** psql");
	/* a backslash ending a line continues the command, not the value */
	check("tool --password=ab\\\n --next", "tool --password=***\\\n --next");
}

/* After an unquoted "NAME:" of an error text, a plain word (letters, at
 * most one capital and that first, at most 16) followed by more words on
 * its line is the error's prose ("invalid token: signature mismatch"), not
 * the credential. A word that does not look like one (digits, symbols,
 * mixed case, long), or one ending its line (YAML's "token: abc"), still
 * goes; so does the word after a header label that -H / --header names. */
static void test_prose_after_a_credential_label(void **state)
{
	(void)state;
	check("invalid token: signature mismatch", "invalid token: signature mismatch");
	check("oidc: verify token: Signature is invalid", "oidc: verify token: Signature is invalid");
	check("token: abc123", "token: ***");
	check("token: abc123 rejected", "token: *** rejected");
	check("token: abc", "token: ***");
	check("password: hunter\nnext line", "password: ***\nnext line");
	check("token: abcdefghijklmnopqrstuvwxyz rejected", "token: *** rejected");
	check("token: aBcDeF rejected", "token: *** rejected");
	check("token: abc-def rejected", "token: *** rejected");
	check("curl -H X-Api-Key: abc https://h", "curl -H X-Api-Key: *** https://h");
	check("wget --header Authorization: abc https://h", "wget --header Authorization: *** https://h");
	check("curl --header=X-Api-Key: abc https://h", "curl --header=X-Api-Key: *** https://h");
}

/* Names that hold a key which is a credential, from a list (the name with
 * its separators dropped ends with it: api_key, apikey, X-Api-Key,
 * secret_key, access_key, private_key, AccountKey...), not every name
 * ending in "key": a taint's "key", sort --key, monkey, keyboard stay. */
static void test_key_names(void **state)
{
	(void)state;
	check("tool --api_key=a --apikey=b --API-KEY=c --secret_key=d --access-key=e --private_key=f",
	      "tool --api_key=*** --apikey=*** --API-KEY=*** --secret_key=*** --access-key=*** --private_key=***");
	check("curl -H 'x-api-key: k' https://h", "curl -H 'x-api-key: ***' https://h");
	check("az storage blob list --account-key abc", "az storage blob list --account-key ***");
	check("DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==;EndpointSuffix=x",
	      "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=***;EndpointSuffix=x");
	check("{\"apiKey\":\"k\",\"n\":1}", "{\"apiKey\":\"***\",\"n\":1}");
	check("kubectl taint nodes gpu01 '{\"key\": \"nvidia.com/gpu\", \"effect\": \"NoSchedule\"}'",
	      "kubectl taint nodes gpu01 '{\"key\": \"nvidia.com/gpu\", \"effect\": \"NoSchedule\"}'");
	check("{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}", "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}");
	check("sort --key=3 -t, f.csv", "sort --key=3 -t, f.csv");
	check("sort --key 3 f.csv", "sort --key 3 f.csv");
	check("monkey=1 keyboard=us hotkey=F1 key: value", "monkey=1 keyboard=us hotkey=F1 key: value");
	check("kubectl --client-key=/etc/k8s/client.key get pods", "kubectl --client-key=/etc/k8s/client.key get pods");
}

/* gl_redact_argv, for the idle hook's commands: the argv keeps its
 * elements, an element's meaning goes on into the next, and an element
 * with a space in it is one value, as if quoted. */
static void check_argv(const char *const *in, const char *const *want)
{
	char **got = gl_redact_argv(in);
	size_t i;
	for (i = 0; in[i]; i++) {
		assert_non_null(got[i]);
		if (strcmp(got[i], want[i]))
			fail_msg("argv[%zu] \"%s\"\n  got  \"%s\"\n  want \"%s\"", i, in[i], got[i], want[i]);
	}
	assert_null(got[i]);
	assert_null(want[i]);
	gl_redact_argv_free(got);
}

static void test_argv(void **state)
{
	(void)state;
	check_argv((const char *const[]){"kubectl", "--token", "abc", "delete", "pod", "p", NULL},
		   (const char *const[]){"kubectl", "--token", "***", "delete", "pod", "p", NULL});
	check_argv((const char *const[]){"curl", "-u", "admin:pw", "-H", "X-Api-Key: a b", "https://u:p@h/x", NULL},
		   (const char *const[]){"curl", "-u", "admin:***", "-H", "X-Api-Key: ***", "https://u:***@h/x", NULL});
	check_argv((const char *const[]){"curl", "-H", "Authorization: Bearer abc def", "https://h", NULL},
		   (const char *const[]){"curl", "-H", "Authorization: Bearer ***", "https://h", NULL});
	check_argv((const char *const[]){"tool", "--password", "correct horse", "--next", NULL},
		   (const char *const[]){"tool", "--password", "***", "--next", NULL});
	check_argv((const char *const[]){"sh", "-c", "PGPASSWORD=pw psql -h db", NULL},
		   (const char *const[]){"sh", "-c", "PGPASSWORD=*** psql -h db", NULL});
	/* both quotes in it: read as it is */
	check_argv((const char *const[]){"tool", "it's \"x\" token: abc1 y", NULL},
		   (const char *const[]){"tool", "it's \"x\" token: *** y", NULL});
	/* nothing to blank: the same elements, empty ones too */
	check_argv((const char *const[]){"scancel", "", "101", "x; rm -rf /", NULL},
		   (const char *const[]){"scancel", "", "101", "x; rm -rf /", NULL});
	check_argv((const char *const[]){NULL}, (const char *const[]){NULL});
}

/* Idempotence on random texts made of the pieces the rules react to
 * (names, separators, quotes, escapes, programs, token prefixes): a second
 * pass, as `gpuledger db redact` makes on stored rows, changes nothing. A
 * fixed seed keeps a failure reproducible; the failing text is printed. */
static void test_idempotent_random(void **state)
{
	static const char *const piece[] = {
		"--token", "--password", "-p", "-u", "-b", "-H", "--user", "--header", "curl", "sshpass", "mysql",
		"ldapsearch", "redis-cli", "-w", "-a", "-whunter", "-ax",
		"token:", "password:", "Authorization:", "X-Api-Key:", "api_key=", "key", "Bearer", "Basic", "pass:",
		"env:", "=", ":", ",", ";", "&", "?", "/", "@", "://", "https", "'", "\"", "\\", "\\ ", " ", " ", " ",
		"\t", "\n", "abc", "s3cr3t", "no", "invalid", "signature", "mismatch", "***", "glt_", "ghp_",
		"AAAAAAAAAAAA", "eyJ", ".", "-", "x", "1", "{", "}", "exec:", "\"kubectl\"", "'--token'", "|", "|"};
	unsigned seed = 20261123;
	(void)state;
	for (int n = 0; n < 400000; n++) {
		char in[512];
		size_t len = 0;
		int k = 1 + (int)(rand_r(&seed) % 12);
		struct gl_strbuf a = GL_STRBUF_INIT, b = GL_STRBUF_INIT;
		for (int w = 0; w < k; w++) {
			const char *pc = piece[rand_r(&seed) % (sizeof piece / sizeof *piece)];
			size_t pl = strlen(pc);
			if (len + pl + 1 >= sizeof in)
				break;
			memcpy(in + len, pc, pl);
			len += pl;
		}
		in[len] = '\0';
		gl_redact_secrets(in, &a);
		gl_redact_secrets(gl_strbuf_cstr(&a), &b);
		if (strcmp(gl_strbuf_cstr(&a), gl_strbuf_cstr(&b)))
			fail_msg("not idempotent on \"%s\"\n  once  \"%s\"\n  twice \"%s\"", in, gl_strbuf_cstr(&a),
				 gl_strbuf_cstr(&b));
		gl_strbuf_fini(&a);
		gl_strbuf_fini(&b);
		{
			/* the same text as an argv cut at '|' (spaces stay inside
			 * elements): `db redact` runs gl_redact_argv on stored argv */
			char *v[16], **once, **twice;
			size_t nv = 0;
			for (char *p = in, *e; nv < 15; p = e + 1) {
				v[nv++] = p;
				if (!(e = strchr(p, '|')))
					break;
				*e = '\0';
			}
			v[nv] = NULL;
			once = gl_redact_argv((const char *const *)v);
			twice = gl_redact_argv((const char *const *)once);
			for (size_t i = 0; i < nv; i++)
				if (strcmp(once[i], twice[i]))
					fail_msg("argv not idempotent at [%zu] \"%s\" (after \"%s\")\n  once  \"%s\"\n  twice \"%s\"", i,
						 v[i], i ? v[i - 1] : "", once[i], twice[i]);
			gl_redact_argv_free(once);
			gl_redact_argv_free(twice);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_with_a_value),
		cmocka_unit_test(test_urls_and_tokens),
		cmocka_unit_test(test_leaves_the_rest_alone),
		cmocka_unit_test(test_curl_user_password),
		cmocka_unit_test(test_nested_names),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_other_forms),
		cmocka_unit_test(test_idempotent),
		cmocka_unit_test(test_scheduler_commands_stay),
		cmocka_unit_test(test_flag_then_short_option),
		cmocka_unit_test(test_quote_opened_before_the_value),
		cmocka_unit_test(test_stray_quote_inside_a_quoted_value),
		cmocka_unit_test(test_label_after_a_credential_label),
		cmocka_unit_test(test_arguments_quoted_one_by_one),
		cmocka_unit_test(test_openssl_pass_arguments),
		cmocka_unit_test(test_sshpass_and_mysql),
		cmocka_unit_test(test_backslash_escaped_space),
		cmocka_unit_test(test_prose_after_a_credential_label),
		cmocka_unit_test(test_key_names),
		cmocka_unit_test(test_argv),
		cmocka_unit_test(test_idempotent_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
