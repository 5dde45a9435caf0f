# The exported names whose name is not their file's: "FILE NAME" a line.
# In FILE.c, each non-static function gl_* defined there that is neither
# gl_FILE nor gl_FILE_* (docs/ARCHITECTURE.md, "Names"). A definition is a
# line at column 0 that names the function before its "(" (the house style
# keeps the return type on that line). In FILE.h (FILE_int.h is FILE's
# private header), each type it defines (struct, union or enum tag at
# column 0, a typedef name), each enumerator and each macro it defines: a
# gl_* name must be gl_FILE or gl_FILE_*, a GL_* one GL_FILE or GL_FILE_*
# (upper case); other names are not checked. The families that keep a
# shared prefix on purpose, each only in its own files: the route handlers
# gl_route_* (api/routes_*.c, one table in routes_core.c), the subcommands
# gl_cli_* (cli/*.c, declared in cli.h), the request API gl_req_* /
# gl_resp_* of api/server.c (its types gl_req, gl_resp* and macros GL_RESP_*
# in server.h) and the base helpers of util/common.c and common.h.
#
#   awk -f scripts/prefix.awk src/x/*.c include/gl/*.h   (run by
#                                check-layers.sh and rename-modules.sh)
FNR == 1 {
	base = FILENAME
	sub(/.*\//, "", base)
	sub(/\.c$/, "", base)
	hdr = FILENAME ~ /\.h$/
	if (hdr) {
		sub(/\.h$/, "", base)
		sub(/_int$/, "", base)
	}
	ubase = toupper(base)
	td = 0
	inenum = 0
}
# ---- headers: types, enumerators, macros ----
function hname(n) {
	if (n ~ /^gl_/) {
		if (n == "gl_" base || index(n, "gl_" base "_") == 1)
			return
	} else if (n ~ /^GL_/) {
		if (n == "GL_" ubase || index(n, "GL_" ubase "_") == 1)
			return
	} else
		return
	if (FILENAME ~ /(^|\/)include\/gl\/common\.h$/)
		return
	if (FILENAME ~ /(^|\/)include\/gl\/server\.h$/ && n ~ /^(gl_req|gl_resp|GL_RESP_)/)
		return
	print FILENAME, n
}
hdr && /^#[ \t]*define[ \t]/ {
	n = $0
	sub(/^#[ \t]*define[ \t]+/, "", n)
	sub(/[^A-Za-z0-9_].*/, "", n)
	hname(n)
	next
}
hdr && /^(typedef[ \t]+)?(struct|union|enum)[ \t]+[A-Za-z0-9_]+[ \t]*\{/ {
	n = $0
	sub(/^(typedef[ \t]+)?(struct|union|enum)[ \t]+/, "", n)
	sub(/[^A-Za-z0-9_].*/, "", n)
	hname(n)
}
hdr && /^(typedef[ \t]+)?enum[ \t]*([A-Za-z0-9_]+[ \t]*)?\{/ {
	inenum = 1
	body = ""
}
hdr && inenum {
	l = $0
	gsub(/\/\/.*/, "", l)
	body = body " " l
	# comments may span lines: taken out of the whole body
	c = body
	gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", c)
	if (c ~ /\}/) {
		inenum = 0
		body = c
		sub(/^[^{]*\{/, "", body)
		sub(/\}.*/, "", body)
		gsub(/=[^,]*/, "", body)
		k = split(body, a, ",")
		for (i = 1; i <= k; i++) {
			gsub(/[ \t]/, "", a[i])
			if (a[i] != "")
				hname(a[i])
		}
	}
}
# a typedef: its name before the ";" that ends it, or in "(*name)"
hdr && /^typedef[ \t]/ && !/\{/ {
	td = 1
	tds = ""
}
hdr && td {
	tds = tds " " $0
	if (tds ~ /;/) {
		td = 0
		n = tds
		if (n ~ /\([ \t]*\*[ \t]*[A-Za-z0-9_]+[ \t]*\)/) {
			sub(/^[^(]*\([ \t]*\*[ \t]*/, "", n)
			sub(/[^A-Za-z0-9_].*/, "", n)
		} else {
			sub(/[ \t]*(\[[^]]*\])*[ \t]*;.*/, "", n)
			sub(/.*[^A-Za-z0-9_]/, "", n)
		}
		hname(n)
	}
}
# the name of a "typedef struct { ... } name;"
hdr && /^\}[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*;/ {
	n = $0
	sub(/^\}[ \t]*/, "", n)
	sub(/[^A-Za-z0-9_].*/, "", n)
	hname(n)
}
hdr { next }
# ---- sources: functions ----
/^[A-Za-z_][^=;]*\(/ && !/^(static|typedef|extern)[ \t]/ {
	fn = $0
	sub(/\(.*/, "", fn)
	sub(/.*[ \t*]/, "", fn)
	if (fn !~ /^gl_/ || fn == "gl_" base || index(fn, "gl_" base "_") == 1)
		next
	if (FILENAME ~ /(^|\/)src\/api\/routes_[a-z0-9_]+\.c$/ && fn ~ /^gl_route_/)
		next
	if (FILENAME ~ /(^|\/)src\/cli\/[a-z0-9_]+\.c$/ && fn ~ /^gl_cli_/)
		next
	if (FILENAME ~ /(^|\/)src\/api\/server\.c$/ && fn ~ /^gl_(req|resp)_/)
		next
	if (FILENAME ~ /(^|\/)src\/util\/common\.c$/)
		next
	print FILENAME, fn
}
