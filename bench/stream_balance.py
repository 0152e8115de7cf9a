#!/usr/bin/env python3
"""What one wave of a static split costs a streaming read, against the same
read handed out in chunks: the ceiling a decode of one wave can reach.

    python bench/stream_balance.py [--gib 1] [--rounds 3]
    python bench/stream_balance.py --buffers 8 --ways "tma2 static 256"   # the read, buffer by buffer

A plain CUDA kernel (cupy's NVRTC; no fakv) reads a buffer of --gib GiB
once with 16-byte streaming loads and XORs it into one word, in these ways:
`static N`: N blocks, each a contiguous 1/N of the buffer (256 is one
decode program per sequence and kv head of b32 s8K; 264 fills the H200's
two programs an SM); `dynamic C`: 264 blocks taking chunks of C KiB from
an atomic counter until none are left (the last block out resets it).
Every block of 256 threads keeps UNROLL loads of 16 bytes a thread in
flight (UNROLL 8: 32 KiB a block, a fakv ring's two stages are 64).
`tmaS static N` / `tmaS dynamic C`: the same by TMA as a fakv decode program
reads, one thread copying 1-D bulk pieces into a ring of S slots (tma2: 2 x
32 KiB, tma4: 4 x 16, tma6: 6 x 16, tma8: 8 x 8, tma16: 16 x 4, tma32: 32 x
2) that four warps XOR out of shared memory, two blocks an SM (100 KiB of
shared memory each). `tma2kv static N`, `tma2kv2k static N`, `tma3kv2k
static N`: the buffer's halves read as a decode's K and V caches, a block
the same share of each, each slot (2 or 3 of 32 KiB) half K and half V, by
copies of 16 KiB or of 2 KiB (a fakv program's key and value blocks and
its boxes' size). `tma2kvmap static N heads=H`: tma2kv through 4-D tensor
maps as fakv reads its caches (the halves as [N / H, rows, H, 128]
caches, a block one sequence's head, 16-row boxes of 64 channels, 128-byte
swizzle; `box=R`: R-row boxes, 8 or 64; `page=P`: the caches as [pages, P,
heads, 128] (P 16, 64 or 256) read through a block table of the pages in a
random permutation, `order=sorted`: in order; the producer looks up
the next tile's pages before it waits for a free slot, `ahead=0`: a tile's
after the wait, as fakv's TMA producer does; `across=1`: a block reads
every head of its sequence over a 1/H share of the rows, a 64-row tile of
each head in turn, so a page's heads are read back to back by one block
instead of by H blocks, contiguous or in pages of 16 or 64; `hint=first`,
`last`, `normal` or `unchanged`: its copies carry that L2 eviction
priority, `.L2::cache_hint` with a createpolicy; `d=64` or `d=256`: caches
of that head dim ([.., H, 64] or [.., H, 256]; tiles of 128 or 32 rows, a
slot 32 KiB of K and V as at 128; boxes of 16, contiguous or in pages of
16, 64 or 256, not across); `warm=N`: after a tile's
copies, the first line of each box N tiles ahead prefetched into L2,
K's and V's, as a way to have its translation and its DRAM row asked
for early): fakv's box
pattern without its attention. A static TMA way's `delay=NS` (`tma2 static 256
delay=3000`) holds each block's first copy back NS nanoseconds (what a
program's start costs before its first copy). Each
way is checked against the XOR of the buffer's words, then timed like
bench_grid.py (a CUDA graph of calls over two buffers that never sit in L2,
median of 10 replays a round, the ways interleaved over --rounds) next to
a 2 GiB device copy (bench_grid.copy_bandwidth). Prints each way's time and
bandwidth as a fraction of the copy's, and for the static ways the spread
of the blocks' end times (%globaltimer at a block's start and end, one
extra launch) after the first block's start (Reader.launch's with_times;
bench/timeline.py reads them beside fakv's).
"""
import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

