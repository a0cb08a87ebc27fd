// hamming-packed, bit-sliced: many k-mismatch patterns per launch over a
// text kept as three bit-planes (2 bits per base + an N plane).
//
// Text layout (pack_planes): bit j of word w describes text[32 w + j]:
//   hi[w], lo[w]  the two bits of the base's code (A 00, C 01, G 10, T 11)
//   nn[w]         1 where the base is not A/C/G/T (N, IUPAC, gap): never matches
//
// One thread owns 32 consecutive window starts (one word of starts) and runs
// every row of the launch over them, 32 windows at a time: for pattern
// position i it shifts the planes by i (funnel shift of two words), turns
// them into a word of "mismatch at position i" bits with 2 (plain bases) or
// 4 (IUPAC) LOP3s against the row's masks for position i, and adds that word
// into a bit-sliced counter of mismatches per window:
//   Levels<L>: thermometer code, d[j] = "at least j + 1 mismatches", L = k + 1
//              words, L LOP3s per position (used for k <= 1)
//   Carry<T>:  a binary count biased so that bit T flips on at k + 1
//              mismatches, fed 8 positions at a time through a carry-save
//              adder tree: 2 LOP3s per position whatever k is
// The text words are shared by R rows processed together, and a warp stops a
// group of rows early once every window of the 32 lanes has more than k
// mismatches (most windows of random text do after ~15 of 20 positions).
//
// The launcher groups the rows by length (and by "has IUPAC codes"), so a
// launch has one m; the row table holds per (row, position) a uint4:
//   plain bases: x = ~0 if the code's high bit is 1, y = ~0 if its low bit is
//   IUPAC      : x, y, z, w = ~0 if A, C, G, T respectively does NOT match
#include "hits.cuh"

#define BITSLICED_THREADS 128

// ---- bit-sliced mismatch counters -----------------------------------------
// Each holds, for the 32 windows of a thread (one bit each), how many
// mismatches a row has had so far. add_group<G> takes G mismatch words.
template <int L>
struct Levels {  // thermometer: d[j] = "at least j + 1 mismatches", L = k + 1 words, L ops a position
    static constexpr int group = 4;  // positions between early-exit tests
    unsigned d[L];
    __device__ __forceinline__ void reset(int) {
#pragma unroll
        for (int j = 0; j < L; ++j) d[j] = 0u;
    }
    __device__ __forceinline__ void add(unsigned x) {  // x: 1 = a mismatch in that window
#pragma unroll
        for (int j = L - 1; j > 0; --j) d[j] |= d[j - 1] & x;
        d[0] |= x;
    }
    template <int G>
    __device__ __forceinline__ void add_group(const unsigned (&x)[G]) {
#pragma unroll
        for (int u = 0; u < G; ++u) add(x[u]);
    }
    __device__ __forceinline__ unsigned within() const { return ~d[L - 1]; }  // <= L - 1 = k mismatches
    __device__ __forceinline__ int count(int bit) const {
        int c = 0;
#pragma unroll
        for (int j = 0; j < L - 1; ++j) c += (d[j] >> bit) & 1;
        return c;
    }
};

// Carry-save adder: a + b + c = sum + 2 carry, bitwise (one LOP3 each).
__device__ __forceinline__ void csa(unsigned &sum, unsigned &carry, unsigned a, unsigned b, unsigned c) {
    sum = a ^ b ^ c;
    carry = (a & b) | (a & c) | (b & c);
}

