/* gpuledger — pure parser for `nvidia-smi -q -x [-l S]`: one or more
 * <nvidia_smi_log> documents into the result of include/gl/nvsmi.h (read its
 * notes on units, unavailable values, times and ownership).
 *
 * The XML is regular (elements, text, an id attribute on <gpu>, a DOCTYPE),
 * so a small tokenizer reads it instead of a new XML library; it still
 * decodes the five named entities and numeric character references, skips
 * comments, processing instructions and CDATA, and bounds the nesting depth.
 * Per document: timestamp, driver_version; per <gpu>: uuid, product_name,
 * serial, minor_number, pci/pci_bus_id, mig_mode/current_mig,
 * fb_memory_usage/{total,used,free}, utilization/{gpu_util,memory_util},
 * power draw and limit (gpu_power_readings, or power_readings before
 * schema v12), each mig_devices/mig_device as a GPU of its own (gi_id =
 * gpu_instance_id, framebuffer only: nvidia-smi reports no utilisation for
 * MIG) and processes/process_info as apps.
 *
 * A document that is not well formed where it matters (an unclosed or
 * mismatched element) yields a problem with its line, and the GPUs read
 * before it are kept; no <nvidia_smi_log> at all is -GL_EFORMAT.
 */
#ifndef GL_NVSMIXML_H
#define GL_NVSMIXML_H

#include "gl/nvsmi.h"

#define GL_NVSMIXML_MAX_DEPTH 32

int gl_nvsmixml_parse(const char *buf, size_t len, const struct gl_nvsmi_opts *opts, struct gl_nvsmi_result *res,
		      struct gl_err *err) GL_MUSTCHECK;

#endif
