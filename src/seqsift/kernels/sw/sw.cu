// Smith-Waterman screening on the GPU: sw-bpbc and sw-wordwise.
//
// sw-bpbc is the bitwise parallel bulk computation of Nishimura, Bordim, Ito
// and Nakano ("Accelerating the Smith-Waterman algorithm using bitwise parallel
// bulk computation technique on GPU"): W = 32 or 64 pairs are aligned at once,
// pair k in bit k of every word, and an s-bit DP value is held bit-sliced in s
// words (word b = bit b of the value in all W pairs). Section V's steps:
//
//   sw_w2b32/64    Step 2, W2B: wordwise character codes -> 3 bit planes per
//                  position (bit 0 and bit 1 of the base code, and an N bit so
//                  that N never matches), by the bit transpose of Section II
//                  (swap / copy, Table I).
//   sw_bpbc32/64_sS  Step 3: the DP of Section IV.B for one word group per
//                  block, s = S bits, with the running maximum.
//   sw_b2w32/64    Step 4, B2W: the bit-sliced maxima back to one int per pair.
//
// Step 3 in detail (Fig. 2). Thread i of a block owns DP row i and sweeps its
// row left to right; at step t it computes column j = t - i, so the threads of
// a warp work on one anti-diagonal. The values it needs come from the thread
// above: H[i-1][j] is what that thread computed at step t-1 and H[i-1][j-1]
// what it computed at step t-2, and both travel by __shfl_up_sync (the paper
// passes them through shared memory; a shuffle needs no barrier inside a warp).
// H[i][j-1] is the thread's own previous value.
//
// A warp holds 32 rows (a stripe). The stripes of a block run concurrently,
// each warp SW_LAG steps behind the warp above it; lane 31 of a warp puts the
// stripe's last row into a shared-memory ring that lane 0 of the next warp
// reads. The block synchronises every SW_STEPS steps. The lag makes every ring
// entry written at least one barrier before it is read (SW_LAG - 31 >=
// SW_STEPS) and the ring makes it outlive its read by at least one barrier
// (SW_RING - (SW_LAG - 31) >= SW_STEPS). Rows beyond SW_MAX_WARPS stripes run
// in rounds: the last row of a round goes through a global buffer to the first
// warp of the next round, so m has no compile-time limit.
//
// The cell is sw_cpu.sw_cell (see its module docstring): the paper's SW
// function with the gap subtraction moved after the maximum,
//     max(0, A-g, B-g, C+w) = SSub_B(max_B(max_B(A, B), C + w + g), g),
// 10s + 3 three-input operations (LOP3) instead of 13s + 3. Each thread keeps its
// running maximum R = max_B(R, H) (Section V, item 3); at the end the maxima of
// the block's threads are reduced by shuffles and shared memory, and the s
// words of the group's best scores are written for B2W.
//
// sw_wordwise is the conventional kernel the paper compares with: one pair per
// thread, int32 cells, 8 columns per sweep down the rows held in registers
// (for sm_90 nvcc turns its maxima into the DPX instructions VIMNMX3 and
// VIADDMNMX.RELU: about 8 SASS instructions per cell).
//
// Character codes (seqsift.alphabet): A0 C1 G2 T3, 4 = N or any other byte.
// Plain C types only: NVRTC (CuPy) compiles this file without the C++
// standard headers; plain nvcc compiles it too (nvcc -arch=sm_90 -c sw.cu).

typedef unsigned int u32;
typedef unsigned long long u64;

#define SW_STEPS 32      // anti-diagonal steps between block barriers
#define SW_LAG 64        // steps each warp runs behind the warp above it (>= SW_STEPS + 31)
#define SW_RING 128      // columns per ring (>= SW_LAG - 31 + SW_STEPS), a power of two
#define SW_MAX_WARPS 8   // stripes (warps) per block; the launcher keeps shared memory <= 48 KB
#define SW_PLANES 3      // bit 0, bit 1 of the base code; the N bit
#define FULL_MASK 0xffffffffu

// --------------------------------------------------------------------------
// Bit transpose (Section II, Fig. 1, Table I)
// --------------------------------------------------------------------------

