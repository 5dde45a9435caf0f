/* The ZIP writer: read back here with zlib (central directory, local
 * headers, CRCs, inflated bytes) and checked by the real unzip. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "gl/zip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static unsigned rd16(const unsigned char *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static const char *const names[] = {"showback-2026-10-team-owners.csv", "東京/ünïcode.csv", "empty.csv"};
static char big[200000];

static void build(struct gl_strbuf *out, const char **data, size_t *len)
{
	struct gl_zip z;
	struct gl_err err = {0};
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = "owner,cost\r\nvision,1.25\r\n"[i % 25];
	data[0] = big;
	len[0] = sizeof big;
	data[1] = "a,b\r\n\"x,y\",2\r\n";
	len[1] = strlen(data[1]);
	data[2] = "";
	len[2] = 0;
	gl_zip_init(&z, out, 1790812800 /* 2026-10-01 */);
	for (int i = 0; i < 3; i++)
		assert_int_equal(gl_zip_add(&z, names[i], data[i], len[i], &err), 0);
	gl_zip_finish(&z);
}

static void test_read_back(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT;
	const char *data[3];
	size_t len[3];
	const unsigned char *p, *eocd, *cd;
	(void)state;
	build(&out, data, len);
	p = (const unsigned char *)out.p;
	eocd = p + out.len - 22;
	assert_int_equal(rd32(eocd), 0x06054b50);
	assert_int_equal(rd16(eocd + 10), 3);
	cd = p + rd32(eocd + 16);
	assert_int_equal(rd32(eocd + 12), (uint32_t)(eocd - cd));
	for (int i = 0; i < 3; i++) {
		uint32_t crc = rd32(cd + 16), cs = rd32(cd + 20), us = rd32(cd + 24), off = rd32(cd + 42);
		unsigned nl = rd16(cd + 28);
		const unsigned char *lh = p + off;
		unsigned char *back = malloc(us + 1);
		z_stream s;
		assert_int_equal(rd32(cd), 0x02014b50);
		assert_int_equal(nl, strlen(names[i]));
		assert_memory_equal(cd + 46, names[i], nl);
		assert_int_equal(rd16(cd + 8) & 0x0800, 0x0800); /* UTF-8 names */
		/* 2026-10-01 00:00 in DOS form */
		assert_int_equal(rd16(cd + 14), (2026 - 1980) << 9 | 10 << 5 | 1);
		assert_int_equal(rd16(cd + 12), 0);
		assert_int_equal(us, len[i]);
		assert_int_equal(crc, (uint32_t)crc32(0L, (const Bytef *)data[i], (uInt)len[i]));
		/* the local header says the same */
		assert_int_equal(rd32(lh), 0x04034b50);
		assert_int_equal(rd32(lh + 14), crc);
		assert_int_equal(rd32(lh + 18), cs);
		assert_int_equal(rd32(lh + 22), us);
		memset(&s, 0, sizeof s);
		assert_int_equal(inflateInit2(&s, -15), Z_OK);
		s.next_in = (Bytef *)(uintptr_t)(lh + 30 + rd16(lh + 26) + rd16(lh + 28));
		s.avail_in = cs;
		s.next_out = back;
		s.avail_out = us + 1;
		assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
		assert_int_equal(s.total_out, us);
		assert_memory_equal(back, data[i], us);
		inflateEnd(&s);
		free(back);
		cd += 46 + nl;
	}
	/* compressed: the repetitive table shrinks */
	assert_true(out.len < sizeof big / 10);
	gl_strbuf_fini(&out);
}

static void test_unzip_accepts_it(void **state)
{
	struct gl_strbuf out = GL_STRBUF_INIT;
	const char *data[3];
	size_t len[3];
	char path[] = "/tmp/gl-zip-XXXXXX", cmd[256], line[256];
	int fd, n = 0;
	FILE *f;
	(void)state;
	build(&out, data, len);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, out.p, out.len), (ssize_t)out.len);
	close(fd);
	snprintf(cmd, sizeof cmd, "unzip -tq %s", path);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "unzip -Z1 %s", path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		assert_string_equal(line, names[n]);
		n++;
	}
	assert_int_equal(pclose(f), 0);
	assert_int_equal(n, 3);
	unlink(path);
	gl_strbuf_fini(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_back),
		cmocka_unit_test(test_unzip_accepts_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
