# The exported functions whose name is not their file's: "FILE FUNCTION" a
# line, for each non-static function gl_* defined in FILE.c that is neither
# gl_FILE nor gl_FILE_* (docs/ARCHITECTURE.md, "Names"). A definition is a
# line at column 0 that names the function before its "(" (the house style
# keeps the return type on that line). The families that keep a shared
# prefix on purpose, each only in its own files: the route handlers
# gl_route_* (api/routes_*.c, one table in routes_core.c), the subcommands
# gl_cli_* (cli/*.c, declared in cli.h), the request API gl_req_* /
# gl_resp_* of api/server.c and the base helpers of util/common.c.
#
#   awk -f scripts/prefix.awk src/x/*.c      (run by check-layers.sh and
#                                             rename-modules.sh)
FNR == 1 {
	base = FILENAME
	sub(/.*\//, "", base)
	sub(/\.c$/, "", base)
}
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
