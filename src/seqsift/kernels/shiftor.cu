// Shift-Or and Wu-Manber as inclusive scans on the GPU (Mitani, Ino and
// Hagihara 2017, papers/mitani2017-shift-or-inclusive-scan.txt: "the paper"),
// and the segmentation baseline they compare with (GBPR, Lin et al. 2014).
//
// Bit-vectors follow the paper's Shift-Or convention: bit i of a state is 0
// when the first i + 1 pattern characters match the text ending here ("active").
// tables[row][c] is the mask B[c] of Eq. (1): bit i set when pattern position
// i does NOT match text byte c (DNA: codes 0-3 by the IUPAC masks, code 4 and
// every other byte match nothing; bytes: plain equality). Bits >= m are 0, so
// they act as the wildcards of Section 5.1 (Fig. 5).
//
// The tribrid scheme (Section 4.4, Table 1), for one row per blockIdx.y:
//   grid   : overlapping segments. Block x owns tiles [x * tiles_per_block, ...)
//            and starts from the exact state before its first character,
//            computed by one thread from the m - 1 (m + k - 1 for WM)
//            characters before it (the halo).
//   block  : disjoint segmented scan over its warps (Algorithm 3): each warp's
//            aggregate goes through shared memory; one __syncthreads per scan.
//            Tiles are processed in order; the last lane's state carries over.
//   warp   : inclusive scan with shuffles (Hillis-Steele); the shift amount of
//            step s is the static alpha * 2^s, and steps stop once it reaches
//            the word size w (Section 4.3: older characters shift out).
//   thread : alpha contiguous characters (one 16-byte load for alpha = 16),
//            sequential bit-parallel Shift-Or from the identity <0, 0>
//            (algorithm cascading, Section 5.1, Fig. 4).
// Exact matching skips the last addition phase when m <= w - alpha + 1 (the
// wildcard extension, Fig. 5): the state at a thread's last character then
// holds its alpha end bits at bits m - 1 ... m + alpha - 2.
//
// Hits go through hits.cuh's emit (row, end, distance), in no order.
// Plain C types only: NVRTC (CuPy) compiles this file without standard headers.
#include "hits.cuh"

#define LANES 32
#define CODES 256
#define WM_K_MAX 63        // edit-wm-scan: levels 0..k kept in shared memory between tiles
#define SEGMENTED_K_MAX 8  // edit-wm-segmented: levels 0..k in registers
#define FULL_MASK 0xffffffffu

typedef unsigned int word32;
typedef unsigned long long word64;

// The mask table, replicated so that every lane reads its own copy (no bank
// conflicts whatever the text): table[c * REPLICAS + lane % REPLICAS]. 32 copies
// of 4-byte words, or 16 copies of 8-byte words (a 64-bit access is served per
// half-warp); either way 128 bytes per code, 32 KB in all.
extern __shared__ word64 shiftor_dynamic_smem[];

template <typename Word> struct Bits { static constexpr int value = 8 * (int)sizeof(Word); };
template <typename Word> struct Replicas { static constexpr int value = 128 / (int)sizeof(Word); };

// x << u in F^w, 0 once u reaches the word size (Lemma 1 with the shifted-out bits gone).
template <typename Word>
__device__ __forceinline__ Word shl(Word x, int u) {
    return u < Bits<Word>::value ? (Word)(x << u) : (Word)0;
}

template <typename Word>
__device__ __forceinline__ Word low_bits(int count) {
    return count >= Bits<Word>::value ? ~(Word)0 : (((Word)1 << count) - 1);
}

// Fills the replicated table of `row` (all threads of the block; synchronise after).
template <typename Word>
__device__ __forceinline__ Word *fill_table(const word64 *tables, int row) {
    constexpr int R = Replicas<Word>::value;
    Word *table = (Word *)shiftor_dynamic_smem;
    for (int idx = threadIdx.x; idx < CODES * R; idx += blockDim.x) {
        table[idx] = (Word)tables[(long long)row * CODES + idx / R];
    }
    return table;
}