SOURCE = r"""
typedef unsigned long long u64;
__device__ __forceinline__ u64 now() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ uint4 ld(const uint4* p) { return __ldcs(p); }

template <int UNROLL>
__device__ __forceinline__ uint4 read_range(const uint4* src, size_t lo, size_t hi) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (size_t i = lo + threadIdx.x; i < hi; i += (size_t)blockDim.x * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      size_t j = i + (size_t)u * blockDim.x;
      v[u] = j < hi ? ld(src + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { acc.x ^= v[u].x; acc.y ^= v[u].y; acc.z ^= v[u].z; acc.w ^= v[u].w; }
  }
  return acc;
}

__device__ __forceinline__ void finish(uint4 acc, unsigned* out) {
  unsigned x = acc.x ^ acc.y ^ acc.z ^ acc.w;
  for (int o = 16; o; o >>= 1) x ^= __shfl_xor_sync(0xffffffffu, x, o);
  if ((threadIdx.x & 31) == 0) atomicXor(out, x);
}

template <int UNROLL>
__device__ void read_static(const uint4* src, size_t n, unsigned* out, u64* times) {
  u64 t0 = now();
  size_t per = (n + gridDim.x - 1) / gridDim.x, lo = per * blockIdx.x, hi = min(lo + per, n);
  finish(read_range<UNROLL>(src, lo, hi), out);
  __syncthreads();
  if (times && threadIdx.x == 0) { times[4 * blockIdx.x] = t0; times[4 * blockIdx.x + 3] = now(); }
}

template <int UNROLL>
__device__ void read_dynamic(const uint4* src, size_t n, size_t chunk, unsigned* out, unsigned* counters) {
  __shared__ unsigned ticket;
  uint4 acc = make_uint4(0, 0, 0, 0);
  size_t chunks = (n + chunk - 1) / chunk;
  for (;;) {
    if (threadIdx.x == 0) ticket = atomicAdd(&counters[0], 1u);
    __syncthreads();
    unsigned t = ticket;
    __syncthreads();
    if (t >= chunks) break;
    uint4 a = read_range<UNROLL>(src, t * chunk, min((t + 1) * chunk, n));
    acc.x ^= a.x; acc.y ^= a.y; acc.z ^= a.z; acc.w ^= a.w;
  }
  finish(acc, out);
  if (threadIdx.x == 0) {            // the last block out resets the counters for the next launch
    __threadfence();
    if (atomicAdd(&counters[1], 1u) == gridDim.x - 1) { counters[0] = 0; counters[1] = 0; __threadfence(); }
  }
}


// The same read by TMA (cp.async.bulk, 1-D) into a ring of STAGES slots of SLOT bytes: one producer thread,
// four consumer warps XOR-ing each slot out of shared memory, a fakv decode program's shape. dynamic: the
// producer takes chunks of `chunk` bytes from counters[0]; else the block's contiguous share.
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}\n"
               :: "r"(bar), "r"(parity) : "memory");
}
// The four consumer warps of a TMA ring: each slot's `parts` pieces of len[slot] bytes (PART apart) XORed out
// of shared memory, the slot handed back; a length of -1 ends the ring. Thread 32 notes when the first and the
// last slot arrived (with `times`).
template <int STAGES, int SLOT, int PART>
__device__ void consume_ring(const char* ring, int parts, u64* full, u64* empty, long long* len, uint4& acc,
                             bool times, u64& first, u64& last) {
  unsigned c = threadIdx.x - 32;
  for (unsigned k = 0;; ++k) {
    unsigned s = k % STAGES;
    bar_wait(smem_u32(&full[s]), (k / STAGES) & 1);
    long long n = len[s];
    if (n < 0) break;
    if (times && threadIdx.x == 32) { last = now(); first = k ? first : last; }
    for (int part = 0; part < parts; ++part) {
      const uint4* v = (const uint4*)(ring + (size_t)s * SLOT + part * PART);
      for (unsigned i = c; i < n / 16; i += 128) { uint4 x = v[i]; acc.x ^= x.x; acc.y ^= x.y; acc.z ^= x.z; acc.w ^= x.w; }
    }
    __syncwarp();
    if ((threadIdx.x & 31) == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(&empty[s])) : "memory");
  }
}

template <int STAGES, int SLOT, bool KV, int PIECE>
__device__ void tma_read(const char* src, size_t nbytes, size_t chunk, int dynamic, unsigned* out,
                         unsigned* counters, u64* times) {
  extern __shared__ __align__(128) char ring[];
  __shared__ __align__(8) u64 full[STAGES], empty[STAGES];
  __shared__ long long len[STAGES];
  u64 t0 = now();
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; ++i) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[i])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 4;" :: "r"(smem_u32(&empty[i])));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  uint4 acc = make_uint4(0, 0, 0, 0);
  u64 first = 0, last = 0;                       // (thread 32: when the first and the last slot arrived)
  // KV: the buffer's halves are a K and a V cache; a block reads the same share of each, a slot half K and
  // half V (a decode program's key block and value block), in copies of PIECE bytes.
  constexpr unsigned PART = KV ? SLOT / 2 : SLOT;
  size_t half = KV ? nbytes / 2 : nbytes;
  if (threadIdx.x == 0) {                        // the producer
    if (!dynamic && chunk)                       // (a static way's `delay=NS`: the first copy that late)
      while (now() - t0 < chunk) {}
    size_t per = ((half + gridDim.x - 1) / gridDim.x + 127) / 128 * 128;   // (bulk copies: 16-byte aligned)
    size_t lo = dynamic ? 0 : min(per * blockIdx.x, half), hi = dynamic ? 0 : min(lo + per, half);
    unsigned k = 0;
    for (;;) {
      if (lo >= hi) {
        if (!dynamic) break;
        size_t t = atomicAdd(&counters[0], 1u);
        lo = t * chunk;
        if (lo >= nbytes) break;
        hi = min(lo + chunk, nbytes);
      }
      unsigned s = k % STAGES, use = k / STAGES;
      if (use) bar_wait(smem_u32(&empty[s]), (use - 1) & 1);
      unsigned n = (unsigned)min((size_t)PART, hi - lo);
      len[s] = n;
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(&full[s])),
                   "r"(KV ? 2 * n : n) : "memory");
      for (int part = 0; part < (KV ? 2 : 1); ++part)
        for (unsigned at = 0; at < n; at += PIECE)
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                       :: "r"(smem_u32(ring + (size_t)s * SLOT + part * PART + at)), "l"(src + part * half + lo + at),
                          "r"(min((unsigned)PIECE, n - at)), "r"(smem_u32(&full[s])) : "memory");
      lo += n;
      ++k;
    }
    unsigned s = k % STAGES, use = k / STAGES;        // the end, as a slot of length -1
    if (use) bar_wait(smem_u32(&empty[s]), (use - 1) & 1);
    len[s] = -1;
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(&full[s])) : "memory");
  } else if (threadIdx.x >= 32) {                 // four consumer warps
    consume_ring<STAGES, SLOT, PART>(ring, KV ? 2 : 1, full, empty, len, acc, times, first, last);
  }
  finish(acc, out);
  if (times && threadIdx.x == 32) { times[4 * blockIdx.x + 1] = first; times[4 * blockIdx.x + 2] = last; }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (times) { times[4 * blockIdx.x] = t0; times[4 * blockIdx.x + 3] = now(); }
    if (dynamic) {
      __threadfence();
      if (atomicAdd(&counters[1], 1u) == gridDim.x - 1) { counters[0] = 0; counters[1] = 0; __threadfence(); }
    }
  }
}
#define TMA(NAME, STAGES, SLOT, KV, PIECE) extern "C" __global__ void __launch_bounds__(160) NAME(const char* s, \
  size_t n, size_t c, int d, unsigned* o, unsigned* k, u64* t) { tma_read<STAGES, SLOT, KV, PIECE>(s, n, c, d, o, k, t); }
TMA(tma2, 2, 32768, false, 32768)
TMA(tma4, 4, 16384, false, 16384)
TMA(tma6, 6, 16384, false, 16384)
TMA(tma8, 8, 8192, false, 8192)
TMA(tma16, 16, 4096, false, 4096)
TMA(tma32, 32, 2048, false, 2048)
TMA(tma2kv, 2, 32768, true, 16384)
TMA(tma2kv2k, 2, 32768, true, 2048)
TMA(tma3kv2k, 3, 32768, true, 2048)

// tma2kv through 4-D tensor maps, as a fakv decode reads its caches: the buffer's halves a K and a V cache of
// [sequences, rows, heads, D] 16-bit elements (maps: K's and V's 128-byte CUtensorMap in global memory),
// block j reading head j % heads of sequence j / heads in tiles (64 rows at D = 128), a slot a K and a V tile, each as
// BOX-row boxes of 64 channels, a box's D / 64 channel quarters of 64 asked for back to back (fakv's row boxes),
// tiles of 8192 / D rows (a 32 KiB slot of K and V whatever the head dim D: 64, 128 or 256), 128-byte
// swizzle; consumers as tma_read's. PAGE: the caches are [pages, PAGE, heads, D], a sequence's pages through
// `table` (int32 [sequences, rows / PAGE]), looked up a tile ahead (before the wait for a free slot) or, without
// `ahead`, after that wait. ACROSS: block j reads every head of sequence j / heads over its (j % heads)-th
// share of the rows, a 64-row tile of each head in turn (a page's heads back to back), instead of one head's
// rows. Box, page and order are constants: the producer's code is straight.
template <int BOX, int PAGE, bool ACROSS, int D = 128>
__device__ void kvmap_read(const char* maps, int heads, int rows, const int* table, int ahead, int hint,
                           int warm, const char* base, size_t half_bytes, unsigned* out, u64* times) {
  extern __shared__ __align__(128) char map_ring[];
  __shared__ __align__(8) u64 full[2], empty[2];
  __shared__ long long len[2];
  constexpr int TROWS = 8192 / D, BOXES = TROWS / BOX, CH = D / 64;   // a tile's rows, boxes, 64-channel parts
  u64 t0 = now();
  char* slots = (char*)(((size_t)map_ring + 1023) / 1024 * 1024);      // (swizzled boxes: 1024-byte aligned)
  if (threadIdx.x == 0) {
    for (int i = 0; i < 2; ++i) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_u32(&full[i])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 4;" :: "r"(smem_u32(&empty[i])));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  uint4 acc = make_uint4(0, 0, 0, 0);
  u64 first = 0, last = 0;
  int seq = blockIdx.x / heads, tiles = rows / TROWS, first_tile = ACROSS ? blockIdx.x % heads * (tiles / heads) : 0;
  if (threadIdx.x == 0) {
    const int* row = PAGE ? table + (size_t)seq * (rows / (PAGE ? PAGE : 1)) : nullptr;
    auto head_of = [&](int t) { return ACROSS ? t % heads : (int)(blockIdx.x % heads); };
    auto tile_of = [&](int t) { return ACROSS ? first_tile + t / heads : t; };    // its TROWS rows of the sequence
    auto lookup = [&](int t, int b) {              // box b of tile t: its page
      return PAGE ? __ldg(row + (tile_of(t) * TROWS + b * BOX) / (PAGE ? PAGE : 1)) : seq;
    };
    u64 policy = 0;                                // (hint: the copies' L2 eviction priority, by createpolicy)
    if (hint == 1) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    if (hint == 2) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    if (hint == 3) asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
    if (hint == 4) asm volatile("createpolicy.fractional.L2::evict_unchanged.b64 %0, 1.0;" : "=l"(policy));
    int next[BOXES];
#pragma unroll
    for (int b = 0; b < BOXES; ++b) next[b] = ahead ? lookup(0, b) : seq;
    for (int t = 0; t <= tiles; ++t) {
      unsigned s = t % 2, use = t / 2;
      if (use) bar_wait(smem_u32(&empty[s]), (use - 1) & 1);
      if (t == tiles) {                            // the end, as a slot of length -1
        len[s] = -1;
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_u32(&full[s])) : "memory");
        break;
      }
      len[s] = 32768;
      int at[BOXES];
#pragma unroll
      for (int b = 0; b < BOXES; ++b) {
        at[b] = PAGE && !ahead ? lookup(t, b) : next[b];
        if (PAGE && ahead && t + 1 < tiles) next[b] = lookup(t + 1, b);
      }
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(&full[s])),
                   "r"(32768) : "memory");
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int b = 0; b < BOXES; ++b)
#pragma unroll
          for (int half = 0; half < CH; ++half) {
            unsigned dst = smem_u32(slots + s * 32768 + m * 16384 + b * BOX * D * 2 + half * BOX * 128);
            int row = PAGE ? (tile_of(t) * TROWS + b * BOX) % (PAGE ? PAGE : 1) : tile_of(t) * TROWS + b * BOX;
            if (hint)
              asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint"
                           " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;"
                           :: "r"(dst), "l"((u64)(maps + m * 128)), "r"(half * 64), "r"(head_of(t)), "r"(row),
                              "r"(at[b]), "r"(smem_u32(&full[s])), "l"(policy) : "memory");
            else
              asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                           " [%0], [%1, {%2, %3, %4, %5}], [%6];"
                           :: "r"(dst), "l"((u64)(maps + m * 128)), "r"(half * 64), "r"(head_of(t)), "r"(row),
                              "r"(at[b]), "r"(smem_u32(&full[s])) : "memory");
          }
      if (warm && t + warm < tiles) {             // (warm: each box's first line `warm` tiles ahead, into L2)
#pragma unroll
        for (int b = 0; b < BOXES; ++b) {
          int row = (tile_of(t + warm) * TROWS + b * BOX) % (PAGE ? PAGE : rows);
          size_t at_row = ((size_t)lookup(t + warm, b) * (PAGE ? PAGE : rows) + row) * heads + head_of(t + warm);
          for (int m = 0; m < 2; ++m)
            asm volatile("prefetch.global.L2 [%0];" :: "l"(base + m * half_bytes + at_row * D * 2) : "memory");
        }
      }
    }
  } else if (threadIdx.x >= 32) {
    consume_ring<2, 32768, 32768>(slots, 1, full, empty, len, acc, times, first, last);
  }
  finish(acc, out);
  if (times && threadIdx.x == 32) { times[4 * blockIdx.x + 1] = first; times[4 * blockIdx.x + 2] = last; }
  __syncthreads();
  if (times && threadIdx.x == 0) { times[4 * blockIdx.x] = t0; times[4 * blockIdx.x + 3] = now(); }
}
#define KVMAP(NAME, BOX, PAGE, ACROSS, ...) extern "C" __global__ void __launch_bounds__(160) NAME(const char* maps, \
  int heads, int rows, const int* table, int ahead, int hint, int warm, const char* base, size_t half, unsigned* o, \
  u64* t) { kvmap_read<BOX, PAGE, ACROSS, ##__VA_ARGS__>(maps, heads, rows, table, ahead, hint, warm, base, half, o, t); }
KVMAP(tma2kvmap, 16, 0, false)
KVMAP(tma2kvmap_b8, 8, 0, false)
KVMAP(tma2kvmap_b64, 64, 0, false)
KVMAP(tma2kvmap_p16, 16, 16, false)
KVMAP(tma2kvmap_p64, 16, 64, false)
KVMAP(tma2kvmap_p256, 16, 256, false)
KVMAP(tma2kvmap_x, 16, 0, true)
KVMAP(tma2kvmap_p16x, 16, 16, true)
KVMAP(tma2kvmap_p64x, 16, 64, true)
KVMAP(tma2kvmap_d64, 16, 0, false, 64)
KVMAP(tma2kvmap_d64_p16, 16, 16, false, 64)
KVMAP(tma2kvmap_d64_p64, 16, 64, false, 64)
KVMAP(tma2kvmap_d64_p256, 16, 256, false, 64)
KVMAP(tma2kvmap_d256, 16, 0, false, 256)
KVMAP(tma2kvmap_d256_p16, 16, 16, false, 256)
KVMAP(tma2kvmap_d256_p64, 16, 64, false, 256)
KVMAP(tma2kvmap_d256_p256, 16, 256, false, 256)

extern "C" __global__ void __launch_bounds__(256) static4(const uint4* s, size_t n, unsigned* o, u64* t) { read_static<4>(s, n, o, t); }
extern "C" __global__ void __launch_bounds__(256) static8(const uint4* s, size_t n, unsigned* o, u64* t) { read_static<8>(s, n, o, t); }
extern "C" __global__ void __launch_bounds__(256) static16(const uint4* s, size_t n, unsigned* o, u64* t) { read_static<16>(s, n, o, t); }
extern "C" __global__ void __launch_bounds__(256) dynamic8(const uint4* s, size_t n, size_t c, unsigned* o, unsigned* k) { read_dynamic<8>(s, n, c, o, k); }
"""