template <int T>
struct Carry {  // biased binary count, bits c[0..T]: c[T] set = "more than k mismatches"
    // The count starts at bias = 2^T - (k + 1), so it reaches 2^T exactly at k + 1
    // mismatches; 2^T > m - k - 1 keeps it below 2^(T + 1). Mismatch words go in
    // eight at a time through a carry-save tree: 16 LOP3s per 8 positions
    // (2 a position, whatever k is), against k + 1 for Levels. Needs T >= 3.
    static constexpr int group = 8;
    unsigned c[T + 1];
    int bias;
    __device__ __forceinline__ void reset(int k) {
        bias = (1 << T) - (k + 1);
#pragma unroll
        for (int j = 0; j < T; ++j) c[j] = ((bias >> j) & 1) ? ~0u : 0u;
        c[T] = 0u;
    }
    template <int J>
    __device__ __forceinline__ void add_at(unsigned x) {  // add x * 2^J, ripple carry, sticky top bit
#pragma unroll
        for (int j = J; j < T; ++j) {
            const unsigned t = c[j] & x;
            c[j] ^= x;
            x = t;
        }
        c[T] |= x;
    }
    __device__ __forceinline__ void add(unsigned x) { add_at<0>(x); }
    template <int G>
    __device__ __forceinline__ void add_group(const unsigned (&x)[G]) {
        if constexpr (G == 8) {
            unsigned a0, a1, a2, a3, b0, b1, d0;
            csa(c[0], a0, c[0], x[0], x[1]);  // weight 1 -> carries of weight 2
            csa(c[0], a1, c[0], x[2], x[3]);
            csa(c[0], a2, c[0], x[4], x[5]);
            csa(c[0], a3, c[0], x[6], x[7]);
            csa(c[1], b0, c[1], a0, a1);      // weight 2 -> 4
            csa(c[1], b1, c[1], a2, a3);
            csa(c[2], d0, c[2], b0, b1);      // weight 4 -> 8
            add_at<3>(d0);
        } else if constexpr (G == 4) {
            unsigned a0, a1, b0;
            csa(c[0], a0, c[0], x[0], x[1]);
            csa(c[0], a1, c[0], x[2], x[3]);
            csa(c[1], b0, c[1], a0, a1);
            add_at<2>(b0);
        } else {
#pragma unroll
            for (int u = 0; u < G; ++u) add(x[u]);
        }
    }
    __device__ __forceinline__ unsigned within() const { return ~c[T]; }
    __device__ __forceinline__ int count(int bit) const {
        int v = 0;
#pragma unroll
        for (int j = 0; j <= T; ++j) v |= ((c[j] >> bit) & 1) << j;
        return v - bias;
    }
};

__device__ __forceinline__ unsigned plane_word(const unsigned *__restrict__ plane, long long w, long long nwords) {
    return (w >= 0 && w < nwords) ? __ldg(plane + w) : 0u;
}

// ---- the kernel --------------------------------------------------------------
// grid (ceil(start words / 128), row slices); starts s in [s_lo, s_hi] (the
// launcher has applied the owned range and s + m <= n); rows_padded is a
// multiple of R (padding rows are never reported).
template <class Counter, int R, bool IUPAC>
__global__ void __launch_bounds__(BITSLICED_THREADS)
hamming_bitsliced(const unsigned *__restrict__ hi, const unsigned *__restrict__ lo, const unsigned *__restrict__ nn,
                  long long nwords, const uint4 *__restrict__ table, const int *__restrict__ row_ids, int rows,
                  int rows_padded, int m, int k, long long s_lo, long long s_hi, unsigned long long *count,
                  unsigned long long capacity, int *out_row, long long *out_end, short *out_dist) {
    const long long w = (s_lo >> 5) + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned valid = 0u;  // which of this word's 32 starts are wanted
    {
        const long long a = max(s_lo - 32 * w, 0LL), b = min(s_hi - 32 * w, 31LL);
        if (a <= b) valid = (0xffffffffu >> (31 - (int)(b - a))) << (int)a;
    }
    // Rows of this block: an even share of the R-row groups.
    const int groups = rows_padded / R;
    const int per_slice = (groups + gridDim.y - 1) / gridDim.y;
    const int r_begin = blockIdx.y * per_slice * R;
    const int r_end = min(rows_padded, r_begin + per_slice * R);
    const int words_of_pattern = (m + 31) >> 5;

    for (int rc = r_begin; rc < r_end; rc += R) {
        Counter cnt[R];
#pragma unroll
        for (int rr = 0; rr < R; ++rr) cnt[rr].reset(k);
        const uint4 *row_table = table + (long long)rc * m;

        for (int q = 0; q < words_of_pattern; ++q) {
            // Plane words holding text[32 (w + q) .. 32 (w + q) + 63]: every
            // character at pattern positions 32 q .. 32 q + 31 of the 32 windows.
            const unsigned h0 = plane_word(hi, w + q, nwords), h1 = plane_word(hi, w + q + 1, nwords);
            const unsigned l0 = plane_word(lo, w + q, nwords), l1 = plane_word(lo, w + q + 1, nwords);
            const unsigned n0 = plane_word(nn, w + q, nwords), n1 = plane_word(nn, w + q + 1, nwords);
            const int r_limit = min(32, m - 32 * q);

            const uint4 *entry[R];  // this position group's table entries, one pointer per row
#pragma unroll
            for (int rr = 0; rr < R; ++rr) entry[rr] = row_table + (long long)rr * m + 32 * q;

            // Mismatch words of positions 32 q + r + u, u < G, for all R rows.
            auto mismatches = [&](auto &x, int r) {
                constexpr int G = sizeof(x[0]) / sizeof(unsigned);
#pragma unroll
                for (int u = 0; u < G; ++u) {
                    const unsigned th = __funnelshift_r(h0, h1, r + u);
                    const unsigned tl = __funnelshift_r(l0, l1, r + u);
                    const unsigned tn = __funnelshift_r(n0, n1, r + u);
#pragma unroll
                    for (int rr = 0; rr < R; ++rr) {
                        const uint4 e = __ldg(entry[rr] + u);
                        if (IUPAC) {  // choose the A/C/G/T answer by the text's two bits; N always mismatches
                            const unsigned ac = (tl & e.y) | (~tl & e.x);
                            const unsigned gt = (tl & e.w) | (~tl & e.z);
                            x[rr][u] = tn | (th & gt) | (~th & ac);
                        } else {      // the text's two bits differ from the base's, or the text is N
                            x[rr][u] = (th ^ e.x) | (tl ^ e.y) | tn;
                        }
                    }
                }
#pragma unroll
                for (int rr = 0; rr < R; ++rr) {
                    cnt[rr].add_group(x[rr]);
                    entry[rr] += G;
                }
            };

            int r = 0;
            constexpr int G = Counter::group;
            for (; r + G <= r_limit; r += G) {
                unsigned x[R][G];
                mismatches(x, r);
                // Early exit: no lane of the warp has a window of any row still within k.
                unsigned alive = 0u;
#pragma unroll
                for (int rr = 0; rr < R; ++rr)
                    if (rc + rr < rows) alive |= cnt[rr].within();
                if (!__any_sync(0xffffffffu, (alive & valid) != 0u)) goto report;
            }
            if (G > 4 && r + 4 <= r_limit) {
                unsigned x[R][4];
                mismatches(x, r);
                r += 4;
            }
            for (; r < r_limit; ++r) {
                unsigned x[R][1];
                mismatches(x, r);
            }
        }
    report:
#pragma unroll
        for (int rr = 0; rr < R; ++rr) {
            if (rc + rr >= rows) break;
            unsigned hits = cnt[rr].within() & valid;
            while (hits) {  // rare: most words have none
                const int bit = __ffs(hits) - 1;
                hits &= hits - 1;
                emit(count, capacity, out_row, out_end, out_dist, row_ids[rc + rr], 32 * w + bit + m,
                     cnt[rr].count(bit));
            }
        }
    }
}