// alpha characters from text[pos] into 32-bit words (character i in byte i % 4 of
// word i / 4): one vector load when they lie inside the text, bytewise (0 past
// the end) otherwise. pos is a multiple of min(alpha, 16) and text is 16-byte aligned.
template <int ALPHA>
__device__ __forceinline__ void load_chars(const unsigned char *text, long long n, long long pos,
                                           unsigned int (&w)[(ALPHA + 3) / 4]) {
    if (pos + ALPHA <= n) {
        if constexpr (ALPHA == 1) {
            w[0] = __ldg(text + pos);
        } else if constexpr (ALPHA == 2) {
            w[0] = __ldg((const unsigned short *)(text + pos));
        } else if constexpr (ALPHA == 4) {
            w[0] = __ldg((const unsigned int *)(text + pos));
        } else if constexpr (ALPHA == 8) {
            const uint2 v = __ldg((const uint2 *)(text + pos));
            w[0] = v.x; w[1] = v.y;
        } else {
#pragma unroll
            for (int q = 0; q < ALPHA / 16; ++q) {
                const uint4 v = __ldg((const uint4 *)(text + pos) + q);
                w[4 * q] = v.x; w[4 * q + 1] = v.y; w[4 * q + 2] = v.z; w[4 * q + 3] = v.w;
            }
        }
    } else {
#pragma unroll
        for (int q = 0; q < (ALPHA + 3) / 4; ++q) w[q] = 0;
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) {
            if (pos + i < n) w[i >> 2] |= (unsigned int)text[pos + i] << (8 * (i & 3));
        }
    }
}

template <int ALPHA>
__device__ __forceinline__ int char_at(const unsigned int (&w)[(ALPHA + 3) / 4], int i) {
    return (int)((w[i >> 2] >> (8 * (i & 3))) & 0xFFu);
}

// Hit compaction with one atomicAdd per warp (hits.cuh's protocol: a global
// counter hands out (row, end, distance) slots; the launcher reruns with room
// for all when they overflow). All 32 lanes call it together; a lane with
// `mine` hits gets slots [returned, returned + mine).
__device__ __forceinline__ unsigned long long warp_reserve(unsigned long long *count, unsigned int mine) {
    const int lane = threadIdx.x & (LANES - 1);
    unsigned int prefix = mine;  // inclusive prefix sum over the lanes
#pragma unroll
    for (int d = 1; d < LANES; d <<= 1) {
        const unsigned int left = __shfl_up_sync(FULL_MASK, prefix, d);
        if (lane >= d) prefix += left;
    }
    const unsigned int total = __shfl_sync(FULL_MASK, prefix, LANES - 1);
    unsigned long long first_slot = 0;
    if (lane == LANES - 1) first_slot = atomicAdd(count, (unsigned long long)total);
    return __shfl_sync(FULL_MASK, first_slot, LANES - 1) + (prefix - mine);
}

// Writes the hits at positions first + j for the set bits j of `positions` (end = position + 1).
__device__ __forceinline__ void write_hits(unsigned long long slot, unsigned long long capacity, int *out_row,
                                           long long *out_end, short *out_dist, int row, long long first,
                                           unsigned int positions, int distance) {
    while (positions) {
        const int j = __ffs(positions) - 1;
        positions &= positions - 1;
        if (slot < capacity) {
            out_row[slot] = row;
            out_end[slot] = first + j + 1;
            out_dist[slot] = (short)distance;
        }
        ++slot;
    }
}

// Bit j set when position first + j lies in the owned range [owned_lo, owned_hi).
template <int ALPHA>
__device__ __forceinline__ unsigned int owned_positions(long long first, long long owned_lo, long long owned_hi) {
    const unsigned int all = ALPHA >= 32 ? 0xffffffffu : ((1u << ALPHA) - 1);
    if (first >= owned_lo && first + ALPHA <= owned_hi) return all;
    unsigned int mask = 0;
    for (int j = 0; j < ALPHA; ++j) {
        if (first + j >= owned_lo && first + j < owned_hi) mask |= 1u << j;
    }
    return mask;
}

// ---------------------------------------------------------------------------
// The grid level and the text pipeline, shared by both scans
// ---------------------------------------------------------------------------

// Tiles whose text a thread keeps in flight in registers ahead of the one it
// works on: the loads of tile t + DEPTH are issued before tile t is processed.
// The exact scan does little work per tile, so it keeps more tiles in flight.
template <int ALPHA> struct ExactPrefetch { static constexpr int value = ALPHA >= 32 ? 2 : 4; };
#define WM_PREFETCH 2