// The low K bits of every 2K-bit block: all ones / (2^K + 1), e.g. 0x00FF00FF.
template <typename W, int K>
__device__ __forceinline__ W block_mask() {
    return (W)(~(W)0) / (W)(((W)1 << K) + 1);
}

// Whether row r must stay exact at level K so that rows < ROWS come out right:
// the later levels only mix rows that differ in bits below K.
template <int K, int ROWS>
__device__ __forceinline__ bool needed_row(int r) {
    return (r & ~(K - 1)) <= ((ROWS - 1) & ~(K - 1));
}

// Level K of the transpose of a BITS x BITS bit matrix, then the levels below.
// Afterwards bit k of a[r] is bit r of the original a[k], for r < ROWS.
// swap (7 operations) where both rows are needed, copy (4) where one is.
template <typename W, int BITS, int ROWS, int K>
struct Transpose {
    static __device__ __forceinline__ void run(W (&a)[BITS]) {
        const W mask = block_mask<W, K>();
#pragma unroll
        for (int i = 0; i < BITS; ++i) {
            if (i & K) continue;
            const bool need_a = needed_row<K, ROWS>(i);
            const bool need_b = needed_row<K, ROWS>(i + K);
            if (need_a && need_b) {           // swap(A, B, K, mask)
                const W t = ((a[i] >> K) & mask) ^ (a[i + K] & mask);
                a[i] ^= t << K;
                a[i + K] ^= t;
            } else if (need_a) {              // copy(A, B, K, mask)
                a[i] = (a[i] & mask) | ((a[i + K] & mask) << K);
            } else if (need_b) {
                a[i + K] = (a[i + K] & ~mask) | ((a[i] >> K) & mask);
            }
        }
        Transpose<W, BITS, ROWS, K / 2>::run(a);
    }
};

template <typename W, int BITS, int ROWS>
struct Transpose<W, BITS, ROWS, 0> {
    static __device__ __forceinline__ void run(W (&)[BITS]) {}
};

// W2B: thread per (word group, position). Pairs past `pairs` and positions
// past len_in are N. planes[(g * 3 + plane) * len_out + pos].
template <typename W, int BITS>
__device__ __forceinline__ void w2b_body(const unsigned char *__restrict__ codes, long long pairs, int len_in,
                                         int len_out, long long groups, W *__restrict__ planes) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= groups * len_out) return;
    const long long g = tid / len_out;
    const int pos = (int)(tid - g * len_out);
    W a[BITS];
#pragma unroll
    for (int k = 0; k < BITS; ++k) {
        const long long pair = g * BITS + k;
        unsigned int c = 4;
        if (pair < pairs && pos < len_in) {
            c = codes[pair * len_in + pos];   // consecutive threads: consecutive positions
            if (c > 4) c = 4;
        }
        a[k] = (W)c;
    }
    Transpose<W, BITS, SW_PLANES, BITS / 2>::run(a);
#pragma unroll
    for (int plane = 0; plane < SW_PLANES; ++plane) {
        planes[(g * SW_PLANES + plane) * len_out + pos] = a[plane];
    }
}

extern "C" __global__ void sw_w2b32(const unsigned char *codes, long long pairs, int len_in, int len_out,
                                    long long groups, u32 *planes) {
    w2b_body<u32, 32>(codes, pairs, len_in, len_out, groups, planes);
}

extern "C" __global__ void sw_w2b64(const unsigned char *codes, long long pairs, int len_in, int len_out,
                                    long long groups, u64 *planes) {
    w2b_body<u64, 64>(codes, pairs, len_in, len_out, groups, planes);
}

// B2W: thread per word group; sliced[g * s + b] = bit b of the group's scores.
template <typename W, int BITS>
__device__ __forceinline__ void b2w_body(const W *__restrict__ sliced, int s, long long pairs, long long groups,
                                         int *__restrict__ scores) {
    const long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= groups) return;
    W a[BITS];
#pragma unroll
    for (int b = 0; b < BITS; ++b) a[b] = b < s ? sliced[g * s + b] : (W)0;
    Transpose<W, BITS, BITS, BITS / 2>::run(a);
#pragma unroll
    for (int k = 0; k < BITS; ++k) {
        const long long pair = g * BITS + k;
        if (pair < pairs) scores[pair] = (int)a[k];
    }
}

