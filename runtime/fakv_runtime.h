/*===- fakv_runtime.h - launching fakv kernels through the CUDA driver -===*
 *
 * A small C API (usable from C++, Python ctypes, or the frontend's
 * extension) over the CUDA driver API: load a cubin produced by
 * fakv-compile (cached by path), find a kernel, encode the tensor maps of
 * its TMA copies, launch it on a stream. What to pass for a kernel (threads,
 * shared memory, parameters, tensor maps) is in the .json that fakv-compile
 * writes next to the cubin. All functions return 0 on success; on failure
 * fakv_last_error() says why.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FAKV_RUNTIME_H
#define FAKV_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the last failure in this thread. */
const char *fakv_last_error(void);

/* Loads (once per path, in the current context) the cubin at `path`. */
int fakv_load_module(const char *path, void **module);
/* Loads a cubin image from memory (not cached). */
int fakv_load_module_data(const void *image, void **module);
/* The kernel `name` of a loaded module. */
int fakv_get_kernel(void *module, const char *name, void **kernel);

/* Encodes the 128-byte tensor map of a KV cache for a TMA copy: the cache
 * is (pages, rows, heads, dim) of 16-bit elements at `base`, `strides` in
 * elements (outermost first, the last one 1), boxes of `box_rows` rows x 64
 * channels of one head and page, 128-byte swizzle, zero fill past the end. */
int fakv_encode_kv_tensormap(void *out128, const void *base,
                             const uint64_t dims[4], const uint64_t strides[4],
                             uint32_t box_rows);

/* Launches `kernel` on `stream` (0 = the current context's default) with
 * `params[i]` pointing at the value of parameter i (a tensor map is 128
 * bytes). Raises the kernel's dynamic shared-memory limit when needed. */
int fakv_launch(void *kernel, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                unsigned threads, unsigned smem_bytes, void *stream,
                void **params);

/* fakv_launch with the parameter values packed in one buffer: parameter i
 * is at `values + offsets[i]` (n parameters). One call from Python per
 * launch, nothing allocated. */
int fakv_launch_packed(void *kernel, unsigned grid_x, unsigned grid_y,
                       unsigned grid_z, unsigned threads, unsigned smem_bytes,
                       void *stream, const char *values,
                       const uint32_t *offsets, unsigned n);

#ifdef __cplusplus
}
#endif

#endif /* FAKV_RUNTIME_H */