// The halo before a block's segment, loaded by all threads at once into shared
// memory (the grid level's overlapping segments); returns its length.
__device__ __forceinline__ int load_halo(const unsigned char *text, long long segment_lo, int halo_length,
                                         unsigned char *halo) {
    const long long halo_lo = max(0LL, segment_lo - (long long)halo_length);
    const int length = (int)(segment_lo - halo_lo);
    for (int i = threadIdx.x; i < length; i += blockDim.x) halo[i] = text[halo_lo + i];
    return length;
}

// Runs `tile(chars, t)` for the tiles [first_tile, end_tile) of this thread's
// block, each with this thread's alpha characters of tile t, loaded DEPTH
// tiles earlier into a register ring (compile-time indices only). UNROLLED:
// the loop is unrolled DEPTH times so that the ring needs no moves (more
// registers); otherwise the ring rotates by register moves, the body once.
template <int ALPHA, int DEPTH, bool UNROLLED, typename TileFunction>
__device__ __forceinline__ void for_each_tile(const unsigned char *text, long long n, long long base, int tile_size,
                                              long long first_tile, long long end_tile, TileFunction tile) {
    constexpr int NWORDS = (ALPHA + 3) / 4;
    const long long thread_offset = (long long)threadIdx.x * ALPHA;
    unsigned int ring[DEPTH][NWORDS];
#pragma unroll
    for (int s = 0; s < DEPTH; ++s) {
        if (first_tile + s < end_tile) load_chars<ALPHA>(text, n, base + (first_tile + s) * tile_size + thread_offset, ring[s]);
    }
    if constexpr (UNROLLED) {
        for (long long t0 = first_tile; t0 < end_tile; t0 += DEPTH) {
#pragma unroll
            for (int s = 0; s < DEPTH; ++s) {
                const long long t = t0 + s;
                if (t >= end_tile) break;  // the same for the whole block
                unsigned int chars[NWORDS];
#pragma unroll
                for (int q = 0; q < NWORDS; ++q) chars[q] = ring[s][q];
                if (t + DEPTH < end_tile) load_chars<ALPHA>(text, n, base + (t + DEPTH) * tile_size + thread_offset, ring[s]);
                tile(chars, t);
            }
        }
    } else {
        for (long long t = first_tile; t < end_tile; ++t) {
            unsigned int chars[NWORDS];
#pragma unroll
            for (int q = 0; q < NWORDS; ++q) chars[q] = ring[0][q];
#pragma unroll
            for (int s = 0; s + 1 < DEPTH; ++s) {
#pragma unroll
                for (int q = 0; q < NWORDS; ++q) ring[s][q] = ring[s + 1][q];
            }
            if (t + DEPTH < end_tile) load_chars<ALPHA>(text, n, base + (t + DEPTH) * tile_size + thread_offset, ring[DEPTH - 1]);
            tile(chars, t);
        }
    }
}

// ---------------------------------------------------------------------------
// exact-shiftor-scan: Algorithm 1 in the tribrid scheme (Algorithm 3 + Fig. 4)
// ---------------------------------------------------------------------------

#define EXACT_WARPS 8
#define EXACT_HALO 64   // m - 1 <= 63 characters

