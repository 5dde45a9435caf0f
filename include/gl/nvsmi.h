/* gpuledger — pure parsers for nvidia-smi output: the fallback for nodes that
 * run no dcgm-exporter (docs/ingest.md, "nvidia-smi").
 *
 *   gl_nvsmi_parse_csv()  `nvidia-smi --query-gpu=LIST --format=csv[,noheader][,nounits] [-l S]`
 *                         and `nvidia-smi --query-compute-apps=LIST --format=csv...`
 *                         (told apart by their columns: a `pid` column means apps)
 *   gl_nvsmixml_parse()   `nvidia-smi -q -x [-l S]` (include/gl/nvsmixml.h; the
 *                         same result)
 *
 * Pure: no I/O, no clock, no libpq. Values land in the same struct
 * gl_dcgm_reading the dcgm-exporter mapping fills, in DCGM's units
 * (GPU_UTIL and MEM_COPY_UTIL in %, framebuffer in MiB, power in W), so one
 * rollup serves both. A cell nvidia-smi could not fill ("[N/A]", "N/A",
 * "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]",
 * "[Requested functionality has been deprecated]", any "[...]") is missing,
 * never zero: its bit in `have` stays clear and it is counted in
 * `unavailable`.
 *
 * Times: nvidia-smi prints the capturing host's local time without a zone
 * ("2026/07/14 08:12:38.696", "Fri Aug  4 11:44:30 2023"), so the caller
 * says the offset (opts->utc_offset_s; 0 for a capture made with TZ=UTC).
 *
 * Bad input: a bad row (wrong number of fields, a bad timestamp or GPU,
 * bytes that are not UTF-8) is skipped with a problem {line, reason}; a bad
 * value (no number, another unit, a percentage above 100) is left out of its
 * row with a problem and the row's other values stay. The rest is parsed;
 * the caller prints "file:line: reason". A capture without a required column is
 * refused as a whole (-GL_EFORMAT) naming the column: query-gpu needs
 * timestamp, uuid and utilization.gpu; compute-apps needs timestamp,
 * gpu_uuid and pid.
 *
 * Ownership: struct gl_nvsmi_result is caller-owned storage filled with heap
 * memory (every array and string in it) that gl_nvsmi_result_fini() releases;
 * fini on a zeroed or finalised result is a no-op. Nothing points into the
 * input. struct gl_nvsmi_opts is only read during the call.
 */
#ifndef GL_NVSMI_H
#define GL_NVSMI_H

#include "gl/common.h"
#include "gl/dcgm.h"

#include <stddef.h>
#include <stdint.h>

#define GL_NVSMI_MAX_PROBLEMS 1000 /* kept; further ones are counted */
#define GL_NVSMI_MAX_LINE (256 * 1024)
#define GL_NVSMI_MAX_COLUMNS 512

struct gl_nvsmi_opts {
	/* The --query-gpu / --query-compute-apps list ("timestamp,uuid,...")
	 * of a noheader capture; NULL: the first non-blank line is the header. */
	const char *fields;
	int64_t utc_offset_s; /* local time of the capturing host minus UTC */
};

enum gl_nvsmi_kind {
	GL_NVSMI_NONE = 0,
	GL_NVSMI_QUERY_GPU, /* --query-gpu CSV */
	GL_NVSMI_APPS,      /* --query-compute-apps CSV */
	GL_NVSMI_XML,       /* -q -x */
};

/* A GPU (or, from the XML, a MIG instance) as the capture names it. */
struct gl_nvsmi_gpu {
	char *uuid;              /* "GPU-..." as printed; never NULL */
	int gi_id;               /* MIG GPU instance id (XML mig_devices), -1 for a whole GPU */
	int index;               /* nvidia-smi index, -1 unknown */
	int minor;               /* /dev/nvidiaN (XML minor_number), -1 unknown */
	char *model;             /* name / product_name; NULL unknown */
	char *pci_bus_id;        /* NULL unknown */
	char *driver_version;    /* NULL unknown */
	char *serial;            /* NULL unknown */
	int64_t memory_total_mib; /* -1 unknown */
	double power_limit_w;    /* enforced.power.limit; < 0 unknown */
	int mig_mode;            /* 1 enabled, 0 disabled, -1 unknown */
};