extern "C" __global__ void sw_b2w32(const u32 *sliced, int s, long long pairs, long long groups, int *scores) {
    b2w_body<u32, 32>(sliced, s, pairs, groups, scores);
}

extern "C" __global__ void sw_b2w64(const u64 *sliced, int s, long long pairs, long long groups, int *scores) {
    b2w_body<u64, 64>(sliced, s, pairs, groups, scores);
}

// --------------------------------------------------------------------------
// Bit-sliced arithmetic (Section IV.A); arrays of S words, bit 0 first.
// out may be the same array as an input: bit i is written after bit i is read.
// --------------------------------------------------------------------------

// p = 1 where A > B, 0 where A < B: no borrow out of A - B.
template <typename W, int S>
__device__ __forceinline__ W greaterthan(const W (&a)[S], const W (&b)[S]) {
    W p = ~a[0] & b[0];
#pragma unroll
    for (int i = 1; i < S; ++i) p = (b[i] & p) | (~a[i] & (b[i] ^ p));
    return ~p;
}

// max_B (Lemma 2)
template <typename W, int S>
__device__ __forceinline__ void max_b(W (&out)[S], const W (&a)[S], const W (&b)[S]) {
    const W p = greaterthan<W, S>(a, b);
#pragma unroll
    for (int i = 0; i < S; ++i) out[i] = (a[i] & p) | (b[i] & ~p);
}

// SSub_B (Lemma 4): out = max(A - B, 0).
template <typename W, int S>
__device__ __forceinline__ void ssub_b(W (&out)[S], const W (&a)[S], const W (&b)[S]) {
    W p = 0;
#pragma unroll
    for (int i = 0; i < S; ++i) {
        const W ai = a[i], bi = b[i];
        out[i] = ai ^ bi ^ p;
        p = (~ai & (bi ^ p)) | (bi & p);
    }
#pragma unroll
    for (int i = 0; i < S; ++i) out[i] &= ~p;
}

// matching_B with both constants raised by g, as one adder: out = C + (e ? k2 : k1)
// mod 2^S, the operand chosen per pair bit by bit; where sat is set (c2 > g,
// so k2 = 2^S - (c2 - g)) a mismatch without carry out went below 0: out = 0.
template <typename W, int S>
__device__ __forceinline__ void add_select(W (&out)[S], const W (&c)[S], W e, const W (&k1)[S],
                                           const W (&k2)[S], bool sat) {
    W p = 0;
#pragma unroll
    for (int i = 0; i < S; ++i) {
        const W ci = c[i];
        const W bi = (e & k2[i]) | (~e & k1[i]);
        out[i] = ci ^ bi ^ p;
        p = (ci & (bi ^ p)) | (bi & p);
    }
    if (sat) {   // block-uniform: skipped (s + 2 operations saved) when c2 <= g
        const W negative = e & ~p;
#pragma unroll
        for (int i = 0; i < S; ++i) out[i] &= ~negative;
    }
}

// The DP cell: h <- max(0, up - g, h - g, diag + w) with up = H[i-1][j],
// h = H[i][j-1] (overwritten by H[i][j]), diag = H[i-1][j-1].
template <typename W, int S>
__device__ __forceinline__ void sw_cell(W (&h)[S], const W (&up)[S], const W (&diag)[S], W e, const W (&k1)[S],
                                        const W (&k2)[S], bool sat, const W (&kg)[S]) {
    W x[S];
    max_b<W, S>(x, up, h);                     // max(H[i-1][j], H[i][j-1])
    add_select<W, S>(h, diag, e, k1, k2, sat); // H[i-1][j-1] + w + g, at least 0
    max_b<W, S>(x, x, h);
    ssub_b<W, S>(h, x, kg);                    // - g, at least 0
}

template <typename W, int S>
__device__ __forceinline__ void shfl_xor_max(W (&best)[S], int offset) {
    W other[S];
#pragma unroll
    for (int b = 0; b < S; ++b) other[b] = __shfl_xor_sync(FULL_MASK, best[b], offset);
    max_b<W, S>(best, best, other);
}

// 1 where H >= T: no borrow out of H - T (T bit-sliced in t, a constant per
// launch); one three-input operation per bit, against 2S for max_b.
template <typename W, int S>
__device__ __forceinline__ W at_least(const W (&h)[S], const W (&t)[S]) {
    W p = 0;
#pragma unroll
    for (int i = 0; i < S; ++i) p = (t[i] & (~h[i] | p)) | (~h[i] & p);
    return ~p;
}