template <typename Word, int ALPHA, bool WILDCARD, int NW = EXACT_WARPS, int DEPTH = ExactPrefetch<ALPHA>::value>
__device__ __forceinline__ void exact_scan(const unsigned char *text, long long n, const word64 *tables,
                                           const int *lengths, int row_offset, long long base,
                                           long long owned_lo, long long owned_hi, long long tiles,
                                           long long tiles_per_block, unsigned long long *count,
                                           unsigned long long capacity, int *out_row, long long *out_end,
                                           short *out_dist) {
    constexpr int W = Bits<Word>::value;
    constexpr int R = Replicas<Word>::value;
    constexpr int TILE = LANES * NW * ALPHA;
    constexpr int NWORDS = (ALPHA + 3) / 4;
    __shared__ Word warp_aggregate[2][NW];  // double-buffered by tile parity
    __shared__ Word tile_carry[2];          // exact state before the tile
    __shared__ unsigned char halo[EXACT_HALO];

    const int row = blockIdx.y + row_offset;
    const int m = lengths[row];
    const Word *table = fill_table<Word>(tables, row);
    const long long first_tile = (long long)blockIdx.x * tiles_per_block;
    const long long end_tile = min(first_tile + tiles_per_block, tiles);
    if (first_tile >= end_tile) return;  // the whole block leaves together
    const int lane = threadIdx.x & (LANES - 1), warp = threadIdx.x / LANES;
    const Word *lane_table = table + (lane & (R - 1));
    const int halo_length = load_halo(text, base + first_tile * TILE, m - 1, halo);
    __syncthreads();  // table and halo in shared memory

    // Grid level: the exact state before the segment, from its m - 1 characters
    // of halo (R_0 = 1^m at the start of the text, Eq. (1)).
    if (threadIdx.x == 0) {
        Word x = ~(Word)0;
        for (int i = 0; i < halo_length; ++i) x = (x << 1) | table[halo[i] * R];
        tile_carry[0] = x;
    }
    __syncthreads();

    for_each_tile<ALPHA, DEPTH, true>(
        text, n, base, TILE, first_tile, end_tile, [&](const unsigned int (&chars)[NWORDS], long long t) {
        const int parity = (int)((t - first_tile) & 1);
        const long long first = base + t * TILE + (long long)threadIdx.x * ALPHA;  // this thread's first character

        // Phase 1 (thread): sequential Shift-Or over alpha characters from the
        // identity <0, 0^w>: the local inclusive scans under dagger (Definition 1).
        Word x = 0;
        Word local[WILDCARD ? 1 : ALPHA];
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) {
            x = (x << 1) | lane_table[char_at<ALPHA>(chars, i) * R];
            if constexpr (!WILDCARD) local[i] = x;
        }
        // Phase 2 (warp): Hillis-Steele inclusive scan under dagger. The right
        // operand of step s covers alpha * 2^s characters, so
        // <u1, x1> dagger <u2, x2> = <u1 + u2, (x1 << u2) | x2> shifts by that constant.
#pragma unroll
        for (int s = 0; s < 5; ++s) {
            if ((ALPHA << s) < W) {
                const Word left = __shfl_up_sync(FULL_MASK, x, 1 << s);
                if (lane >= (1 << s)) x |= left << (ALPHA << s);
            }
        }
        // Block level: warp aggregates through shared memory (Algorithm 3, line 12:
        // add the left neighbour's last element).
        if (lane == LANES - 1) warp_aggregate[parity][warp] = x;
        __syncthreads();
        Word prefix = tile_carry[parity];  // exact state before this warp's first character
        for (int j = 0; j < warp; ++j) prefix = shl<Word>(prefix, LANES * ALPHA) | warp_aggregate[parity][j];
        const int covered = (lane + 1) * ALPHA;  // characters this lane's scan already holds
        if (covered < W) x |= prefix << covered;
        if (threadIdx.x == LANES * NW - 1) tile_carry[parity ^ 1] = x;

        unsigned int positions = 0;  // bit j: the pattern ends at position first + j
        if constexpr (WILDCARD) {
            // Fig. 5: bit m - 1 + i of the exact state at the last character says
            // whether the pattern ends i characters earlier.
            const Word ends = (~x >> (m - 1)) & low_bits<Word>(ALPHA);
            if (ends) {
                for (int i = 0; i < ALPHA; ++i) {
                    if ((ends >> i) & 1) positions |= 1u << (ALPHA - 1 - i);
                }
            }
        } else {
            // Phase 3 (Fig. 4): add the exact state before this thread to each local scan.
            Word before = __shfl_up_sync(FULL_MASK, x, 1);
            if (lane == 0) before = prefix;
            Word all = ~(Word)0;  // AND of the states: bit m - 1 clear if any ends here
#pragma unroll
            for (int i = 0; i < ALPHA; ++i) all &= shl<Word>(before, i + 1) | local[i];
            if (!((all >> (m - 1)) & 1)) {
#pragma unroll
                for (int i = 0; i < ALPHA; ++i) {
                    if (!(((shl<Word>(before, i + 1) | local[i]) >> (m - 1)) & 1)) positions |= 1u << i;
                }
            }
        }
        if (__any_sync(FULL_MASK, positions != 0)) {  // rare: one atomic for the warp's hits
            if (positions) positions &= owned_positions<ALPHA>(first, owned_lo, owned_hi);
            const unsigned long long slot = warp_reserve(count, __popc(positions));
            write_hits(slot, capacity, out_row, out_end, out_dist, row, first, positions, 0);
        }
    });
}

