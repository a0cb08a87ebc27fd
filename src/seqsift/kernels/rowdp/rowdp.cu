// edit-rowdp and edit-rowdp-shfl: k-differences by the row-parallel dynamic
// programming of Ho, Oh & Kim (2017, PLoS ONE 12(10): e0186251,
// papers/ho2017-levenshtein-warp-shuffle.txt), after Guo et al. (2013).
//
// The search matrix (the paper's equation 1, Sellers' free start):
//     D[0][j] = 0,  D[i][0] = i,
//     D[i][j] = D[i-1][j-1]                                   if T[j-1] matches P[i-1]
//             = 1 + min(D[i-1][j], D[i][j-1], D[i-1][j-1])    otherwise
// and d(e) = D[m][e]. Row i needs row i (D[i][j-1]): no parallelism along a row.
// The X matrix removes that dependency (equations 2 and 3):
//     X[c][j] = the last column x <= j whose character T[x-1] is c (0: none),
//     D[i][j] = D[i-1][j-1]                                   if X = j (a match)
//             = 1 + min(D[i-1][j], D[i-1][j-1], i + j - 1)    if X = 0
//             = 1 + min(D[i-1][j], D[i-1][j-1], D[i-1][X-1] + (j-1-X))  otherwise,
// with X = X[l][j], l = P[i-1]. Row i now reads only row i - 1, so every
// column of a row is computed at once: one thread per text position and a
// barrier between rows (Algorithm 1).
//
// Why (3) is (1): unroll the horizontal term D[i][j-1] of (1) leftwards. A
// chain of horizontal steps (+1 each) from column j back to a column j' ends in
//   (a) a vertical or diagonal step at a mismatch column j', X < j' < j:
//       (j - j') + 1 + min(D[i-1][j'], D[i-1][j'-1]). Adjacent cells of a row
//       of the search matrix differ by at most 1, so
//       D[i-1][j-1] <= D[i-1][j'-1] + (j - j'): never below 1 + D[i-1][j-1];
//   (b) the match column X, where D[i][X] = D[i-1][X-1]:
//       D[i-1][X-1] + (j - X) = 1 + (D[i-1][X-1] + (j-1-X));
//   (c) column 0 when X = 0, where D[i][0] = i: i + j = 1 + (i + j - 1).
// These are the terms of (3).
//
// IUPAC patterns and text code 4. The argument above uses only "column x
// matches pattern position i", never which symbol matched, so (3) holds with
// X_i(j) = the last column x <= j whose text code lies in P[i-1]'s IUPAC
// mask = max over the codes c of the mask of X[c][j] (the paper's X rows, one
// per code A C G T). Text code 4 (N and every other byte) is in no mask: it
// sets no X[c] and never matches. A mask of 0 matches nothing: X_i = 0.
//
// Bounded differences (k). Only d(e) <= k is reported, so both kernels keep
// S[i][j] = min(D[i][j], k + 1). Every term of (3) is a min of cells of row
// i - 1 plus a constant >= 0, so min(S, k + 1) of (3) applied to saturated
// cells equals the saturated true value. The third term, 1 + D[i-1][X-1] +
// (j-1-X) >= j - X, then matters only when j - X <= k: X is only looked for in
// the k + 1 columns [j - k, j]. We store X as the distance delta = j - X_i(j)
// (0: a match at j), or k + 1 ("none in the window"); with delta >= window =
// min(k + 1, j) the cell uses i + j - 1, which is exact when j <= k (the
// window is then the whole prefix, so X = 0) and otherwise >= k + 1, like the
// true term. Both therefore saturate alike.
//
// Tiles. A block owns the ends of [tile.lo, tile.hi) and runs the DP on the
// text from read_lo = tile.lo - (m + k) as if the text began there
// (D[i][0] = i at read_lo): an alignment of cost <= k spans at most m + k
// characters, so every reported d(e) is exact (as in edit.cu). Column j of the
// tile is text position read_lo + j - 1. Each thread owns the columns
// r * ROWDP_THREADS + threadIdx.x + 1, r < columns_per_thread: "one thread per
// text position", columns_per_thread times over (a tile is wider than a block
// so that the warm-up is a small share of it).
//
// rowdp_global is the paper's baseline, PASM_GPU (Algorithm 1, equation 3): the
// X matrix (built for the whole text piece by rowdp_x_matrix, Algorithm 1 lines
// 4-8), the pattern and both DP rows live in global memory; every cell reads
// D[i-1][j-1], D[i-1][j] and D[i-1][X-1] from there and writes D[i][j] back.
//
// rowdp_shfl_r<R> is the paper's WsPASM_GPUshared (Algorithm 2, equation 4):
// each thread keeps its cells D[i-1][j] in registers (Bvar), takes D[i-1][j-1]
// from the lane to its left with __shfl_up_sync (Avar) and reads memory for it
// only at a warp border (lane 0; the paper's "i % w == 0" means the lane
// index), and reads Cvar = D[i-1][X-1] from the row it writes to memory each
// row (Algorithm 2 line 19). The block's text tile and the pattern are in
// shared memory; so are the tile's X matrix (built by the block from the
// shared text) and the row, on chip instead of in global memory.
//
// In both kernels "T[j-1] matches P[i-1]" is tested as delta == 0, i.e.
// X_i(j) = j, which is the same statement and needs no text read per row.
// Hits go through hits.cuh's buffers (device-side compaction), one atomic per
// warp (emit_warp). Plain C types only:
// NVRTC (CuPy) compiles this file without the C++ standard headers.
#include "hits.cuh"

