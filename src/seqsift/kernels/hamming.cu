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
//   hamming_packed  text 2-bit packed (16 characters per 32-bit word), one
//                   thread per pattern row over a text segment, the mismatches
//                   of a 16-character window counted by XOR, mask and popcount.
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

// ---- hamming-packed -------------------------------------------------------
// Packing: 16 characters per 32-bit word, character j of word q at bits
// 2j, 2j + 1 (codes & 3), and a second plane with the low bit of that pair
// set where the character is not A/C/G/T.
extern "C" __global__ void pack_text(const unsigned char *text, long long n, unsigned int *packed,
                                     unsigned int *never, long long words) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= words) return;
    unsigned int bits = 0, n_bits = 0;
    for (int j = 0; j < 16; ++j) {
        const long long i = q * 16 + j;
        const unsigned char c = i < n ? text[i] : 4;
        bits |= (unsigned int)(c & 3) << (2 * j);
        n_bits |= (unsigned int)(c > 3) << (2 * j);
    }
    packed[q] = bits;
    never[q] = n_bits;
}

// Mismatching characters among 16 (one bit per character, low bit of each
// pair): text bits t, N plane nb, pattern bits p, care c (which of the two
// bits must equal p: 11 a base, 01 or 10 R/Y/K/M, 00 N) and the length mask
// of the pattern's characters in this word.
__device__ __forceinline__ int mismatches16(unsigned int t, unsigned int nb, unsigned int p, unsigned int c,
                                            unsigned int valid) {
    const unsigned int differ = (t ^ p) & c;
    const unsigned int pairs = differ | (differ >> 1) | (nb & valid);
    return __popc(pairs & 0x55555555u);
}

// One thread per (row, text segment), flattened with the row fastest, so the
// lanes of a warp read the same text words (or, with few rows, neighbouring
// segments); each thread tests the windows whose last character lies in its
// segment [seg_lo, seg_hi). Pattern words [row][h], h < ceil(m / 16): bits,
// care, valid.
extern "C" __global__ void hamming_packed(const unsigned int *packed, const unsigned int *never, long long n,
                                          const unsigned int *pattern_bits, const unsigned int *pattern_care,
                                          const unsigned int *pattern_valid, const int *lengths, int rows,
                                          int max_words, int k, long long owned_lo, long long owned_hi,
                                          long long segment_length, long long segments,
                                          unsigned long long *count, unsigned long long capacity,
                                          int *out_row, long long *out_end, short *out_dist) {
    const long long thread = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int row = (int)(thread % rows);
    const long long segment = thread / rows;
    if (segment >= segments) return;
    const int m = lengths[row];
    if (m == 0) return;  // rows the launcher runs elsewhere
    const int words = (m + 15) / 16;
    const unsigned int *bits = pattern_bits + (size_t)row * max_words;
    const unsigned int *care = pattern_care + (size_t)row * max_words;
    const unsigned int *valid = pattern_valid + (size_t)row * max_words;
    const unsigned int p0 = bits[0], c0 = care[0], v0 = valid[0];

    const long long seg_lo = owned_lo + segment * segment_length;
    const long long seg_hi = min(seg_lo + segment_length, owned_hi);
    // Window starts s with s + m - 1 in [seg_lo, seg_hi), 0 <= s, s + m <= n.
    const long long s_first = max(0LL, seg_lo + 1 - m);
    const long long s_last = min(seg_hi - m, n - m);
    if (s_last < s_first) return;
    const unsigned int span = (unsigned int)(s_last - s_first);  // at most a segment + m: 32 bits
    for (long long q = s_first / 16; q <= s_last / 16; ++q) {
        // Words q and q + 1 hold every 16-character window starting in word q.
        const unsigned int t0 = __ldg(packed + q), t1 = __ldg(packed + q + 1);
        const unsigned int n0 = __ldg(never + q), n1 = __ldg(never + q + 1);
        const int offset = (int)(q * 16 - s_first);  // window q * 16 + r is number offset + r
#pragma unroll
        for (int r = 0; r < 16; ++r) {
            if ((unsigned int)(offset + r) > span) continue;  // outside [s_first, s_last]
            const long long s = q * 16 + r;
            // First 16 pattern characters; most windows are rejected here.
            int d = mismatches16(__funnelshift_r(t0, t1, 2 * r), __funnelshift_r(n0, n1, 2 * r), p0, c0, v0);
            for (int h = 1; h < words && d <= k; ++h) {
                const unsigned int ta = __ldg(packed + q + h), tb = __ldg(packed + q + h + 1);
                const unsigned int na = __ldg(never + q + h), nb = __ldg(never + q + h + 1);
                d += mismatches16(__funnelshift_r(ta, tb, 2 * r), __funnelshift_r(na, nb, 2 * r),
                                  bits[h], care[h], valid[h]);
            }
            if (d <= k) emit(count, capacity, out_row, out_end, out_dist, row, s + m, d);
        }
    }
}

// ---- hamming-packed, many rows: bit-sliced counting over 32 window starts ---
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

extern "C" __global__ void pack_planes(const unsigned char *text, long long n, unsigned int *planes,
                                       long long plane_words) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= plane_words) return;
    unsigned int p[4] = {0, 0, 0, 0};
    for (int j = 0; j < 32; ++j) {
        const long long i = q * 32 + j;
        const unsigned char c = i < n ? text[i] : 4;
        if (c < 4) p[c] |= 1u << j;
    }
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