#define EXACT_ARGS                                                                                    \
    const unsigned char *text, long long n, const word64 *tables, const int *lengths, int row_offset, \
        long long base, long long owned_lo, long long owned_hi, long long tiles, long long tiles_per_block, \
        unsigned long long *count, unsigned long long capacity, int *out_row, long long *out_end, short *out_dist
#define EXACT_CALL text, n, tables, lengths, row_offset, base, owned_lo, owned_hi, tiles, tiles_per_block, \
                   count, capacity, out_row, out_end, out_dist

// Register budgets: 64 per thread with the wildcard (4 blocks of 8 warps per SM, each
// thread with 4 tiles of text in flight), 85 with phase 3 (its alpha local scans).
// A variant for alpha = 16 and 32, measured against the default by the benchmark:
// blocks of 4 warps (_nw4: half as many warps wait at each tile's barrier).
#define EXACT_VARIANTS(BITS, ALPHA)                                                                        \
    extern "C" __global__ void __launch_bounds__(LANES * 4, 8) exact_w##BITS##_a##ALPHA##_wildcard_nw4(EXACT_ARGS) { \
        exact_scan<word##BITS, ALPHA, true, 4>(EXACT_CALL);                                              \
    }                                                                                                  \
    extern "C" __global__ void __launch_bounds__(LANES * 4, 6) exact_w##BITS##_a##ALPHA##_phase3_nw4(EXACT_ARGS) { \
        exact_scan<word##BITS, ALPHA, false, 4>(EXACT_CALL);                                             \
    }

#define EXACT_KERNEL(BITS, ALPHA)                                                                          \
    extern "C" __global__ void __launch_bounds__(LANES * EXACT_WARPS, 4)                                   \
        exact_w##BITS##_a##ALPHA##_wildcard(EXACT_ARGS) {                                                  \
        exact_scan<word##BITS, ALPHA, true>(EXACT_CALL);                                                 \
    }                                                                                                  \
    extern "C" __global__ void __launch_bounds__(LANES * EXACT_WARPS, 3)                                   \
        exact_w##BITS##_a##ALPHA##_phase3(EXACT_ARGS) {                                                    \
        exact_scan<word##BITS, ALPHA, false>(EXACT_CALL);                                                \
    }

EXACT_KERNEL(32, 1)
EXACT_KERNEL(32, 2)
EXACT_KERNEL(32, 4)
EXACT_KERNEL(32, 8)
EXACT_KERNEL(32, 16)
EXACT_KERNEL(32, 32)
EXACT_KERNEL(64, 1)
EXACT_KERNEL(64, 2)
EXACT_KERNEL(64, 4)
EXACT_KERNEL(64, 8)
EXACT_KERNEL(64, 16)
EXACT_KERNEL(64, 32)
EXACT_VARIANTS(32, 16)
EXACT_VARIANTS(32, 32)
EXACT_VARIANTS(64, 16)
EXACT_VARIANTS(64, 32)

// ---------------------------------------------------------------------------
// edit-wm-scan: Algorithm 2 in the tribrid scheme
// ---------------------------------------------------------------------------
//
// Per tile, level 0 is the Shift-Or scan above (all positions exact, no
// wildcard); level d = 1..k scans the elements <1, <~N_j, M_j & N_j>> under
// double-dagger (Definitions 2-4, Theorem 6) with
// N_j = y_{d-1,j-1} & (y_{d-1,j-1} << 1) & (y_{d-1,j} << 1) (Algorithm 2, line 5).
// After each level's scan a thread knows the exact state before its first
// character and re-runs the level's recurrence (Eq. (2)) over its alpha
// characters, which gives the exact states every position needs for the next
// level. d(e) is the first level whose state at e has bit m - 1 clear.
// Blocks of 4 warps: each level synchronises the block once, and smaller
// blocks wait on fewer warps.

#define WM_WARPS 4
#define WM_HALO 128  // m + k - 1 <= 126 characters

// (x, y) of an aggregate applied to the state v: ((v << u) & ~x) | y (Definition 4).
template <typename Word>
__device__ __forceinline__ Word apply_pair(Word v, int u, Word x, Word y) {
    return (shl<Word>(v, u) & ~x) | y;
}

