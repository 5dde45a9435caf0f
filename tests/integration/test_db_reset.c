/* A reconnection keeps the session settings (include/gl/db.h,
 * gl_db_reset): the daemon reconnects after every failover, and a bare
 * PQreset gave a session in the server's time zone (date arithmetic off
 * by its offset) without the instance name its ingest runs are recorded
 * under (sql/055). A real server whose database defaults to another time
 * zone; the backend is terminated under the connection as a failover
 * would end it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/testlib.h"
#include "store/db_int.h"

#include <stdio.h>
#include <string.h>

static char g_dsn[512];

static void test_reset_keeps_session(void **state)
{
	struct gl_err err = {0};
	PGconn *c = NULL;
	long long pid;
	char sql[160];
	assert_int_equal(gl_test_db_fresh("gl_test_db_reset", g_dsn, sizeof g_dsn), 0);
	{
		PGconn *a = PQconnectdb(gl_test_admin_dsn());
		PQclear(PQexec(a, "ALTER DATABASE gl_test_db_reset SET timezone = 'Asia/Tokyo'"));
		PQfinish(a);
	}
	gl_db_set_session("test-instance", 60);
	assert_int_equal(gl_db_connect_dsn(g_dsn, &c, &err), 0);
	assert_string_equal(gl_test_qstr(c, "SHOW TimeZone"), "UTC");
	assert_string_equal(gl_test_qstr(c, "SELECT current_setting('gpuledger.instance')"), "test-instance");
	pid = gl_test_qint(c, "SELECT pg_backend_pid()");
	snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%lld)", pid);
	assert_true(gl_test_exec_dsn(gl_test_admin_dsn(), sql) >= 0);
	/* the connection notices at its next statement */
	PQclear(PQexec(c, "SELECT 1"));
	assert_int_equal(PQstatus(c), CONNECTION_BAD);
	assert_int_equal(gl_db_reset(c, &err), 0);
	assert_true(gl_test_qint(c, "SELECT pg_backend_pid()") != pid);
	assert_string_equal(gl_test_qstr(c, "SHOW TimeZone"), "UTC");
	assert_string_equal(gl_test_qstr(c, "SELECT current_setting('gpuledger.instance')"), "test-instance");
	assert_string_equal(gl_test_qstr(c, "SHOW idle_in_transaction_session_timeout"), "1min");
	PQfinish(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_keeps_session),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