#define ROWDP_THREADS 256
#define FULL_WARP 0xffffffffu

// The block's tile: ends e with e - 1 in [lo, hi), columns 1 .. width from
// read_lo (column j = text position read_lo + j - 1); report from first_report.
struct Tile {
    long long lo, hi, read_lo;
    int width, first_report;
};

__device__ __forceinline__ Tile tile_of(long long piece_lo, long long piece_hi, int owned_per_tile, int m, int k) {
    Tile t;
    t.lo = piece_lo + (long long)blockIdx.x * owned_per_tile;
    t.hi = min(t.lo + (long long)owned_per_tile, piece_hi);
    t.read_lo = max(0LL, t.lo - (long long)(m + k));
    t.width = (int)(t.hi - t.read_lo);
    t.first_report = (int)(t.lo - t.read_lo) + 1;
    return t;
}

// hits.cuh's emit for a whole warp at once: one atomicAdd per warp for all its
// lanes' hits (a warp's hits are neighbouring ends, so they often come
// together). Every lane of the warp must call it; ``hit`` says which report.
__device__ __forceinline__ void emit_warp(bool hit, unsigned long long *count, unsigned long long capacity,
                                          int *out_row, long long *out_end, short *out_dist,
                                          int row, long long end, int dist) {
    const unsigned int lanes = __ballot_sync(FULL_WARP, hit);
    if (lanes == 0) return;
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(lanes) - 1;
    unsigned long long first = 0;
    if (lane == leader) first = atomicAdd(count, (unsigned long long)__popc(lanes));
    first = __shfl_sync(FULL_WARP, first, leader);
    if (hit) {
        const unsigned long long slot = first + __popc(lanes & ((1u << lane) - 1u));
        if (slot < capacity) {
            out_row[slot] = row;
            out_end[slot] = end;
            out_dist[slot] = (short)dist;
        }
    }
}

// The one code of an IUPAC mask of a single code, or -1 (IUPAC ambiguity or 0).
__device__ __forceinline__ int single_code(int mask) {
    return (mask != 0 && (mask & (mask - 1)) == 0) ? __ffs(mask) - 1 : -1;
}

// delta = j - X_i(j) for pattern position i (mask), from an X matrix stored as
// distances, x[c * stride + index]: the min over the mask's codes (the
// max of their X), none if the mask has no code.
__device__ __forceinline__ int x_distance(const unsigned short *x, long long stride, long long index,
                                          int mask, int code, int none) {
    if (code >= 0) return x[code * stride + index];
    int delta = none;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        if ((mask >> c) & 1) delta = min(delta, (int)x[c * stride + index]);
    }
    return delta;
}

// Equation (3) (equation (4) in register form) for cell (i, j), saturated at
// k + 1: a = D[i-1][j-1] (Avar), b = D[i-1][j] (Bvar), delta = j - X_i(j),
// prev = row i - 1 (for Cvar = D[i-1][X-1]).
__device__ __forceinline__ int rowdp_cell(const short *prev, int j, int i, int a, int b, int delta, int k) {
    if (delta == 0) return a;  // X = j: T[j-1] matches P[i-1]
    const int window = min(k + 1, j);
    const int c = (delta < window) ? (int)prev[j - delta - 1] + delta - 1  // D[i-1][X-1] + (j-1-X)
                                   : i + j - 1;                            // X = 0 (or past the window)
    return min(1 + min(min(a, b), c), k + 1);
}