template <typename Word, int ALPHA>
__device__ __forceinline__ void wm_scan(const unsigned char *text, long long n, const word64 *tables,
                                        const int *lengths, int row_offset, int k, long long base,
                                        long long owned_lo, long long owned_hi, long long tiles,
                                        long long tiles_per_block, unsigned long long *count,
                                        unsigned long long capacity, int *out_row, long long *out_end,
                                        short *out_dist) {
    constexpr int W = Bits<Word>::value;
    constexpr int R = Replicas<Word>::value;
    constexpr int NW = WM_WARPS;
    constexpr int TILE = LANES * NW * ALPHA;
    constexpr int NWORDS = (ALPHA + 3) / 4;
    __shared__ Word aggregate_x[2][NW], aggregate_y[2][NW];  // double-buffered by scan round
    __shared__ Word tile_carry[2][WM_K_MAX + 1];             // exact states before the tile, per level
    __shared__ unsigned char halo[WM_HALO];

    const int row = blockIdx.y + row_offset;
    const int m = lengths[row];
    const Word *table = fill_table<Word>(tables, row);
    const long long first_tile = (long long)blockIdx.x * tiles_per_block;
    const long long end_tile = min(first_tile + tiles_per_block, tiles);
    if (first_tile >= end_tile) return;
    const int lane = threadIdx.x & (LANES - 1), warp = threadIdx.x / LANES;
    const Word *lane_table = table + (lane & (R - 1));
    const Word last_bit = (Word)1 << (m - 1);
    const int halo_length = load_halo(text, base + first_tile * TILE, m + k - 1, halo);
    __syncthreads();

    // Grid level: exact states of every level before the segment, by plain WM
    // (Eq. (2)) over its m + k - 1 characters of halo from R_{d,0} = 1^{m-d} 0^d.
    if (threadIdx.x == 0) {
        Word *states = tile_carry[0];
        for (int d = 0; d <= k; ++d) states[d] = shl<Word>(~(Word)0, d);
        for (int i = 0; i < halo_length; ++i) {
            const Word mask = table[halo[i] * R];
            Word previous_old = states[0];
            states[0] = (states[0] << 1) | mask;
            for (int d = 1; d <= k; ++d) {
                const Word old = states[d];
                states[d] = ((old << 1) | mask) & previous_old & (previous_old << 1) & (states[d - 1] << 1);
                previous_old = old;
            }
        }
    }
    __syncthreads();

    int round = 0;  // scans done by this block: picks the aggregate buffer
    for_each_tile<ALPHA, WM_PREFETCH, false>(
        text, n, base, TILE, first_tile, end_tile, [&](const unsigned int (&chars)[NWORDS], long long t) {
        const int parity = (int)((t - first_tile) & 1);
        const long long first = base + t * TILE + (long long)threadIdx.x * ALPHA;
        Word mask[ALPHA], state[ALPHA], n_mask[ALPHA];
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) mask[i] = lane_table[char_at<ALPHA>(chars, i) * R];
        unsigned int found = 0;  // positions whose distance is known (bit i: position first + i)
        Word before_previous_level = 0;

        for (int d = 0; d <= k; ++d, ++round) {
            const int buffer = round & 1;
            // Phase 1: local inclusive scan from the identity. Level 0: Shift-Or under
            // dagger (x only); level d: pairs under double-dagger.
            Word x = 0, y = 0;
            if (d == 0) {
#pragma unroll
                for (int i = 0; i < ALPHA; ++i) x = (x << 1) | mask[i];
            } else {
                Word left = before_previous_level;  // y_{d-1, j-1} for the first position
#pragma unroll
                for (int i = 0; i < ALPHA; ++i) {
                    n_mask[i] = left & (left << 1) & (state[i] << 1);  // Algorithm 2, line 5
                    left = state[i];
                    x = (x << 1) | ~n_mask[i];                        // line 7: <1, <~N, M & N>>
                    y = ((y << 1) | mask[i]) & n_mask[i];
                }
            }
            // Phase 2: warp scan (static shifts alpha * 2^s, as in exact_scan).
            if (d == 0) {
#pragma unroll
                for (int s = 0; s < 5; ++s) {
                    if ((ALPHA << s) < W) {
                        const Word left_x = __shfl_up_sync(FULL_MASK, x, 1 << s);
                        if (lane >= (1 << s)) x |= left_x << (ALPHA << s);
                    }
                }
            } else {
#pragma unroll
                for (int s = 0; s < 5; ++s) {
                    if ((ALPHA << s) < W) {
                        const int u = ALPHA << s;
                        const Word left_x = __shfl_up_sync(FULL_MASK, x, 1 << s);
                        const Word left_y = __shfl_up_sync(FULL_MASK, y, 1 << s);
                        if (lane >= (1 << s)) {  // Eq. (10): <x1, y1> <<_2 u, then (+) <x2, y2> (Eq. (9))
                            y = ((left_y << u) & ~x) | y;
                            x |= left_x << u;
                        }
                    }
                }
            }
            if (lane == LANES - 1) {
                aggregate_x[buffer][warp] = x;
                aggregate_y[buffer][warp] = y;
            }
            __syncthreads();
            // Block level: the exact state before this warp, then before this lane's end.
            Word prefix = tile_carry[parity][d];
            for (int j = 0; j < warp; ++j) {
                prefix = d == 0 ? shl<Word>(prefix, LANES * ALPHA) | aggregate_x[buffer][j]
                                : apply_pair<Word>(prefix, LANES * ALPHA, aggregate_x[buffer][j], aggregate_y[buffer][j]);
            }
            const int covered = (lane + 1) * ALPHA;
            Word inclusive = d == 0 ? (x | shl<Word>(prefix, covered)) : apply_pair<Word>(prefix, covered, x, y);
            if (threadIdx.x == LANES * NW - 1) tile_carry[parity ^ 1][d] = inclusive;
            Word before = __shfl_up_sync(FULL_MASK, inclusive, 1);
            if (lane == 0) before = prefix;

            // Phase 3: re-run level d from the exact state before this thread (Eq. (2)).
            Word z = before, all = ~(Word)0;
            if (d == 0) {
#pragma unroll
                for (int i = 0; i < ALPHA; ++i) { z = (z << 1) | mask[i]; state[i] = z; all &= z; }
            } else {
#pragma unroll
                for (int i = 0; i < ALPHA; ++i) { z = ((z << 1) | mask[i]) & n_mask[i]; state[i] = z; all &= z; }
            }
            before_previous_level = before;
            unsigned int positions = 0;  // positions reaching level d first: d(e) = d there
            if (!(all & last_bit)) {
#pragma unroll
                for (int i = 0; i < ALPHA; ++i) {
                    if (!(state[i] & last_bit)) positions |= 1u << i;
                }
                positions &= ~found;
                found |= positions;
            }
            if (__any_sync(FULL_MASK, positions != 0)) {  // rare: one atomic for the warp's hits
                if (positions) positions &= owned_positions<ALPHA>(first, owned_lo, owned_hi);
                const unsigned long long slot = warp_reserve(count, __popc(positions));
                write_hits(slot, capacity, out_row, out_end, out_dist, row, first, positions, d);
            }
        }
    });
}