SMS = 132
HINTS = ("none", "first", "last", "normal", "unchanged")    # tma2kvmap's hint=: its copies' L2 eviction priority


KERNELS = ("static4", "static8", "static16", "dynamic8", "tma2", "tma4", "tma6", "tma8", "tma16", "tma32", "tma2kv",
           "tma2kv2k", "tma3kv2k", "tma2kvmap", "tma2kvmap_b8", "tma2kvmap_b64", "tma2kvmap_p16", "tma2kvmap_p64",
           "tma2kvmap_p256", "tma2kvmap_x", "tma2kvmap_p16x", "tma2kvmap_p64x", "tma2kvmap_d64", "tma2kvmap_d64_p16",
           "tma2kvmap_d64_p64", "tma2kvmap_d64_p256", "tma2kvmap_d256", "tma2kvmap_d256_p16", "tma2kvmap_d256_p64",
           "tma2kvmap_d256_p256")


class Reader:
    """Two random buffers of `nbytes` and the kernels above: launch(way, i)
    reads buffer i one way (see the module's doc) on torch's current stream."""

    def __init__(self, nbytes, buffers=2):
        import cupy
        import torch
        self.mod = cupy.RawModule(code=SOURCE, options=("-std=c++17", "-arch=sm_90a"))
        self.kern = {name: self.mod.get_function(name) for name in KERNELS}
        for name in KERNELS:     # (100 KiB of shared memory a TMA block whatever its ring: two an SM, as fakv's)
            if name.startswith("tma"):
                self.kern[name].max_dynamic_shared_size_bytes = 100 * 1024
        self.nbytes = nbytes // 32 * 32                   # (the KV ways read halves of 16-byte multiples)
        self.bufs = [torch.randint(-2 ** 31, 2 ** 31 - 1, (self.nbytes // 4,), dtype=torch.int32, device="cuda")
                     for _ in range(buffers)]
        self.out = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.counters = torch.zeros(2, dtype=torch.int32, device="cuda")
        self.times = torch.zeros(4 * 4096, dtype=torch.int64, device="cuda")      # (4096 blocks: two calls of 2048)
        self.maps = {}                  # kv_maps' tensor maps (and block tables) by buffer and way

    def launch(self, way, i, with_times=False, times_at=0):
        """way: "static8 256" (LDG, UNROLL 8, 256 blocks), "dynamic8 1024" (LDG, chunks of 1024 KiB), "tma4
        static 256", "tma4 dynamic 1024" (TMA ring, chunks of 1024 KiB, 264 blocks). with_times: a static
        way's blocks write (start, first slot in, last slot in (TMA ways), end) by %globaltimer, four
        entries a block, to self.times from entry times_at on."""
        import cupy
        import numpy as np
        import torch
        kind, *arg = way.split()
        buf, n = self.bufs[i], self.nbytes // 16
        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
        stamp = np.uint64(self.times.data_ptr() + 8 * times_at) if with_times else np.uint64(0)
        out, counters = self.out.data_ptr(), self.counters.data_ptr()
        with stream:
            if kind == "tma2kvmap":
                assert arg[0] == "static", f"{way}: a static way"
                options = ("heads", "box", "page", "order", "ahead", "across", "hint", "warm", "d")
                unknown = [a for a in arg[2:] if a.partition("=")[0] not in options]
                assert not unknown, \
                    f"{way}: unknown options {unknown} (heads=, box=, page=, order=, ahead=, across=, hint=, warm=, d=)"
                blocks, heads = int(arg[1]), int(next(a[6:] for a in arg[2:] if a.startswith("heads=")))
                box = int(next((a[4:] for a in arg[2:] if a.startswith("box=")), 16))
                page = int(next((a[5:] for a in arg[2:] if a.startswith("page=")), 0))
                order = next((a[6:] for a in arg[2:] if a.startswith("order=")), "random")
                ahead = int(next((a[6:] for a in arg[2:] if a.startswith("ahead=")), 1))
                across = int(next((a[7:] for a in arg[2:] if a.startswith("across=")), 0))
                hint = next((a[5:] for a in arg[2:] if a.startswith("hint=")), "none")
                assert hint in HINTS, f"{way}: hint= one of {', '.join(HINTS)}"
                warm = int(next((a[5:] for a in arg[2:] if a.startswith("warm=")), 0))
                d = int(next((a[2:] for a in arg[2:] if a.startswith("d=")), 128))
                name = kind + (f"_p{page}" if page else f"_b{box}" if box != 16 else "") + ("x" if across else "")
                name = name.replace("kvmapx", "kvmap_x")
                if d != 128:
                    assert d in (64, 256) and box == 16 and not across, \
                        f"{way}: d= 64, 128 or 256; other than 128 with boxes of 16, not across"
                    name = name.replace("kvmap", f"kvmap_d{d}")
                assert name in self.kern and (box == 16 or not page), \
                    f"{way}: box= 8, 16 or 64 contiguous, page= 16, 64 or 256 with boxes of 16; across=1 with " \
                    "boxes of 16, contiguous or in pages of 16 or 64"
                assert order in ("random", "sorted"), f"{way}: order=random or sorted"
                assert not with_times or times_at + 4 * blocks <= self.times.numel(), f"{way}: too many to time"
                maps, rows, table = self.kv_maps(i, blocks, heads, box, page, order, d)
                assert not across or rows // 64 % heads == 0, f"{way}: {rows // 64} tiles a sequence, not H shares"
                self.kern[name]((blocks,), (160,), (np.uint64(maps.data_ptr()), np.int32(heads), np.int32(rows),
                                                    np.uint64(table.data_ptr() if page else 0), np.int32(ahead),
                                                    np.int32(HINTS.index(hint)), np.int32(warm), buf.data_ptr(),
                                                    np.uint64(self.nbytes // 2), out, stamp), shared_mem=100 * 1024)
            elif kind.startswith("tma"):
                dynamic = arg[0] == "dynamic"
                assert not (dynamic and "kv" in kind), f"{way}: the KV ways are static"
                blocks = 2 * SMS if dynamic else int(arg[1])
                delay = next((int(a[6:]) for a in arg[2:] if a.startswith("delay=")), 0)
                # (page=, hint=, order= are the tensor-map ways': here they were taken and did nothing)
                assert all(a.startswith("delay=") for a in arg[2:]), f"{way}: this way takes delay= only"
                assert not (dynamic and delay), f"{way}: delay= is a static way's"
                assert not with_times or times_at + 4 * blocks <= self.times.numel(), f"{way}: too many blocks to time"
                chunk = int(arg[1]) * 1024 if dynamic else delay
                self.kern[kind]((blocks,), (160,), (buf.data_ptr(), np.uint64(self.nbytes), np.uint64(chunk),
                                                    np.int32(dynamic), out, counters, stamp), shared_mem=100 * 1024)
            elif kind.startswith("static"):
                assert len(arg) == 1, f"{way}: a load way takes its block count only"
                assert not with_times or times_at + 4 * int(arg[0]) <= self.times.numel(), f"{way}: too many to time"
                self.kern[kind]((int(arg[0]),), (256,), (buf.data_ptr(), np.uint64(n), out, stamp))
            else:
                chunk = int(arg[0]) * 1024 // 16
                self.kern[kind]((2 * SMS,), (256,), (buf.data_ptr(), np.uint64(n), np.uint64(chunk), out, counters))

    def kv_maps(self, i, blocks, heads, box=16, page=0, order="random", d=128):
        """Buffer i's halves as a K and a V cache of [blocks / heads, rows, heads, d] 16-bit elements (page:
        of [pages, page, heads, d], a sequence's pages through a block table, in `order`: a random
        permutation of the pages or the identity): their 4-D tensor maps as fakv's runtime encodes them (boxes
        of `box` rows x 64 channels, 128-byte swizzle, 128-byte L2 promotion), 256 bytes on the GPU, the rows
        a sequence (a multiple of 64) and the block table (int32 [blocks / heads, rows / page] or None)."""
        import ctypes
        import numpy as np
        import torch
        key = (i, blocks, heads, box, page, order, d)
        if key not in self.maps:
            half, tile = self.nbytes // 2, 8192 // d          # (a tile's rows: a 32 KiB slot of K and V)
            rows = half // (blocks * 2 * d)
            assert blocks % heads == 0 and rows % tile == 0 and rows * blocks * 2 * d == half \
                and rows % (page or 1) == 0, \
                f"tma2kvmap: {half} bytes a cache are not {blocks // heads} sequences x {tile}k rows x {heads} heads " \
                f"x {d}"
            seqs = blocks // heads
            dims = (d, heads, page, seqs * rows // page) if page else (d, heads, rows, seqs)
            table = None
            if page:
                pages = np.arange(seqs * rows // page, dtype=np.int32)
                if order == "random":
                    pages = np.random.default_rng(i).permutation(pages).astype(np.int32)
                table = torch.from_numpy(pages.reshape(seqs, rows // page)).cuda()
            cuda = ctypes.CDLL("libcuda.so.1")
            out = b""
            for base in (self.bufs[i].data_ptr(), self.bufs[i].data_ptr() + half):
                raw = ctypes.create_string_buffer(192)
                at = (ctypes.addressof(raw) + 63) // 64 * 64
                u64s, u32s = ctypes.c_uint64 * 4, ctypes.c_uint32 * 4
                r = cuda.cuTensorMapEncodeTiled(
                    ctypes.c_void_p(at), 1, 4, ctypes.c_void_p(base),               # UINT16, rank 4
                    u64s(*dims), (ctypes.c_uint64 * 3)(2 * d, heads * 2 * d, dims[2] * heads * 2 * d),
                    u32s(64, 1, box, 1), u32s(1, 1, 1, 1), 0, 3, 2, 0)   # no interleave, 128B swizzle, L2 128B, no fill
                assert r == 0, f"cuTensorMapEncodeTiled: CUresult {r}"
                out += ctypes.string_at(at, 128)
            self.maps[key] = (torch.frombuffer(bytearray(out), dtype=torch.uint8).cuda(), rows, table)
        return self.maps[key]

    def cell_calls(self, way, cell):
        """A bare read of bench_grid.py's `cell`'s bytes, checked first: (the way with its block count, the
        cell's sequences x kv heads (an unsplit call's programs) unless its third word gives one; [the read
        of buffer 0, of buffer 1])."""
        w = way.split()
        way = way if len(w) > 2 and w[2].isdigit() else " ".join(w[:2] + [str(cell.b * cell.hk)] + w[2:])
        self.check(way)
        return way, [lambda i=i: self.launch(way, i) for i in (0, 1)]

    def check(self, way):
        """Every byte of both buffers read once: the XOR against torch's (xor_all)."""
        if not hasattr(self, "wants"):
            self.wants = [xor_all(b) for b in self.bufs]
        for i, want in enumerate(self.wants):
            self.out.zero_()
            self.launch(way, i)
            got = int(self.out.item()) & 0xFFFFFFFF
            assert got == want, f"{way}: XOR {got:#x}, want {want:#x}"

    def end_spread(self, way):
        """The blocks' end times after the first block's start, µs (one launch, a static way)."""
        import numpy as np
        import torch
        blocks = int(next(a for a in way.split()[1:] if a.isdigit()))
        self.times.zero_()
        self.launch(way, 0, with_times=True)
        torch.cuda.synchronize()
        t = self.times[:4 * blocks].view(blocks, 4).cpu().numpy().astype(np.int64)
        start, ends = t[:, 0].min(), np.sort(t[:, 3] - t[:, 0].min()) / 1e3
        return (f"{ends[0]:.1f}..{ends[-1]:.1f} (p10 {ends[len(ends) // 10]:.1f}, median "
                f"{ends[len(ends) // 2]:.1f}; starts within {(t[:, 0].max() - start) / 1e3:.2f})")


def xor_all(words):
    """The XOR of every word of a 1-D int32 tensor (or numpy array) as an unsigned 32-bit int, on its device
    (halving it: a GiB in milliseconds, where numpy on the host took seconds)."""
    acc = 0
    while len(words) > 1:
        if len(words) % 2:
            acc ^= int(words[-1])
            words = words[:-1]
        half = len(words) // 2
        words = words[:half] ^ words[half:]
    return (acc ^ (int(words[0]) if len(words) else 0)) & 0xFFFFFFFF


def per_buffer(args):
    """The same read of each of args.buffers buffers, allocated one after the other: a graph of one
    call a buffer (the bytes never sit in L2), median of 10 replays, args.rounds rounds interleaved."""
    from bench_grid import copy_bandwidth
    from timing import graph_time_ms
    way = args.ways.split(",")[0]
    reader = Reader(int(args.gib * 2 ** 30), buffers=args.buffers)
    copy = copy_bandwidth()
    rounds = [[] for _ in reader.bufs]
    for _ in range(args.rounds):
        for i in range(len(reader.bufs)):
            ms, _ = graph_time_ms([lambda i=i: reader.launch(way, i)], replays=10, fallback=False)
            rounds[i].append(ms * 1e3)
    print(f"{way}, {args.buffers} buffers of {reader.nbytes / 2 ** 30:.2f} GiB; copy {copy:.3f} TB/s; "
          f"µs by buffer (rounds), % of copy of the median:")
    for i, us in enumerate(rounds):
        med = statistics.median(us)
        print(f"  buffer {i} at {reader.bufs[i].data_ptr():#x}: {', '.join(f'{u:.1f}' for u in us)}; "
              f"{reader.nbytes / (med * 1e-6) / 1e12 / copy:.1%}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ways", default="static8 256,static8 528,tma2 static 256,tma4 static 256,tma4 static 264,"
                    "tma6 static 256,tma8 static 256,tma4 dynamic 256,tma4 dynamic 1024,tma4 dynamic 4096")
    ap.add_argument("--buffers", type=int, default=0, metavar="N",
                    help="instead: N buffers of --gib GiB, each read alone (the first of --ways), rounds interleaved")
    args = ap.parse_args()
    if args.buffers:
        return per_buffer(args)
    import warnings
    from bench_grid import copy_bandwidth
    from timing import graph_time_ms
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    reader = Reader(int(args.gib * 2 ** 30))
    ways = args.ways.split(",")
    for way in ways:                                  # checked first: every byte read, once
        reader.check(way)
    copy = copy_bandwidth()
    rounds = {w: [] for w in ways}
    for _ in range(args.rounds):
        for way in ways:
            ms, _ = graph_time_ms([lambda i=i, w=way: reader.launch(w, i) for i in (0, 1)], replays=10, fallback=False)
            rounds[way].append(ms * 1e3)
    copy_end = copy_bandwidth()
    print(f"read of {reader.nbytes / 2 ** 30:.2f} GiB; copy {copy:.3f} TB/s, {copy_end:.3f} at the end")
    print("| way | µs (median of rounds) | range | TB/s | % of copy | end spread µs (first..last block end) |")
    print("|---|---|---|---|---|---|")
    for way in ways:
        us = statistics.median(rounds[way])
        tbps = reader.nbytes / (us * 1e-6) / 1e12
        spread = reader.end_spread(way) if "dynamic" not in way else ""
        print(f"| {way} | {us:.1f} | {min(rounds[way]):.1f}-{max(rounds[way]):.1f} | {tbps:.3f} | "
              f"{tbps / copy:.1%} | {spread} |")


if __name__ == "__main__":
    main()