// The X matrix of Algorithm 1, lines 4-8 (equation 2), for text positions
// [x_lo, x_lo + x_len), stored as distances: x_matrix[c * x_len + p - x_lo] =
// p - (last q in [p - k, p] with text[q] == c), or k + 1 when there is none.
// (A column j of a tile is position p = read_lo + j - 1, so this is
// j - X[c][j]; rowdp_cell discards an X before the tile by its window.)
extern "C" __global__ void rowdp_x_matrix(const unsigned char *text, long long x_lo, long long x_len, int k,
                                          unsigned short *x_matrix) {
    const unsigned short none = (unsigned short)(k + 1);
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < x_len;
         index += (long long)gridDim.x * blockDim.x) {
        const long long p = x_lo + index;
        const long long stop = max(0LL, p - k);
        int found = 0;
        for (long long q = p; q >= stop && found != 15; --q) {
            const int c = text[q];
            if (c < 4 && !((found >> c) & 1)) {
                found |= 1 << c;
                x_matrix[c * x_len + index] = (unsigned short)(p - q);
            }
        }
        for (int c = 0; c < 4; ++c) {
            if (!((found >> c) & 1)) x_matrix[c * x_len + index] = none;
        }
    }
}

// PASM_GPU (Algorithm 1): grid (tile, row of row_ids). Each block uses its own
// two rows of D in global memory: scratch + block * 2 * (width + 1).
extern "C" __global__ void rowdp_global(const unsigned short *x_matrix, long long x_lo, long long x_len,
                                        const unsigned char *masks, int mask_stride, const int *lengths,
                                        const int *row_ids, int k, long long piece_lo, long long piece_hi,
                                        int owned_per_tile, int columns_per_thread, short *scratch,
                                        unsigned long long *count, unsigned long long capacity,
                                        int *out_row, long long *out_end, short *out_dist) {
    const int row = row_ids[blockIdx.y];
    const int m = lengths[row];
    const unsigned char *pattern = masks + (size_t)row * mask_stride;
    const Tile t = tile_of(piece_lo, piece_hi, owned_per_tile, m, k);
    const int width = ROWDP_THREADS * columns_per_thread;
    short *prev = scratch + ((size_t)blockIdx.y * gridDim.x + blockIdx.x) * 2 * (width + 1);
    short *cur = prev + (width + 1);
    for (int j = threadIdx.x; j <= width; j += ROWDP_THREADS) prev[j] = 0;  // row 0: D[0][j] = 0
    __syncthreads();
    const long long x_of_column = t.read_lo - 1 - x_lo;  // X matrix index of column j: x_of_column + j

    for (int i = 1; i <= m; ++i) {
        const int mask = pattern[i - 1];
        const int code = single_code(mask);
        if (threadIdx.x == 0) cur[0] = (short)i;  // D[i][0] = i
        for (int r = 0; r < columns_per_thread; ++r) {
            const int j = r * ROWDP_THREADS + threadIdx.x + 1;
            if (j > t.width) break;
            const int delta = x_distance(x_matrix, x_len, x_of_column + j, mask, code, k + 1);
            cur[j] = (short)rowdp_cell(prev, j, i, prev[j - 1], prev[j], delta, k);
        }
        __syncthreads();  // the barrier between rows
        short *swap = prev;
        prev = cur;
        cur = swap;
    }
    for (int r = 0; r < columns_per_thread; ++r) {  // prev is row m: d(e) at e = read_lo + j
        const int j = r * ROWDP_THREADS + threadIdx.x + 1;
        const int d = j <= width ? prev[j] : k + 1;
        emit_warp(j >= t.first_report && j <= t.width && d <= k, count, capacity, out_row, out_end, out_dist,
                  row, t.read_lo + j, d);
    }
}

