// k-mismatch (Hamming) search on the GPU.
//
// Liu, Huang, Schmidt & Maskell (2012), "CUDA-accelerated k-mismatch string
// matching", three ways to split the work, each one kernel here:
//   hamming_thread  one thread per text position (Algorithms 1-2)
//   hamming_block   one thread block per text position, the pattern positions
//                   shared by the block's threads and the mismatch counts
//                   summed by a shared-memory reduction (Algorithms 3-4)
//   hamming_tiled   OPT-block-thread: a block stages the pattern and its tile
//                   of text (plus m - 1 characters) in shared memory, then
//                   each thread tests one position (Algorithms 5-6)
// and seqsift's own kernel for many patterns per launch:
//   hamming_sliced_* (hamming-packed) one-hot text planes, 32 window starts
//                   per thread, the mismatches of all 32 counted at once by
//                   bit-sliced arithmetic (see below).
//
// Text codes (unpacked kernels): A0 C1 G2 T3, 4 = any other byte (never
// matches). A pattern position is a 4-bit IUPAC mask: it matches code c when
// (mask >> c) & 1. Rows are (pattern x strand); the launcher passes each row's
// masks padded to max_m, its length, and the owned range: an end e is
// reported when e - 1 lies in [owned_lo, owned_hi).
#include "hits.cuh"

#define THREADS 256

__device__ __forceinline__ int mismatch(unsigned char mask, unsigned char code) {
    return ((mask >> code) & 1) ^ 1;  // code 4 shifts out every mask bit: always a mismatch
}

// ---- Algorithms 1-2: one thread per (text position, row) ------------------
// grid (ceil(positions / THREADS), rows); the thread's window starts at s.
extern "C" __global__ void hamming_thread(const unsigned char *text, long long n, const unsigned char *masks,
                                          const int *lengths, int max_m, int k, long long owned_lo,
                                          long long owned_hi, unsigned long long *count,
                                          unsigned long long capacity, int *out_row, long long *out_end,
                                          short *out_dist) {
    const int row = blockIdx.y;
    const int m = lengths[row];
    // Ends e with e - 1 in [owned_lo, owned_hi): starts s = e - m.
    const long long s = owned_lo + 1 - m + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (s < 0 || s + m > n || s + m - 1 >= owned_hi) return;
    const unsigned char *pattern = masks + (size_t)row * max_m;
    int d = 0;
    for (int i = 0; i < m && d <= k; ++i) d += mismatch(pattern[i], text[s + i]);
    if (d <= k) emit(count, capacity, out_row, out_end, out_dist, row, s + m, d);
}

// ---- Algorithms 3-4: one block per (text position, row) -------------------
// grid (positions, rows), blockDim a power of two; thread t compares pattern
// positions t, t + blockDim, ... and the block sums the counts in shared memory.
extern "C" __global__ void hamming_block(const unsigned char *text, long long n, const unsigned char *masks,
                                         const int *lengths, int max_m, int k, long long owned_lo,
                                         long long owned_hi, unsigned long long *count,
                                         unsigned long long capacity, int *out_row, long long *out_end,
                                         short *out_dist) {
    __shared__ int partial[THREADS];
    const int row = blockIdx.y;
    const int m = lengths[row];
    const long long s = owned_lo + 1 - m + (long long)blockIdx.x;
    if (s < 0 || s + m > n || s + m - 1 >= owned_hi) return;  // whole block leaves together
    const unsigned char *pattern = masks + (size_t)row * max_m;
    int d = 0;
    for (int i = threadIdx.x; i < m; i += blockDim.x) d += mismatch(pattern[i], text[s + i]);
    partial[threadIdx.x] = d;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {  // Algorithm 4: tree reduction
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0 && partial[0] <= k) {
        emit(count, capacity, out_row, out_end, out_dist, row, s + m, partial[0]);
    }
}

