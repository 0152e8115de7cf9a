/*===- fakv_runtime.h - launching fakv kernels through the CUDA driver -===*
 *
 * A small C API over the CUDA driver (loaded at run time from libcuda.so.1;
 * runtime/CudaDriver.h): load a cubin, find a kernel, encode the tensor maps
 * of its TMA copies, launch it on a stream; page-locked host memory the
 * kernels report bad data in; PTX to a cubin by the driver's own JIT. What to
 * pass for a kernel (threads, shared memory, parameters, tensor maps) is in
 * its launch facts (lowering/LaunchFacts.h). All functions return 0 on
 * success; on failure fakv_last_error() says why. The Python extension
 * fakv._runtime (RuntimePython.cpp) is built on it.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FAKV_RUNTIME_H
#define FAKV_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the last failure in this thread. */
const char *fakv_last_error(void);

/* The current CUDA context (null when there is none). */
int fakv_current_context(void **context);

/* Makes `context` this thread's current CUDA context (null: none). */
int fakv_set_current_context(void *context);

/* Makes device `ordinal`'s primary context (the one the CUDA runtime and
 * torch use) this thread's current context, as the runtime does lazily on
 * a thread's first call. */
int fakv_bind_primary_context(int ordinal);

/* The SM count, the L2 cache's bytes and the memory's peak GB/s (0: unknown) of CUDA device `ordinal`. */
int fakv_device_properties(int ordinal, int *sms, int *l2_bytes, int *memory_gbps);

/* Whether `stream` is being captured into a CUDA graph. */
int fakv_stream_capturing(void *stream, int *capturing);

/* Sets the calling thread's stream-capture mode to `*mode` (CUstreamCaptureMode: 0 global, 1 thread-local,
 * 2 relaxed) and stores the one it had there. */
int fakv_exchange_capture_mode(int *mode);

/* Loads a cubin image from memory into the current context. */
int fakv_load_module_data(const void *image, void **module);
/* The kernel `name` of a loaded module. */
int fakv_get_kernel(void *module, const char *name, void **kernel);
/* Unloads a module (one whose kernel could not be found). */
int fakv_unload_module(void *module);

/* Encodes the 128-byte tensor map of a KV cache for a TMA copy: the cache
 * is (pages, rows, heads, dim) of 16-bit elements at `base`, `strides` in
 * elements (outermost first, the last one 1), boxes of `box_rows` rows x 64
 * channels of one head and page, 128-byte swizzle, zero fill past the end. */
int fakv_encode_kv_tensormap(void *out128, const void *base,
                             const uint64_t dims[4], const uint64_t strides[4],
                             uint32_t box_rows);

/* Launches `kernel` on `stream` (0 = the current context's default) with
 * `params[i]` pointing at the value of parameter i (a tensor map is 128
 * bytes). Raises the kernel's dynamic shared-memory limit when needed.
 * `programmatic`: with programmatic stream serialization (it may start while
 * the previous kernel finishes; it must wait for it before touching memory:
 * griddepcontrol.wait, fakvgpu-dependent-launch). */
int fakv_launch(void *kernel, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                unsigned threads, unsigned smem_bytes, void *stream,
                void **params, int programmatic);

/* `bytes` of zeroed page-locked host memory that kernels on every device can
 * write at the same address (portable, mapped; unified addressing). With a
 * `context` (fakv_current_context's, from another thread), that context is
 * made current in the calling thread first. */
int fakv_host_mapped(size_t bytes, void *context, void **host);

/* Assembles PTX for the current context's device with the driver's JIT
 * (no CUDA toolkit needed). `*cubin` is malloc'ed: free() it. */
int fakv_link_ptx(const char *ptx, size_t size, void **cubin, size_t *cubin_size);

#ifdef __cplusplus
}
#endif

#endif /* FAKV_RUNTIME_H */
