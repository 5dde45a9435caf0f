/* The settings' shared checks (see include/gl/settings.h). Pure. */
#include "gl/settings.h"
#include "gl/tmpl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gl_settings_alert_keys[] = {"owner", "month", "threshold", "spend", "budget", "currency", "pct",
					     NULL};

int gl_settings_alert_command_check(const char *tmpl, char *bad, size_t nbad)
{
	return gl_tmpl_check(tmpl, gl_settings_alert_keys, bad, nbad);
}

int gl_settings_thresholds_parse(const char *s, int *out, size_t max, size_t *n, struct gl_err *err)
{
	const char *p = s ? s : "";
	*n = 0;
	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 1 || v > 1000 || (*end && *end != ','))
			return gl_err_set(err, GL_ECONFIG, "budget_alerts.thresholds: '%s' is not a comma list of 1..1000", s);
		if (*n == max)
			return gl_err_set(err, GL_ECONFIG, "budget_alerts.thresholds: more than %zu", max);
		if (*n && out[*n - 1] >= v)
			return gl_err_set(err, GL_ECONFIG, "budget_alerts.thresholds: '%s' must be ascending and distinct", s);
		out[(*n)++] = (int)v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

const char *const gl_settings_aggregates[] = {"team", "project", "cost_center", "account", "user", "workload_type", NULL};

int gl_settings_aggregate_ok(const char *dim)
{
	for (size_t i = 0; gl_settings_aggregates[i]; i++)
		if (!strcmp(gl_settings_aggregates[i], dim))
			return 1;
	return 0;
}

int gl_settings_match_valid(const char *m)
{
	static const char *const ok[] = {"account", "user", "partition", "qos", "wckey", "namespace"};
	for (size_t i = 0; i < GL_ARRAY_LEN(ok); i++)
		if (!strcmp(m, ok[i]))
			return 1;
	return !strncmp(m, "label:", 6) && m[6] != '\0';
}

int gl_settings_schedule_parse(const char *s, int64_t *secs, struct gl_err *err)
{
	unsigned h, m;
	int n = 0;
	if (!s || sscanf(s, "%2u:%2u%n", &h, &m, &n) != 2 || n != 5 || s[5] || h > 23 || m > 59)
		return gl_err_set(err, GL_ECONFIG, "reports.schedule: '%s' is not HH:MM", s ? s : "");
	*secs = (int64_t)h * 3600 + (int64_t)m * 60;
	return 0;
}

const char *const gl_settings_report_ext[] = {"csv", "html", "pdf", "zip"};
