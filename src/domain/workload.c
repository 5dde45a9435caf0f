/* Workload types: the rule vocabulary (see include/gl/workload.h). */
#include "gl/workload.h"
#include "gl/chargeback.h"

#include <string.h>

int gl_workload_match_valid(const char *m)
{
	static const char *const ok[] = {"account", "user", "partition", "qos", "wckey", "namespace", "endpoint", "run_kind"};
	for (size_t i = 0; i < GL_ARRAY_LEN(ok); i++)
		if (!strcmp(m, ok[i]))
			return 1;
	return !strncmp(m, "label:", 6) && m[6] != '\0';
}

int gl_workload_name_check(const char *name, struct gl_err *err)
{
	size_t n = strlen(name);
	if (!n)
		return gl_err_set(err, GL_EINVAL, "empty workload type");
	if (n > GL_WORKLOAD_NAME_MAX)
		return gl_err_set(err, GL_EINVAL, "workload type longer than %d characters", GL_WORKLOAD_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'))
			return gl_err_set(err, GL_EINVAL, "'%s': workload types are lower case letters, digits, '_', '.' and '-'",
					  name);
	}
	/* a rule naming the fallback would make "no rule matched" and "a
	 * rule said so" one row */
	if (!strcmp(name, GL_WORKLOAD_UNCLASSIFIED) || gl_chargeback_name_reserved(name))
		return gl_err_set(err, GL_EINVAL, "'%s' is reserved (jobs no rule matches are %s)", name,
				  GL_WORKLOAD_UNCLASSIFIED);
	return 0;
}