/* One GPU at one instant. */
struct gl_nvsmi_sample {
	int64_t t_ms;            /* UTC milliseconds */
	size_t gpu;              /* index into gpus */
	struct gl_dcgm_reading r;
	size_t line;             /* where it came from (1-based) */
};

/* One process with a compute context on a GPU. */
struct gl_nvsmi_app {
	int64_t t_ms;            /* UTC milliseconds */
	size_t gpu;              /* index into gpus */
	int64_t pid;
	int64_t used_mib;        /* -1 unknown ([N/A] under WDDM or without permission) */
	char *process_name;      /* NULL unknown */
	char type[4];            /* XML: "C" compute, "G" graphics, "C+G"; CSV (compute only): "C" */
	size_t line;
};

struct gl_nvsmi_problem {
	size_t line;             /* 1-based; 0 = the capture as a whole */
	char *reason;            /* "utilization.gpu: 'x' is not a number" */
};

struct gl_nvsmi_result {
	enum gl_nvsmi_kind kind;
	struct gl_nvsmi_gpu *gpus;       /* first-seen order */
	size_t ngpus;
	struct gl_nvsmi_sample *samples; /* input order */
	size_t nsamples;
	struct gl_nvsmi_app *apps;       /* input order */
	size_t napps;
	struct gl_nvsmi_problem *problems;
	size_t nproblems;
	size_t problems_dropped;         /* beyond GL_NVSMI_MAX_PROBLEMS */
	size_t lines;                    /* input lines */
	size_t rows;                     /* data rows (CSV) or <gpu> elements (XML) read */
	size_t bad_rows;                 /* skipped, each with a problem */
	size_t values;                   /* metric values delivered into readings */
	size_t bad_values;               /* cells left out with a problem; their rows stay */
	size_t unavailable;              /* cells nvidia-smi could not fill, read as missing */
	/* private */
	size_t cap_gpus, cap_samples, cap_apps, cap_problems;
	uint32_t *index;                 /* open addressing over gpus: i + 1; 0 empty */
	size_t index_cap;
};

/* Returns 0 (bad rows are problems), -GL_EFORMAT when the input is not
 * nvidia-smi CSV at all or lacks a required column (err says which), or
 * -GL_ERANGE for a line longer than GL_NVSMI_MAX_LINE or more than
 * GL_NVSMI_MAX_COLUMNS columns. On error res holds nothing. */
int gl_nvsmi_parse_csv(const char *buf, size_t len, const struct gl_nvsmi_opts *opts,
		       struct gl_nvsmi_result *res, struct gl_err *err) GL_MUSTCHECK;
void gl_nvsmi_result_fini(struct gl_nvsmi_result *res);

/* Exported for tests and the XML parser. */
/* "2026/07/14 08:12:38.696" (milliseconds optional) -> ms of that civil
 * time taken as UTC. -GL_EINVAL otherwise. */
int gl_nvsmi_parse_time(const char *s, size_t n, int64_t *ms) GL_MUSTCHECK;
/* 1 when a cell is one nvidia-smi could not fill ("[N/A]", "N/A", "[...]"). */
int gl_nvsmi_unavailable(const char *s, size_t n);
/* A value with an optional unit after a space ("81559 MiB", "0 %", "69.85 W",
 * "12"): the number into *v; the unit must be `unit` when one is written
 * (unit NULL: no unit allowed). -GL_EINVAL (not a number) or -GL_ERANGE
 * (another unit). */
int gl_nvsmi_parse_value(const char *s, size_t n, const char *unit, double *v) GL_MUSTCHECK;

/* Shared with the XML parser (nvsmixml.c); not for other callers. */
size_t gl_nvsmi_gpu_get(struct gl_nvsmi_result *res, const char *uuid, size_t n, int gi_id);
void gl_nvsmi_problem(struct gl_nvsmi_result *res, size_t line, const char *fmt, ...) GL_PRINTF(3, 4);
struct gl_nvsmi_sample *gl_nvsmi_sample_add(struct gl_nvsmi_result *res);
struct gl_nvsmi_app *gl_nvsmi_app_add(struct gl_nvsmi_result *res);

#endif