#define WM_ARGS                                                                                       \
    const unsigned char *text, long long n, const word64 *tables, const int *lengths, int row_offset, \
        int k, long long base, long long owned_lo, long long owned_hi, long long tiles,              \
        long long tiles_per_block, unsigned long long *count, unsigned long long capacity, int *out_row, \
        long long *out_end, short *out_dist
#define WM_CALL text, n, tables, lengths, row_offset, k, base, owned_lo, owned_hi, tiles, tiles_per_block, \
                count, capacity, out_row, out_end, out_dist

#define WM_KERNEL(BITS, ALPHA)                                                                          \
    extern "C" __global__ void __launch_bounds__(LANES * WM_WARPS) wm_scan_w##BITS##_a##ALPHA(WM_ARGS) { \
        wm_scan<word##BITS, ALPHA>(WM_CALL);                                                          \
    }

WM_KERNEL(32, 1)
WM_KERNEL(32, 2)
WM_KERNEL(32, 4)
WM_KERNEL(32, 8)
WM_KERNEL(32, 16)
WM_KERNEL(64, 1)
WM_KERNEL(64, 2)
WM_KERNEL(64, 4)
WM_KERNEL(64, 8)
WM_KERNEL(64, 16)

// ---------------------------------------------------------------------------
// edit-wm-segmented: GBPR (each thread runs sequential Wu-Manber over its own
// segment of `segment` characters plus a halo of m + k - 1 before it), and
// the tiled GBPR (alpha > 1): the thread fetches alpha contiguous characters
// at a time and updates its states alpha times (Section 6, "tiled GBPR").
// The mask table is a plain 256-entry shared array, as in GBPR.
// ---------------------------------------------------------------------------

