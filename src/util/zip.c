/* ZIP archive writer (see include/gl/zip.h). The format: APPNOTE.TXT,
 * local headers + data, then the central directory and its end record;
 * sizes and CRCs are known before each header, so no data descriptors. */
#include "gl/zip.h"
#include "gl/timeutil.h"

#include <string.h>
#include <zlib.h>

static void put16(struct gl_strbuf *b, unsigned v)
{
	unsigned char c[2] = {(unsigned char)(v & 0xff), (unsigned char)(v >> 8 & 0xff)};
	gl_strbuf_append(b, c, 2);
}

static void put32(struct gl_strbuf *b, uint32_t v)
{
	put16(b, v & 0xffff);
	put16(b, v >> 16);
}

void gl_zip_init(struct gl_zip *z, struct gl_strbuf *out, int64_t mtime_s)
{
	int64_t y, days = mtime_s / 86400, sod = mtime_s % 86400;
	unsigned m, d;
	memset(z, 0, sizeof *z);
	z->out = out;
	gl_strbuf_init(&z->cd);
	gl_timeutil_civil_from_days(days, &y, &m, &d);
	if (y < 1980) { /* the format's epoch */
		y = 1980;
		m = d = 1;
		sod = 0;
	}
	z->dos_date = (uint16_t)((y - 1980) << 9 | m << 5 | d);
	z->dos_time = (uint16_t)((sod / 3600) << 11 | (sod / 60 % 60) << 5 | (sod % 60) / 2);
}

/* The fields local and central headers share, from "version needed" to
 * the extra-field length. */
static void put_common(struct gl_strbuf *b, const struct gl_zip *z, uint32_t crc, uint32_t csize, uint32_t usize,
		       size_t name_len)
{
	put16(b, 20);     /* version needed: 2.0 (deflate) */
	put16(b, 0x0800); /* names are UTF-8 */
	put16(b, 8);      /* deflate */
	put16(b, z->dos_time);
	put16(b, z->dos_date);
	put32(b, crc);
	put32(b, csize);
	put32(b, usize);
	put16(b, (unsigned)name_len);
	put16(b, 0);
}

int gl_zip_add(struct gl_zip *z, const char *name, const void *data, size_t len, struct gl_err *err)
{
	size_t name_len = strlen(name), offset = z->out->len, bound;
	z_stream s;
	uint32_t crc;
	int rc = 0, zrc;
	if (z->entries == 0xffff || len > 0xfffffffeu || offset > 0xfffffffeu || name_len > 0xffff)
		return gl_err_set(err, GL_EINVAL, "zip: %s: too large for a ZIP without ZIP64", name);
	memset(&s, 0, sizeof s);
	if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return gl_err_set(err, GL_EIO, "zip: %s: deflateInit2 failed", name);
	crc = (uint32_t)crc32(0L, data, (uInt)len);
	/* header with placeholder sizes, then the data straight after it */
	put32(z->out, 0x04034b50);
	put_common(z->out, z, crc, 0, (uint32_t)len, name_len);
	gl_strbuf_append(z->out, name, name_len);
	bound = deflateBound(&s, (uLong)len);
	gl_strbuf_reserve(z->out, bound);
	s.next_in = (Bytef *)(uintptr_t)data;
	s.avail_in = (uInt)len;
	s.next_out = (Bytef *)z->out->p + z->out->len;
	s.avail_out = (uInt)bound;
	zrc = deflate(&s, Z_FINISH);
	if (zrc != Z_STREAM_END) {
		rc = gl_err_set(err, GL_EIO, "zip: %s: deflate failed (%d)", name, zrc);
		z->out->len = offset;
		goto out;
	}
	z->out->len += s.total_out;
	z->out->p[z->out->len] = '\0'; /* the strbuf's terminator: reserve left room */
	{
		/* the compressed size into the local header (offset 18) */
		unsigned char *p = (unsigned char *)z->out->p + offset + 18;
		uint32_t cs = (uint32_t)s.total_out;
		p[0] = (unsigned char)(cs & 0xff);
		p[1] = (unsigned char)(cs >> 8 & 0xff);
		p[2] = (unsigned char)(cs >> 16 & 0xff);
		p[3] = (unsigned char)(cs >> 24 & 0xff);
	}
	put32(&z->cd, 0x02014b50);
	/* made by: Unix, 2.0 (an MS-DOS "made by" makes unzip translate the
	 * names from an OEM code page, UTF-8 flag or not) */
	put16(&z->cd, 3 << 8 | 20);
	put_common(&z->cd, z, crc, (uint32_t)s.total_out, (uint32_t)len, name_len);
	put16(&z->cd, 0); /* comment length */
	put16(&z->cd, 0); /* disk */
	put16(&z->cd, 0); /* internal attributes */
	put32(&z->cd, (uint32_t)0100644 << 16); /* external attributes: a regular file, rw-r--r-- */
	put32(&z->cd, (uint32_t)offset);
	gl_strbuf_append(&z->cd, name, name_len);
	z->entries++;
out:
	deflateEnd(&s);
	return rc;
}

void gl_zip_finish(struct gl_zip *z)
{
	size_t cd_offset = z->out->len;
	gl_strbuf_append(z->out, z->cd.p, z->cd.len);
	put32(z->out, 0x06054b50);
	put16(z->out, 0); /* this disk */
	put16(z->out, 0); /* the directory's disk */
	put16(z->out, z->entries);
	put16(z->out, z->entries);
	put32(z->out, (uint32_t)z->cd.len);
	put32(z->out, (uint32_t)cd_offset);
	put16(z->out, 0); /* comment length */
	gl_zip_abandon(z);
}

void gl_zip_abandon(struct gl_zip *z)
{
	gl_strbuf_fini(&z->cd);
}