// --------------------------------------------------------------------------
// Step 3: one block per word group; see the header comment.
//   x_planes[(g * 3 + plane) * m32 + row], y_planes[(g * 3 + plane) * n + col]
//   constants[0:S], [S:2S], [2S:3S]: k1 = c1 + g, k2 = (g - c2) mod 2^S and g,
//   bit-sliced; sat = (c2 > g)
//   boundary[(g * n + col) * S + b]: the last row of a round (rounds > 1 only)
//   out[g * S + b]: bit b of the group's best scores
//
// REACHED (sw_reach* kernels, screening with a threshold T): instead of the
// running maximum (2S operations a cell) each thread keeps one word, bit k set
// once a cell of pair k reached T (S + 1 operations), and out[g] is the OR of
// the block's words. S then only has to hold T - 1 + c1 + g, not the best
// score: the first cell of a pair to reach T has every predecessor below T, so
// it is computed exactly; what that pair's cells hold afterwards (they may
// wrap around 2^S) no longer matters, and bit-sliced lanes never mix pairs.
// --------------------------------------------------------------------------
// PAPER_SCORES: the paper's (and seqsift's default) c1 = 2, c2 = 1, g = 1 as
// compile-time constants, so that the adders shrink where a constant bit is 0
// (104 instead of 135 LOP3 per step at S = 9, running maximum included);
// otherwise the constants come from `constants`.
template <typename W, int S, bool PAPER_SCORES, bool REACHED>
__device__ __forceinline__ void sw_bpbc_body(const W *__restrict__ x_planes, const W *__restrict__ y_planes,
                                             int m32, int n, const W *__restrict__ constants, int sat,
                                             const W *__restrict__ threshold, W *__restrict__ boundary,
                                             W *__restrict__ out) {
    extern __shared__ __align__(16) unsigned char sw_shared[];
    W *ring = reinterpret_cast<W *>(sw_shared);   // [warp - 1][SW_RING][S]: rows leaving each warp

    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int warps = blockDim.x >> 5;
    const long long g = blockIdx.x;
    const int stripes = m32 >> 5;
    const int rounds = (stripes + warps - 1) / warps;

    // The constants k1, k2, g bit-sliced (word i all ones where bit i is set: the
    // paper's 1^32), read once into registers. (Computed here from integers,
    // the compiler recomputed them at every use: ~60 more instructions a cell.)
    W K1[S], K2[S], KG[S];
#pragma unroll
    for (int i = 0; i < S; ++i) {
        if (PAPER_SCORES) {   // k1 = c1 + g = 3, k2 = g - c2 = 0, g = 1
            K1[i] = i < 2 ? ~(W)0 : (W)0;
            K2[i] = 0;
            KG[i] = i == 0 ? ~(W)0 : (W)0;
        } else {
            K1[i] = constants[i];
            K2[i] = constants[S + i];
            KG[i] = constants[2 * S + i];
        }
    }
    const bool SAT = PAPER_SCORES ? false : sat != 0;

    W best[S];   // R: this thread's running maximum over all its rows
    W TH[S];     // REACHED: the threshold T, bit-sliced
    W reached = 0;
#pragma unroll
    for (int b = 0; b < S; ++b) {
        best[b] = 0;
        TH[b] = REACHED ? threshold[b] : (W)0;
    }

    const W *xg = x_planes + g * SW_PLANES * (long long)m32;
    const W *yg = y_planes + g * SW_PLANES * (long long)n;
    W *bound = boundary + g * (long long)n * S;
    const long long steps = (long long)n + 31 + (long long)(warps - 1) * SW_LAG;

    for (int round = 0; round < rounds; ++round) {
        const int stripe = round * warps + warp;
        const bool active = stripe < stripes;
        const int row = stripe * 32 + lane;
        W x0 = 0, x1 = 0, xn = 0;   // this row's character, read once (Section V, item 1)
        if (active) {
            x0 = xg[row];
            x1 = xg[m32 + row];
            xn = xg[2 * m32 + row];
        }
        const bool top = stripe == 0;                                     // row -1 is all zeros
        const bool from_boundary = warp == 0 && round > 0;                // row above: previous round
        const bool to_ring = warp + 1 < warps;                            // row below: next warp
        const bool to_boundary = warp == warps - 1 && round + 1 < rounds; // row below: next round

        W h[S];        // H[i][j-1], then H[i][j]
        W diag[S];     // H[i-1][j-1]: what the thread above sent one step earlier
#pragma unroll
        for (int b = 0; b < S; ++b) h[b] = diag[b] = 0;

        for (long long phase = 0; phase < steps; phase += SW_STEPS) {
            const long long t0 = phase - (long long)warp * SW_LAG;   // this warp's step at the phase start
            if (active && t0 + SW_STEPS > 0 && t0 < (long long)n + 31) {   // warp-uniform
#pragma unroll 2
                for (int k = 0; k < SW_STEPS; ++k) {
                    const int j = (int)(t0 + k) - lane;
                    const bool valid = j >= 0 && j < n;
                    W up[S];   // H[i-1][j]: computed by lane - 1 at the previous step
#pragma unroll
                    for (int b = 0; b < S; ++b) up[b] = __shfl_up_sync(FULL_MASK, h[b], 1);
                    if (lane == 0) {   // the row above lives in another warp or round
                        if (top || !valid) {
#pragma unroll
                            for (int b = 0; b < S; ++b) up[b] = 0;
                        } else if (from_boundary) {
#pragma unroll
                            for (int b = 0; b < S; ++b) up[b] = bound[(long long)j * S + b];
                        } else {
                            const W *slot = ring + ((warp - 1) * SW_RING + (j & (SW_RING - 1))) * S;
#pragma unroll
                            for (int b = 0; b < S; ++b) up[b] = slot[b];
                        }
                    }
                    if (valid) {
                        const W y0 = yg[j], y1 = yg[n + j], yn = yg[2 * n + j];
                        const W e = (x0 ^ y0) | (x1 ^ y1) | xn | yn;   // matching_B's flag, N never matches
                        sw_cell<W, S>(h, up, diag, e, K1, K2, SAT, KG);
                        if constexpr (REACHED) reached |= at_least<W, S>(h, TH);
                        else max_b<W, S>(best, best, h);
                        if (lane == 31) {
                            if (to_ring) {
                                W *slot = ring + (warp * SW_RING + (j & (SW_RING - 1))) * S;
#pragma unroll
                                for (int b = 0; b < S; ++b) slot[b] = h[b];
                            } else if (to_boundary) {
#pragma unroll
                                for (int b = 0; b < S; ++b) bound[(long long)j * S + b] = h[b];
                            }
                        }
                    }
#pragma unroll
                    for (int b = 0; b < S; ++b) diag[b] = up[b];
                }
            }
            __syncthreads();
        }
    }

    // Reduce over the block's threads: within each warp by shuffles, then across
    // warps through shared memory (the rings are no longer read: the last phase
    // ended with a barrier).
    W *partial = ring;
    if constexpr (REACHED) {   // OR of the flags
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) reached |= __shfl_xor_sync(FULL_MASK, reached, offset);
        if (lane == 0) partial[warp] = reached;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < warps; ++w) reached |= partial[w];
            out[g] = reached;
        }
    } else {                   // maximum of the running maxima
#pragma unroll
        for (int offset = 16; offset > 0; offset >>= 1) shfl_xor_max<W, S>(best, offset);
        if (lane == 0) {
#pragma unroll
            for (int b = 0; b < S; ++b) partial[warp * S + b] = best[b];
        }
        __syncthreads();
        if (warp == 0) {
#pragma unroll
            for (int b = 0; b < S; ++b) best[b] = lane < warps ? partial[lane * S + b] : (W)0;
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1) shfl_xor_max<W, S>(best, offset);
            if (lane == 0) {
#pragma unroll
                for (int b = 0; b < S; ++b) out[g * S + b] = best[b];
            }
        }
    }
}