template <typename Word, int ALPHA>
__device__ __forceinline__ void wm_segmented(const unsigned char *text, long long n, const word64 *tables,
                                             const int *lengths, int row_offset, int k, long long owned_lo,
                                             long long owned_hi, long long segment, unsigned long long *count,
                                             unsigned long long capacity, int *out_row, long long *out_end,
                                             short *out_dist) {
    __shared__ Word table[CODES];
    const int row = blockIdx.y + row_offset;
    for (int c = threadIdx.x; c < CODES; c += blockDim.x) table[c] = (Word)tables[(long long)row * CODES + c];
    __syncthreads();
    const int m = lengths[row];
    const long long segment_lo = owned_lo + ((long long)blockIdx.x * blockDim.x + threadIdx.x) * segment;
    if (segment_lo >= owned_hi) return;
    const long long segment_hi = min(segment_lo + segment, owned_hi);
    long long p = max(0LL, segment_lo - (m + k - 1));
    p -= p % ALPHA;  // aligned fetches (text is 16-byte aligned)
    const Word last_bit = (Word)1 << (m - 1);

    Word states[SEGMENTED_K_MAX + 1];
#pragma unroll
    for (int d = 0; d <= SEGMENTED_K_MAX; ++d) states[d] = shl<Word>(~(Word)0, d);  // R_{d,0} = 1^{m-d} 0^d
    for (; p < segment_hi; p += ALPHA) {
        unsigned int chars[(ALPHA + 3) / 4];
        load_chars<ALPHA>(text, n, p, chars);
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) {
            const long long position = p + i;
            if (ALPHA > 1 && position >= segment_hi) break;
            const Word mask = table[char_at<ALPHA>(chars, i)];
            // Eq. (2), levels 0..k with compile-time indices (k <= SEGMENTED_K_MAX).
            Word previous_old = states[0];
            states[0] = (states[0] << 1) | mask;
            Word deepest = states[0];
#pragma unroll
            for (int d = 1; d <= SEGMENTED_K_MAX; ++d) {
                if (d > k) break;
                const Word old = states[d];
                states[d] = ((old << 1) | mask) & previous_old & (previous_old << 1) & (states[d - 1] << 1);
                previous_old = old;
                deepest = states[d];
            }
            if (!(deepest & last_bit) && position >= segment_lo) {
                int distance = 0;
#pragma unroll
                for (int d = SEGMENTED_K_MAX; d >= 0; --d) {
                    if (d <= k && !(states[d] & last_bit)) distance = d;
                }
                emit(count, capacity, out_row, out_end, out_dist, row, position + 1, distance);
            }
        }
    }
}

#define SEGMENTED_ARGS                                                                                  \
    const unsigned char *text, long long n, const word64 *tables, const int *lengths, int row_offset,   \
        int k, long long owned_lo, long long owned_hi, long long segment, unsigned long long *count,    \
        unsigned long long capacity, int *out_row, long long *out_end, short *out_dist
#define SEGMENTED_CALL text, n, tables, lengths, row_offset, k, owned_lo, owned_hi, segment, count, capacity, \
                       out_row, out_end, out_dist

#define SEGMENTED_KERNEL(BITS, ALPHA)                                                                   \
    extern "C" __global__ void __launch_bounds__(256) wm_segmented_w##BITS##_a##ALPHA(SEGMENTED_ARGS) {     \
        wm_segmented<word##BITS, ALPHA>(SEGMENTED_CALL);                                              \
    }

SEGMENTED_KERNEL(32, 1)
SEGMENTED_KERNEL(32, 4)
SEGMENTED_KERNEL(32, 8)
SEGMENTED_KERNEL(32, 16)
SEGMENTED_KERNEL(64, 1)
SEGMENTED_KERNEL(64, 4)
SEGMENTED_KERNEL(64, 8)
SEGMENTED_KERNEL(64, 16)
