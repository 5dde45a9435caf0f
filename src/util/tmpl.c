/* Placeholders in command templates (see include/gl/tmpl.h). */
#include "gl/tmpl.h"

#include <stdio.h>
#include <string.h>

int gl_tmpl_check(const char *s, const char *const *names, char *bad, size_t nbad)
{
	for (const char *p = s; p && (p = strchr(p, '{'));) {
		const char *e = strchr(p, '}');
		size_t n, i;
		if (!e)
			break;
		n = (size_t)(e - p - 1);
		for (i = 0; names[i]; i++)
			if (strlen(names[i]) == n && !strncmp(p + 1, names[i], n))
				break;
		if (!names[i]) {
			snprintf(bad, nbad, "%.*s", (int)(e - p + 1), p);
			return -1;
		}
		p = e + 1;
	}
	return 0;
}
