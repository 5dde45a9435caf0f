#!/usr/bin/env bash
# scripts/rename-modules.sh on a small git tree of its own (a few files
# named as in the real tree): it renames a function at its definition, its
# call sites in tests and its mentions in docs, pays its line in
# layers-known.txt; a C function that shares its name with a SQL function
# is renamed in C code only (the SQL text in a string literal, sql/ and the
# docs keep the SQL name); a header's type and enumerators are renamed
# with their uses; a second run changes nothing; a name in use (lower or
# upper case) stops it. Run by `make test` (make check-layers).
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
t=$work/t

fresh() {
	rm -rf "$t"
	mkdir -p "$t"/{include/gl,src/domain,src/ingest,src/store,tests/unit,tests/scripts,docs,sql,scripts}
	cp "$here/scripts/rename-modules.sh" "$here/scripts/prefix.awk" "$t/scripts/"
	# this test names the new names: the script must neither take them for
	# a clash nor rename the old ones here
	cp "$here/tests/scripts/test_rename_modules.sh" "$t/tests/scripts/"
	printf 'int gl_month_start(int x);\nint gl_month_start(int x) { return x; }\n' >"$t/src/domain/window.c"
	printf 'int gl_dcgm_claim_pending(int c);\nint gl_dcgm_claim_pending(int c) { return c; }\n' >"$t/src/ingest/dcgm_ingest.c"
	printf 'const char *gl_dcgmstore_sql = "SELECT gl_dcgm_claim_pending($1::integer)";\nchar gl_dcgmstore_q = '"'\"'"';\n' \
		>"$t/src/store/dcgmstore.c"
	printf 'int main(void) { return gl_month_start(0) + gl_dcgm_claim_pending(0); }\n' >"$t/tests/unit/test_window.c"
	printf 'Months start at `gl_month_start`; the ingest claims (`gl_dcgm_claim_pending`, sql/020).\n' >"$t/docs/notes.md"
	printf -- '-- (gl_dcgm_claim_pending)\nCREATE FUNCTION gl_dcgm_claim_pending(p integer) RETURNS bigint LANGUAGE sql AS $$ SELECT 0::bigint $$;\n' \
		>"$t/sql/020_dcgm_pending.sql"
	# a header's type and enumerators, used by its file and a test
	printf '#ifndef GL_IDLERULE_H\n#define GL_IDLERULE_H\nenum gl_idle_stage { GL_IDLE_STAGE_NONE = 0, GL_IDLE_STAGE_ACT };\n#endif\n' \
		>"$t/include/gl/idlerule.h"
	printf '#include "gl/idlerule.h"\nint gl_idlerule_act(enum gl_idle_stage s);\nint gl_idlerule_act(enum gl_idle_stage s) { return s == GL_IDLE_STAGE_ACT; }\n' \
		>"$t/src/domain/idlerule.c"
	printf 'int t(void) { enum gl_idle_stage s = GL_IDLE_STAGE_NONE; return (int)s; }\n' >"$t/tests/unit/test_idlerule.c"
	printf '# known\nprefix src/domain/window.c gl_month_start\nprefix src/ingest/dcgm_ingest.c gl_dcgm_claim_pending\n' \
		>"$t/scripts/layers-known.txt"
	printf 'prefix include/gl/idlerule.h gl_idle_stage\nprefix include/gl/idlerule.h GL_IDLE_STAGE_NONE\nprefix include/gl/idlerule.h GL_IDLE_STAGE_ACT\n' \
		>>"$t/scripts/layers-known.txt"
	(cd "$t" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm tree)
}
check() { # name, condition (a shell test run in $t)
	if (cd "$t" && eval "$2"); then
		echo "ok   $1"
	else
		echo "FAIL $1"
		fails=$((fails + 1))
	fi
}

fresh
out=$("$t/scripts/rename-modules.sh" "$t" 2>&1)
rc=$?
check "first run succeeds" "[ $rc -eq 0 ]"
check "the definition is renamed" "grep -q 'int gl_window_month_start(int x) {' src/domain/window.c"
check "the call site in tests/ is renamed" "grep -q 'gl_window_month_start(0)' tests/unit/test_window.c"
check "the mention in docs/ is renamed" "grep -q '\`gl_window_month_start\`' docs/notes.md"
check "a C function named as a SQL one: C renamed" \
	"grep -q 'int gl_dcgm_ingest_claim_pending(int c) {' src/ingest/dcgm_ingest.c && grep -q 'gl_dcgm_ingest_claim_pending(0)' tests/unit/test_window.c"
check "its SQL text in a string literal is kept" "grep -qF '\"SELECT gl_dcgm_claim_pending(\$1::integer)\"' src/store/dcgmstore.c"
check "the document naming the SQL function is kept" "grep -q '(\`gl_dcgm_claim_pending\`, sql/020)' docs/notes.md"
check "a header's type and enumerators are renamed, with their uses" \
	"grep -q '^enum gl_idlerule_stage { GL_IDLERULE_STAGE_NONE = 0, GL_IDLERULE_STAGE_ACT };' include/gl/idlerule.h &&
	 grep -q 'gl_idlerule_act(enum gl_idlerule_stage s) { return s == GL_IDLERULE_STAGE_ACT; }' src/domain/idlerule.c &&
	 grep -q 'enum gl_idlerule_stage s = GL_IDLERULE_STAGE_NONE' tests/unit/test_idlerule.c"
check "its header guard is kept" "grep -q '^#define GL_IDLERULE_H' include/gl/idlerule.h"
check "sql/ is never touched" "git diff --quiet -- sql"
check "nor its own test" "git diff --quiet -- tests/scripts"
check "the paid lines leave layers-known.txt" "! grep -q '^prefix' scripts/layers-known.txt"
check "nothing is left" 'grep -q "prefix is not their file.s: 0" <<<"$out"'
(cd "$t" && git add -A && git -c user.name=t -c user.email=t@t commit -qm run1)
out=$("$t/scripts/rename-modules.sh" "$t" 2>&1)
rc=$?
check "a second run succeeds and says nothing to do" '[ $rc -eq 0 ] && grep -q "nothing to do" <<<"$out"'
check "a second run changes nothing" "git diff --quiet && [ -z \"\$(git status --porcelain)\" ]"

fresh
printf 'int gl_window_month_start;\n' >"$t/src/domain/planted.c"
(cd "$t" && git add -A && git -c user.name=t -c user.email=t@t commit -qm clash)
out=$("$t/scripts/rename-modules.sh" "$t" 2>&1)
rc=$?
check "a name in use stops it" '[ $rc -eq 1 ] && grep -q "gl_month_start -> gl_window_month_start would clash" <<<"$out"'
check "and the clashing rename writes nothing" "grep -q 'int gl_month_start(int x) {' src/domain/window.c"

fresh
printf '#define GL_IDLERULE_STAGE_ACT 3\n' >"$t/src/domain/planted.c"
(cd "$t" && git add -A && git -c user.name=t -c user.email=t@t commit -qm clash)
out=$("$t/scripts/rename-modules.sh" "$t" 2>&1)
rc=$?
check "an upper-case name in use stops it" '[ $rc -eq 1 ] && grep -q "GL_IDLE_STAGE_\* -> GL_IDLERULE_STAGE_\* would clash with names in use: GL_IDLERULE_STAGE_ACT" <<<"$out"'
check "and writes nothing of it" "grep -q 'GL_IDLE_STAGE_ACT' src/domain/idlerule.c"

[ $fails -eq 0 ] && echo "test_rename_modules: all passed" || echo "test_rename_modules: $fails failed"
[ $fails -eq 0 ]