// ---- Algorithms 5-6: OPT-block-thread, pattern and text tile in shared memory
// grid (ceil(positions / THREADS), rows); shared: max_m masks + THREADS + max_m - 1 text bytes.
extern "C" __global__ void hamming_tiled(const unsigned char *text, long long n, const unsigned char *masks,
                                         const int *lengths, int max_m, int k, long long owned_lo,
                                         long long owned_hi, unsigned long long *count,
                                         unsigned long long capacity, int *out_row, long long *out_end,
                                         short *out_dist) {
    extern __shared__ unsigned char staged[];
    unsigned char *pattern = staged;        // max_m bytes
    unsigned char *tile = staged + max_m;   // THREADS + max_m - 1 bytes
    const int row = blockIdx.y;
    const int m = lengths[row];
    const long long tile_start = owned_lo + 1 - m + (long long)blockIdx.x * blockDim.x;
    for (int i = threadIdx.x; i < m; i += blockDim.x) pattern[i] = masks[(size_t)row * max_m + i];
    for (int i = threadIdx.x; i < (int)blockDim.x + m - 1; i += blockDim.x) {
        const long long j = tile_start + i;
        tile[i] = (j >= 0 && j < n) ? text[j] : 4;
    }
    __syncthreads();
    const long long s = tile_start + threadIdx.x;
    if (s < 0 || s + m > n || s + m - 1 >= owned_hi) return;
    int d = 0;
    for (int i = 0; i < m && d <= k; ++i) d += mismatch(pattern[i], tile[threadIdx.x + i]);
    if (d <= k) emit(count, capacity, out_row, out_end, out_dist, row, s + m, d);
}

// ---- hamming-packed: bit-sliced counting over 32 window starts ------------
// Text as four one-hot planes (bit j of word q of plane b: text[32q + j] is
// base b; N and other bytes set no bit, so they match nothing). A thread takes
// one row and 32 window starts s = 32q .. 32q + 31 at once: for pattern
// position i the 32 "mismatch" bits are the complement of the plane of P[i]
// shifted by i. The block's 128 rows share the word q, so the block builds,
// for each i < max_m, the shifted match word of all 16 IUPAC masks in shared
// memory once (table[i][mask]), and each thread reads its mask's word.
// Each window has a budget of k mismatches, kept as BITS bit planes and
// decremented by the mismatch bits (a borrow chain); a borrow out of the top
// plane marks the window dead. The thread stops early when all 32 are dead.
#define PACKED_ROWS 128
#define PACKED_MAX_M 64

// One thread per plane word: its 32 text bytes come in two 16-byte loads
// (the launcher passes a 16-byte aligned text whose length it pads to 32).
extern "C" __global__ void pack_planes(const unsigned char *text, long long n, unsigned int *planes,
                                       long long plane_words) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= plane_words) return;
    unsigned int p[4] = {0, 0, 0, 0};
    if ((q + 1) * 32 <= n) {
        const uint4 *chunk = reinterpret_cast<const uint4 *>(text + q * 32);
        const uint4 halves[2] = {chunk[0], chunk[1]};
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const unsigned int lanes[4] = {halves[h].x, halves[h].y, halves[h].z, halves[h].w};
#pragma unroll
            for (int word = 0; word < 4; ++word) {
#pragma unroll
                for (int byte = 0; byte < 4; ++byte) {
                    const unsigned int c = (lanes[word] >> (8 * byte)) & 0xff;
                    const int j = h * 16 + word * 4 + byte;
#pragma unroll
                    for (int b = 0; b < 4; ++b) p[b] |= (unsigned int)(c == (unsigned int)b) << j;
                }
            }
        }
    } else {
        for (int j = 0; j < 32; ++j) {
            const long long i = q * 32 + j;
            const unsigned char c = i < n ? text[i] : 4;
            if (c < 4) p[c] |= 1u << j;
        }
    }
#pragma unroll
    for (int b = 0; b < 4; ++b) planes[b * plane_words + q] = p[b];
}