// ---- text -> bit-planes --------------------------------------------------------
// One warp per 32 characters (grid-stride): each lane reads one text code,
// three ballots make the words. Characters past n are N.
extern "C" __global__ void pack_planes(const unsigned char *__restrict__ text, long long n, unsigned *hi,
                                       unsigned *lo, unsigned *nn, long long nwords) {
    const int lane = threadIdx.x & 31;
    const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
    for (long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; w < nwords; w += warps) {
        const long long i = 32 * w + lane;
        const unsigned c = i < n ? text[i] : 4u;
        const unsigned bh = __ballot_sync(0xffffffffu, c < 4u && (c & 2u));
        const unsigned bl = __ballot_sync(0xffffffffu, c < 4u && (c & 1u));
        const unsigned bn = __ballot_sync(0xffffffffu, c >= 4u);
        if (lane == 0) hi[w] = bh;
        if (lane == 1) lo[w] = bl;
        if (lane == 2) nn[w] = bn;
    }
}

#ifndef __CUDACC_RTC__
// Plain nvcc (the compile test, SASS reading) sees a few instantiations;
// CuPy instantiates the ones a job needs by name (NVRTC name expressions).
#define BITSLICED_INSTANCE(C, R, I)                                                                          \
    template __global__ void hamming_bitsliced<C, R, I>(                                                     \
        const unsigned *, const unsigned *, const unsigned *, long long, const uint4 *, const int *, int, int, \
        int, int, long long, long long, unsigned long long *, unsigned long long, int *, long long *, short *);
BITSLICED_INSTANCE(Levels<5>, 4, false)
BITSLICED_INSTANCE(Levels<5>, 1, false)
BITSLICED_INSTANCE(Levels<3>, 4, true)
BITSLICED_INSTANCE(Carry<4>, 4, false)
BITSLICED_INSTANCE(Carry<9>, 2, true)
#endif