// WsPASM_GPUshared (Algorithm 2): grid (tile, row of row_ids); R columns per
// thread, tile width W = ROWDP_THREADS * R. Dynamic shared memory, in order:
// two rows of D (2 x (W + 1) shorts), the tile's X matrix (4 x W distances),
// the pattern (m_max bytes), its single codes (m_max bytes), the text tile (W bytes).
template <int R>
__device__ __forceinline__ void rowdp_shfl_tile(const unsigned char *text, const unsigned char *masks,
                                                int mask_stride, const int *lengths, const int *row_ids, int k,
                                                int m_max, long long piece_lo, long long piece_hi,
                                                int owned_per_tile, unsigned long long *count,
                                                unsigned long long capacity, int *out_row, long long *out_end,
                                                short *out_dist) {
    const int W = ROWDP_THREADS * R;
    extern __shared__ unsigned char shared_bytes[];
    short *rows = (short *)shared_bytes;
    unsigned short *x_tile = (unsigned short *)(rows + 2 * (W + 1));
    unsigned char *pattern = (unsigned char *)(x_tile + 4 * W);
    signed char *pattern_code = (signed char *)(pattern + m_max);  // single_code of each position
    unsigned char *tile_text = (unsigned char *)(pattern_code + m_max);

    const int row = row_ids[blockIdx.y];
    const int m = lengths[row];
    const Tile t = tile_of(piece_lo, piece_hi, owned_per_tile, m, k);
    // The block's text tile and the pattern into shared memory (paper: "substring
    // and target pattern"); columns past the tile read code 4 (never matches).
    for (int q = threadIdx.x; q < W; q += ROWDP_THREADS) {
        tile_text[q] = q < t.width ? (unsigned char)min((int)text[t.read_lo + q], 4) : (unsigned char)4;
    }
    for (int q = threadIdx.x; q < m; q += ROWDP_THREADS) {
        pattern[q] = masks[(size_t)row * mask_stride + q];
        pattern_code[q] = (signed char)single_code(pattern[q]);
    }
    for (int q = threadIdx.x; q <= W; q += ROWDP_THREADS) rows[q] = 0;  // row 0: D[0][j] = 0
    __syncthreads();

    // Equation (2) for the thread's own columns, within the tile and at most k
    // back (see the top of the file); only this thread reads these entries.
    const unsigned short none = (unsigned short)(k + 1);
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int j = r * ROWDP_THREADS + threadIdx.x + 1;
        const int stop = max(1, j - k);
        int found = 0;
        for (int x = j; x >= stop && found != 15; --x) {
            const int c = tile_text[x - 1];
            if (c < 4 && !((found >> c) & 1)) {
                found |= 1 << c;
                x_tile[c * W + j - 1] = (unsigned short)(j - x);
            }
        }
        for (int c = 0; c < 4; ++c) {
            if (!((found >> c) & 1)) x_tile[c * W + j - 1] = none;
        }
    }

    int dvar[R];  // Dvar: this thread's cells of the last row computed
#pragma unroll
    for (int r = 0; r < R; ++r) dvar[r] = 0;
    const int lane = threadIdx.x & 31;
    for (int i = 1; i <= m; ++i) {
        const int mask = pattern[i - 1];
        const int code = pattern_code[i - 1];
        const short *prev = rows + ((i - 1) & 1) * (W + 1);
        short *cur = rows + (i & 1) * (W + 1);
        if (threadIdx.x == 0) cur[0] = (short)i;  // D[i][0] = i
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int j = r * ROWDP_THREADS + threadIdx.x + 1;
            int a = __shfl_up_sync(FULL_WARP, dvar[r], 1);  // Avar = D[i-1][j-1] from lane - 1
            if (lane == 0) a = prev[j - 1];                  // across a warp border: memory
            const int delta = x_distance(x_tile, W, j - 1, mask, code, k + 1);
            dvar[r] = rowdp_cell(prev, j, i, a, dvar[r], delta, k);  // Bvar = dvar[r]
            cur[j] = (short)dvar[r];
        }
        __syncthreads();  // the barrier between rows
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int j = r * ROWDP_THREADS + threadIdx.x + 1;
        emit_warp(j >= t.first_report && j <= t.width && dvar[r] <= k, count, capacity, out_row, out_end,
                  out_dist, row, t.read_lo + j, dvar[r]);
    }
}

#define ROWDP_SHFL_KERNEL(R)                                                                                   \
    extern "C" __global__ void __launch_bounds__(ROWDP_THREADS) rowdp_shfl_r##R(                               \
        const unsigned char *text, const unsigned char *masks, int mask_stride, const int *lengths,           \
        const int *row_ids, int k, int m_max, long long piece_lo, long long piece_hi, int owned_per_tile,     \
        unsigned long long *count, unsigned long long capacity, int *out_row, long long *out_end,             \
        short *out_dist) {                                                                                     \
        rowdp_shfl_tile<R>(text, masks, mask_stride, lengths, row_ids, k, m_max, piece_lo, piece_hi,          \
                           owned_per_tile, count, capacity, out_row, out_end, out_dist);                      \
    }

ROWDP_SHFL_KERNEL(1)
ROWDP_SHFL_KERNEL(2)
ROWDP_SHFL_KERNEL(4)
ROWDP_SHFL_KERNEL(8)
ROWDP_SHFL_KERNEL(16)