template <int BITS>
__device__ __forceinline__ void sliced_rows(const unsigned int *planes, long long plane_words, long long n,
                                            const unsigned char *masks, int stride, const int *lengths,
                                            int rows, int max_m, int k, long long owned_lo, long long owned_hi,
                                            long long first_word, int words_per_block, long long last_word,
                                            unsigned long long *count, unsigned long long capacity,
                                            int *out_row, long long *out_end, short *out_dist) {
    __shared__ unsigned int shifted[PACKED_MAX_M][4];
    __shared__ unsigned int table[PACKED_MAX_M][16];
    __shared__ unsigned char pattern[PACKED_MAX_M][PACKED_ROWS];
    const long long groups = (rows + PACKED_ROWS - 1) / PACKED_ROWS;
    const int group = (int)(blockIdx.x % groups);
    const long long q0 = first_word + (long long)(blockIdx.x / groups) * words_per_block;
    const int row = group * PACKED_ROWS + threadIdx.x;
    const bool active = row < rows;
    const int m = active ? lengths[row] : 0;
    for (int i = 0; i < max_m; ++i) pattern[i][threadIdx.x] = (active && i < m) ? masks[(size_t)row * stride + i] : 0;
    // Window starts this row may report: its last character in the owned range, inside the text.
    const long long row_first = max(0LL, owned_lo + 1 - m);
    const long long row_last = min(owned_hi - m, n - m);

    for (long long q = q0; q < q0 + words_per_block && q <= last_word; ++q) {
        __syncthreads();  // the previous word's table is no longer read
        for (int e = threadIdx.x; e < max_m * 4; e += blockDim.x) {
            const int i = e >> 2, b = e & 3;
            const unsigned int *plane = planes + b * plane_words + q + (i >> 5);
            shifted[i][b] = __funnelshift_r(plane[0], plane[1], i & 31);
        }
        __syncthreads();
        for (int e = threadIdx.x; e < max_m * 16; e += blockDim.x) {
            const int i = e >> 4, mask = e & 15;
            table[i][mask] = ((mask & 1) ? shifted[i][0] : 0u) | ((mask & 2) ? shifted[i][1] : 0u) |
                             ((mask & 4) ? shifted[i][2] : 0u) | ((mask & 8) ? shifted[i][3] : 0u);
        }
        __syncthreads();
        if (!active || m == 0) continue;
        const long long base = q * 32;
        if (base > row_last || base + 31 < row_first) continue;
        const long long below = row_first - base, above = row_last - base;
        unsigned int valid = below <= 0 ? ~0u : (~0u << below);
        if (above < 31) valid &= (2u << above) - 1u;
        unsigned int budget[BITS];
#pragma unroll
        for (int b = 0; b < BITS; ++b) budget[b] = ((k >> b) & 1) ? ~0u : 0u;
        unsigned int dead = ~valid;
        for (int i = 0; i < m; ++i) {
            unsigned int borrow = ~table[i][pattern[i][threadIdx.x]];  // 1 = mismatch at offset i
#pragma unroll
            for (int b = 0; b < BITS; ++b) {  // budget -= mismatch, bit-sliced
                const unsigned int next = borrow & ~budget[b];
                budget[b] ^= borrow;
                borrow = next;
            }
            dead |= borrow;
            if ((i & 3) == 3 && dead == ~0u) break;
        }
        unsigned int alive = ~dead;
        while (alive) {
            const int j = __ffs(alive) - 1;
            alive &= alive - 1;
            int left = 0;
#pragma unroll
            for (int b = 0; b < BITS; ++b) left |= ((budget[b] >> j) & 1) << b;
            emit(count, capacity, out_row, out_end, out_dist, row, base + j + m, k - left);
        }
    }
}

