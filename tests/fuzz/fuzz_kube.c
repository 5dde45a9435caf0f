/* libFuzzer harness for the kube PodList parser (src/sources/kube.c).
 * Build by hand (tests/fuzz/run.sh does the same):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE \
 *     -Iinclude -I/usr/include/cjson tests/fuzz/fuzz_kube.c src/sources/kube.c \
 *     src/util/common.c src/util/log.c src/util/strbuf.c -lcjson -o build/fuzz_kube
 *   build/fuzz_kube -max_total_time=60 tests/fuzz/corpus/kube
 */
#include "gl/kube.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gl_kube_result r;
	struct gl_err err = {0};
	struct gl_kube_opts opts = {.max_doc_bytes = 1 << 20};
	struct gl_job_row row;
	int64_t v;

	/* The input is used exactly as given (no NUL): the parser must respect
	 * the length, which ASan checks at the buffer's end. */
	if (gl_kube_parse((const char *)data, size, &opts, &r, &err) == 0) {
		for (size_t i = 0; i < r.npods; i++) {
			gl_kube_pod_to_row(&r.pods[i], 0, &row);
			if (!row.job_key || !row.state || row.req_gpu_milli <= 0)
				abort();
			if (strlen(row.tags_json) < 2 || strlen(r.pods[i].labels_json) < 2)
				abort();
		}
		for (size_t i = 0; i < r.nproblems; i++)
			if (!r.problems[i][0])
				abort();
	} else if (r.npods || r.pods || r.nproblems) {
		abort(); /* a refused document produces nothing */
	}
	gl_kube_result_fini(&r);

	/* the pure helpers on the raw bytes too */
	(void)gl_kube_parse_quantity_milli((const char *)data, size < 64 ? size : 64, &v);
	(void)gl_kube_parse_rfc3339((const char *)data, size < 64 ? size : 64, &v);
	return 0;
}