#define SW_BPBC_KERNEL(W, S, NAME, PAPER, REACHED)                                                              \
    extern "C" __global__ void __launch_bounds__(32 * SW_MAX_WARPS)                                             \
        NAME(const W *x_planes, const W *y_planes, int m32, int n, const W *constants, int sat,                \
             const W *threshold, W *boundary, W *out) {                                                         \
        sw_bpbc_body<W, S, PAPER, REACHED>(x_planes, y_planes, m32, n, constants, sat, threshold, boundary,    \
                                           out);                                                                \
    }

// Best scores, any scoring: sw_bpbc32_sS / sw_bpbc64_sS; c1, c2, g = 2, 1, 1:
// sw_bpbc32_sS_paper / sw_bpbc64_sS_paper. Threshold flags: sw_reach32_sS[_paper], sw_reach64_...
#define SW_BPBC_KERNELS(S)                                                                                      \
    SW_BPBC_KERNEL(u32, S, sw_bpbc32_s##S, false, false)                                                        \
    SW_BPBC_KERNEL(u64, S, sw_bpbc64_s##S, false, false)                                                        \
    SW_BPBC_KERNEL(u32, S, sw_bpbc32_s##S##_paper, true, false)                                                 \
    SW_BPBC_KERNEL(u64, S, sw_bpbc64_s##S##_paper, true, false)                                                 \
    SW_BPBC_KERNEL(u32, S, sw_reach32_s##S, false, true)                                                        \
    SW_BPBC_KERNEL(u64, S, sw_reach64_s##S, false, true)                                                        \
    SW_BPBC_KERNEL(u32, S, sw_reach32_s##S##_paper, true, true)                                                 \
    SW_BPBC_KERNEL(u64, S, sw_reach64_s##S##_paper, true, true)

// One score width per compilation: the launcher compiles this file once per
// width S it needs (GPU_SCORE_WIDTHS in __init__.py) with -DSW_SCORE_BITS=S; all
// widths in one module took ~40 s to compile. Plain nvcc checks S = 9.
#ifndef SW_SCORE_BITS
#define SW_SCORE_BITS 9
#endif
#define SW_BPBC_KERNELS_OF(S) SW_BPBC_KERNELS(S)   // expands SW_SCORE_BITS before ## pastes it
SW_BPBC_KERNELS_OF(SW_SCORE_BITS)

// --------------------------------------------------------------------------
// sw-wordwise: one pair per thread. Codes are position-major (x[i * pairs + p])
// so that a warp's loads are coalesced. Each sweep takes WW_COLS target
// columns down all m rows with the row segment in registers; scratch[i * pairs
// + p] carries H[i][j0 - 1] between sweeps.
// --------------------------------------------------------------------------
#define WW_COLS 8

extern "C" __global__ void __launch_bounds__(128)
    sw_wordwise(const unsigned char *__restrict__ x, const unsigned char *__restrict__ y, long long pairs, int m,
                int n, int c1, int c2, int gap, int *__restrict__ scratch, int *__restrict__ scores) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pairs) return;
    for (int i = 0; i < m; ++i) scratch[i * pairs + p] = 0;   // H[i][-1]
    int best = 0;
    for (int j0 = 0; j0 < n; j0 += WW_COLS) {
        int yc[WW_COLS];
        int above[WW_COLS];   // H[i-1][j0 + c]
#pragma unroll
        for (int c = 0; c < WW_COLS; ++c) {
            // Columns past n compare against a code that matches nothing; such
            // cells only lose score from real ones and are never read back.
            yc[c] = j0 + c < n ? (int)y[(long long)(j0 + c) * pairs + p] : 5;
            above[c] = 0;
        }
        int corner = 0;   // H[i-1][j0-1]
        for (int i = 0; i < m; ++i) {
            const int xi = x[(long long)i * pairs + p];
            const int on_match = xi < 4 ? c1 : -c2;   // N never matches, itself included
            int left = scratch[i * pairs + p];        // H[i][j0-1]
            const int next_corner = left;
            int d = corner;
#pragma unroll
            for (int c = 0; c < WW_COLS; ++c) {
                const int w = xi == yc[c] ? on_match : -c2;
                int h = max(d + w, max(above[c], left) - gap);
                h = max(h, 0);
                d = above[c];
                above[c] = h;
                left = h;
                best = max(best, h);
            }
            scratch[i * pairs + p] = left;   // H[i][j0 + WW_COLS - 1]
            corner = next_corner;
        }
    }
    scores[p] = best;
}