// The same counting for a few rows: each warp takes ONE row (so a lane's
// pattern mask is the warp's: no divergence, no table) and 32 consecutive
// words of window starts, one per lane, loading the plane words it needs.
template <int BITS>
__device__ __forceinline__ void sliced_few_rows(const unsigned int *planes, long long plane_words, long long n,
                                                const unsigned char *masks, int stride, const int *lengths,
                                                int rows, int k, long long owned_lo, long long owned_hi,
                                                long long first_word, long long last_word,
                                                unsigned long long *count, unsigned long long capacity,
                                                int *out_row, long long *out_end, short *out_dist) {
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int row = (int)(warp % rows);
    const long long q = first_word + (warp / rows) * 32 + (threadIdx.x & 31);
    if (q > last_word) return;
    const int m = lengths[row];
    const long long row_first = max(0LL, owned_lo + 1 - m);
    const long long row_last = min(owned_hi - m, n - m);
    const long long base = q * 32;
    if (m == 0 || base > row_last || base + 31 < row_first) return;
    const long long below = row_first - base, above = row_last - base;
    unsigned int valid = below <= 0 ? ~0u : (~0u << below);
    if (above < 31) valid &= (2u << above) - 1u;
    unsigned int budget[BITS];
#pragma unroll
    for (int b = 0; b < BITS; ++b) budget[b] = ((k >> b) & 1) ? ~0u : 0u;
    unsigned int dead = ~valid;
    const unsigned char *pattern = masks + (size_t)row * stride;
    for (int i = 0; i < m; ++i) {
        const unsigned int mask = pattern[i];
        const long long word = q + (i >> 5);
        unsigned int match = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            if (mask & (1u << b)) {  // the same for the whole warp
                const unsigned int *plane = planes + b * plane_words + word;
                match |= __funnelshift_r(__ldg(plane), __ldg(plane + 1), i & 31);
            }
        }
        unsigned int borrow = ~match;
#pragma unroll
        for (int b = 0; b < BITS; ++b) {
            const unsigned int next = borrow & ~budget[b];
            budget[b] ^= borrow;
            borrow = next;
        }
        dead |= borrow;
        if ((i & 3) == 3 && dead == ~0u) break;
    }
    unsigned int alive = ~dead;
    while (alive) {
        const int j = __ffs(alive) - 1;
        alive &= alive - 1;
        int left = 0;
#pragma unroll
        for (int b = 0; b < BITS; ++b) left |= ((budget[b] >> j) & 1) << b;
        emit(count, capacity, out_row, out_end, out_dist, row, base + j + m, k - left);
    }
}

#define SLICED_FEW_KERNEL(BITS)                                                                                \
    extern "C" __global__ void hamming_sliced_few_##BITS(                                                      \
        const unsigned int *planes, long long plane_words, long long n, const unsigned char *masks, int stride, \
        const int *lengths, int rows, int k, long long owned_lo, long long owned_hi, long long first_word,      \
        long long last_word, unsigned long long *count, unsigned long long capacity, int *out_row,             \
        long long *out_end, short *out_dist) {                                                                  \
        sliced_few_rows<BITS>(planes, plane_words, n, masks, stride, lengths, rows, k, owned_lo, owned_hi,     \
                              first_word, last_word, count, capacity, out_row, out_end, out_dist);             \
    }
SLICED_FEW_KERNEL(1)
SLICED_FEW_KERNEL(2)
SLICED_FEW_KERNEL(3)
SLICED_FEW_KERNEL(4)
SLICED_FEW_KERNEL(5)
SLICED_FEW_KERNEL(6)

#define SLICED_KERNEL(BITS)                                                                                    \
    extern "C" __global__ void hamming_sliced_##BITS(                                                          \
        const unsigned int *planes, long long plane_words, long long n, const unsigned char *masks, int stride, \
        const int *lengths, int rows, int max_m, int k, long long owned_lo, long long owned_hi,                 \
        long long first_word, int words_per_block, long long last_word, unsigned long long *count,             \
        unsigned long long capacity, int *out_row, long long *out_end, short *out_dist) {                      \
        sliced_rows<BITS>(planes, plane_words, n, masks, stride, lengths, rows, max_m, k, owned_lo, owned_hi,  \
                          first_word, words_per_block, last_word, count, capacity, out_row, out_end, out_dist); \
    }
SLICED_KERNEL(1)
SLICED_KERNEL(2)
SLICED_KERNEL(3)
SLICED_KERNEL(4)
SLICED_KERNEL(5)
SLICED_KERNEL(6)
