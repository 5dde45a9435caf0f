/* libFuzzer harness for the kube PodList parser (src/sources/kube.c) and the
 * GPU sharing rules (src/sources/kubegpu.c), with a node table so the
 * time-slicing and memory-share paths run too.
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
	static const struct gl_kubegpu_node_gpu nodes[] = {{"n1", 3, 40960}, {"n2", 0, 0}, {"ts", 10, 0}};
	struct gl_kube_opts opts = {.max_doc_bytes = 1 << 20, .nodes = nodes, .nnodes = 3};
	struct gl_jobrow row;
	size_t unclear = 0;
	int64_t v;

	/* The input is used exactly as given (no NUL): the parser must respect
	 * the length, which ASan checks at the buffer's end. */
	if (gl_kube_parse((const char *)data, size, &opts, &r, &err) == 0) {
		for (size_t i = 0; i < r.npods; i++) {
			const struct gl_kubegpu *g = &r.pods[i].gpu;
			gl_kube_pod_to_row(&r.pods[i], 0, &row);
			if (!row.job_key || !row.state || row.req_gpu_micro < 0)
				abort();
			if (strlen(row.tags_json) < 2 || strlen(r.pods[i].labels_json) < 2)
				abort();
			/* a kept pod has GPU intent; its row requests its
			 * micro-GPUs; shares are never negative, and what it
			 * holds in the books never more than its own share */
			if (!g->intent || g->gpu_micro < 0 || g->phys_micro < -1 || g->replicas < 0 ||
			    row.req_gpu_micro != g->gpu_micro || g->overflow || r.pods[i].held_micro < 0 ||
			    r.pods[i].held_micro > (g->phys_micro >= 0 ? g->phys_micro : g->gpu_micro))
				abort();
			if (g->share == GL_KUBEGPU_SHARE_RUNAI_RESERVATION && g->gpu_micro != 0)
				abort();
			for (size_t k = 0; k < g->nuuids; k++)
				if (!g->uuids[k][0])
					abort();
			unclear += g->note != NULL;
		}
		if (unclear != r.gpu_unclear || r.nproblems + r.problems_dropped < r.gpu_unclear)
			abort();
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
