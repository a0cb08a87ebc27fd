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
// The tribrid scheme (Section 4.4, Table 1), one pattern row per blockIdx.y:
//   grid   : overlapping segments, one per WARP. Warp g owns the tiles
//            [g * tiles_per_warp, ...) and starts a few tiles earlier (the
//            halo: at least w + k characters, after which every bit of every
//            state is exact whatever the state it started from); the halo's
//            hits are not reported. A tile is 32 lanes x alpha characters.
//   block  : by default none. Table 1 puts a disjoint segmented scan over the
//            warps of a block here (one __syncthreads per tile and level); on
//            the H100 that barrier costs 9-16% (benchmarks/README.md), so the
//            warps of a block are independent and share only the mask table.
//            The kernels ending in _block keep Table 1's block level
//            (BLOCK_SCAN): the block's warps then share one segment, each tile
//            being SCAN_WARPS x 32 lanes x alpha characters.
//   warp   : inclusive scan with shuffles (Hillis-Steele); the shift amount of
//            step s is the static alpha * 2^s, and steps stop once it reaches
//            the word size w (Section 4.3: older characters shift out). Tile
//            after tile, lane 31's state carries over to lane 0 (the disjoint
//            segmented scheme along the warp's segment).
//   thread : alpha contiguous characters (one 16-byte load for alpha = 16),
//            sequential bit-parallel Shift-Or from the identity <0, 0>
//            (algorithm cascading, Section 5.1, Fig. 4).
// The last addition (phase 3) is skipped when m <= w - alpha + 1 (the wildcard
// extension, Fig. 5): the exact state at a thread's last character then holds
// its alpha end bits at bits m - 1 ... m + alpha - 2. Wu-Manber gets the same
// extension for every level (see wm_scan): d(e) changes by at most 1 from one
// end to the next, so the trailing wildcards report d at the earlier ends.
// For k = 1-3 and m <= 32, edit-wm-scan runs alpha = w = 32 (wm_alpha_w): no
// scan steps are left, and for m <= 15 two 16-bit scans share each word.
//
// Hits go through warp_reserve (row, end, distance), in no order.
// Plain C types only: NVRTC (CuPy) compiles this file without standard headers.
#include "hits.cuh"

#define LANES 32
#define CODES 256
#define WM_K_MAX 63        // edit-wm-scan: levels 0..k kept in shared memory between tiles
#define SEGMENTED_K_MAX 8  // edit-wm-segmented: levels 0..k in registers
#define FULL_MASK 0xffffffffu
#define SCAN_WARPS 8       // warps per block of the scans (independent; they share the table)

typedef unsigned int word32;
typedef unsigned long long word64;

template <typename Word> struct Bits { static constexpr int value = 8 * (int)sizeof(Word); };

// x << u in F^w, 0 once u reaches the word size (Lemma 1 with the shifted-out bits gone).
template <typename Word>
__device__ __forceinline__ Word shl(Word x, int u) {
    return u < Bits<Word>::value ? (Word)(x << u) : (Word)0;
}

template <typename Word>
__device__ __forceinline__ Word low_bits(int count) {
    return count >= Bits<Word>::value ? ~(Word)0 : (((Word)1 << count) - 1);
}

// ---------------------------------------------------------------------------
// The mask table in shared memory, one copy per lane
// ---------------------------------------------------------------------------
// B[c] for lane l lives at byte c * 256 + l * sizeof(Word): every lane reads
// its own copy, so a warp's lookups never conflict on a bank whatever the text
// (a 64-bit word is served per half-warp either way). The 256-byte stride lets
// one byte permutation build the address: the text byte c becomes byte 1 and
// the lane's offset byte 0 (table_offset). 64 KB per block.
#define TABLE_STRIDE 256
extern __shared__ unsigned char shiftor_table[];

template <typename Word>
__device__ __forceinline__ void fill_table(const word64 *tables, int row) {
    for (int code = threadIdx.x; code < CODES; code += blockDim.x) {  // one global load per code
        const Word mask = (Word)tables[(long long)row * CODES + code];
        Word *copies = (Word *)(shiftor_table + code * TABLE_STRIDE);
#pragma unroll
        for (int lane = 0; lane < LANES; ++lane) copies[lane] = mask;
    }
}

// lane * sizeof(Word): this lane's column of the table (< 256: one byte).
template <typename Word>
__device__ __forceinline__ unsigned int lane_column() {
    return (threadIdx.x & (LANES - 1)) * (unsigned int)sizeof(Word);
}

// B[character i] for this lane, character i being byte i % 4 of chars[i / 4]:
// one PRMT (byte 0 <- the lane's column, byte 1 <- the character, bytes 2-3 <- 0)
// and one shared-memory load.
template <typename Word, int NWORDS>
__device__ __forceinline__ Word lookup(const unsigned int (&chars)[NWORDS], int i, unsigned int column) {
    const unsigned int offset = __byte_perm(chars[i >> 2], column, 0x5504u | ((unsigned int)(i & 3) << 4));
    return *(const Word *)(shiftor_table + offset);
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

// ---------------------------------------------------------------------------
// Hits
// ---------------------------------------------------------------------------

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

// Bit j set when position first + j lies in the reported range [report_lo, report_hi):
// bits [from, to), in closed form (a loop here gets if-converted into every tile).
template <int ALPHA>
__device__ __forceinline__ unsigned int owned_positions(long long first, long long report_lo, long long report_hi) {
    const int from = (int)min(max(report_lo - first, 0LL), (long long)ALPHA);
    const int to = (int)min(max(report_hi - first, 0LL), (long long)ALPHA);
    const unsigned int below_to = to >= 32 ? 0xffffffffu : ((1u << to) - 1);
    const unsigned int below_from = from >= 32 ? 0xffffffffu : ((1u << from) - 1);
    return below_to & ~below_from;
}

// Reports this lane's `positions` (bit j: an end at first + j + 1) at `distance`,
// those inside [report_lo, report_hi) only; all 32 lanes call it together.
template <int ALPHA>
__device__ __forceinline__ void report_warp_hits(unsigned int positions, long long first, long long report_lo,
                                                 long long report_hi, int row, int distance,
                                                 unsigned long long *count, unsigned long long capacity,
                                                 int *out_row, long long *out_end, short *out_dist) {
    if (__any_sync(FULL_MASK, positions != 0)) {  // rare: one atomic for the warp's hits
        if (positions) positions &= owned_positions<ALPHA>(first, report_lo, report_hi);
        const unsigned long long slot = warp_reserve(count, __popc(positions));
        write_hits(slot, capacity, out_row, out_end, out_dist, row, first, positions, distance);
    }
}

// Wildcard extension (Fig. 5): bits m - 1 ... m + alpha - 2 of the exact state at
// a lane's last character, clear (active) where the pattern ends 0 ... alpha - 1
// characters earlier; returned with bit j for the lane's character j.
template <typename Word, int ALPHA>
__device__ __forceinline__ unsigned int wildcard_ends(Word state, int m) {
    const unsigned int ends = (unsigned int)((~state >> (m - 1)) & low_bits<Word>(ALPHA));
    return __brev(ends) >> (32 - ALPHA);
}

// ---------------------------------------------------------------------------
// The grid level: a warp's segment and the text pipeline
// ---------------------------------------------------------------------------

// The tiles of this warp: [first_tile, end_tile) reported, from halo_tile on
// processed. Tiles are numbered from text position 0 (tile t starts at t * TILE),
// so a halo that reaches the text's start begins at tile 0 with the states of
// Eq. (1) and (2), exact there.
struct WarpSegment {
    long long halo_tile, first_tile, end_tile;
};

// GROUP warps share a segment: 1 (each warp its own) or the whole block (BLOCK_SCAN).
template <int TILE, int GROUP = 1>
__device__ __forceinline__ WarpSegment warp_segment(long long tile_lo, long long tile_hi, long long tiles_per_warp,
                                                    int halo_chars) {
    const long long warp_index = (long long)blockIdx.x * (blockDim.x / LANES) + threadIdx.x / LANES;
    WarpSegment segment;
    segment.first_tile = tile_lo + warp_index / GROUP * tiles_per_warp;
    segment.end_tile = min(segment.first_tile + tiles_per_warp, tile_hi);
    segment.halo_tile = max(0LL, segment.first_tile - (halo_chars + TILE - 1) / TILE);
    return segment;
}

// Tiles whose text a thread keeps in flight in registers ahead of the one it
// works on: the loads of tile t + DEPTH are issued before tile t is processed.
template <int ALPHA> struct Prefetch { static constexpr int value = ALPHA >= 32 ? 2 : 4; };
#define WM_PREFETCH 2  // Wu-Manber keeps alpha masks and states in registers besides (3 measured no faster)

// Runs `tile(chars, t)` for the tiles [first_tile, end_tile) of this warp's
// segment, each with this thread's alpha characters of tile t (text[t * TILE +
// thread_offset ...]), loaded DEPTH tiles earlier into a register ring
// (compile-time indices only: the loop is unrolled DEPTH times so that the ring
// needs no register moves). A tile is GROUP warps x 32 lanes x alpha characters.
// This thread's first character within a tile (GROUP warps x 32 lanes x alpha).
template <int ALPHA, int GROUP = 1>
__device__ __forceinline__ long long thread_offset() {
    return (long long)(threadIdx.x % (LANES * GROUP)) * ALPHA;
}

template <int ALPHA, int DEPTH, int GROUP = 1, typename TileFunction>
__device__ __forceinline__ void for_each_tile(const unsigned char *text, long long n, long long first_tile,
                                              long long end_tile, TileFunction tile) {
    constexpr int NWORDS = (ALPHA + 3) / 4;
    constexpr int TILE = LANES * GROUP * ALPHA;
    const long long lane_offset = thread_offset<ALPHA, GROUP>();
    unsigned int ring[DEPTH][NWORDS];
#pragma unroll
    for (int s = 0; s < DEPTH; ++s) {
        if (first_tile + s < end_tile) load_chars<ALPHA>(text, n, (first_tile + s) * TILE + lane_offset, ring[s]);
    }
    for (long long t0 = first_tile; t0 < end_tile; t0 += DEPTH) {
#pragma unroll
        for (int s = 0; s < DEPTH; ++s) {
            const long long t = t0 + s;
            if (t >= end_tile) break;  // the same for the whole warp
            unsigned int chars[NWORDS];
#pragma unroll
            for (int q = 0; q < NWORDS; ++q) chars[q] = ring[s][q];
            if (t + DEPTH < end_tile) load_chars<ALPHA>(text, n, (t + DEPTH) * TILE + lane_offset, ring[s]);
            tile(chars, t);
        }
    }
}

// Table 1's block level (BLOCK_SCAN), after the warps have put their aggregates
// (lane 31's scan, covering 32 x alpha characters) in shared memory and synchronised:
// the exact state before this warp's part of the tile (returned) and after the
// whole tile (after_tile), from the state before the tile. combine(v, j) applies
// warp j's aggregate to the state v.
template <typename Word, typename Combine>
__device__ __forceinline__ Word block_prefix(Word tile_carry, int warp, Word &after_tile, Combine combine) {
    Word state = tile_carry, prefix = tile_carry;
    for (int j = 0; j < SCAN_WARPS; ++j) {
        if (j == warp) prefix = state;
        state = combine(state, j);
    }
    after_tile = state;
    return prefix;
}

#define SCAN_ARGS                                                                                      \
    const unsigned char *text, long long n, const word64 *tables, const int *lengths, int row_offset,  \
        int k, long long owned_lo, long long owned_hi, long long tile_lo, long long tile_hi,           \
        long long tiles_per_warp, unsigned long long *count, unsigned long long capacity, int *out_row, \
        long long *out_end, short *out_dist
#define SCAN_CALL text, n, tables, lengths, row_offset, k, owned_lo, owned_hi, tile_lo, tile_hi, tiles_per_warp, \
                  count, capacity, out_row, out_end, out_dist

// ---------------------------------------------------------------------------
// exact-shiftor-scan: Algorithm 1 in the tribrid scheme (Algorithm 3 + Fig. 4)
// ---------------------------------------------------------------------------

template <typename Word, int ALPHA, bool WILDCARD, bool BLOCK_SCAN = false>
__device__ __forceinline__ void exact_scan(SCAN_ARGS) {
    constexpr int W = Bits<Word>::value;
    constexpr int GROUP = BLOCK_SCAN ? SCAN_WARPS : 1;  // warps sharing a segment
    constexpr int TILE = LANES * GROUP * ALPHA;
    constexpr int NWORDS = (ALPHA + 3) / 4;
    __shared__ Word warp_aggregate[BLOCK_SCAN ? 2 : 1][SCAN_WARPS];  // BLOCK_SCAN: by tile parity
    const int row = blockIdx.y + row_offset;
    const int m = lengths[row];
    fill_table<Word>(tables, row);
    __syncthreads();  // without BLOCK_SCAN, the block's only barrier
    const WarpSegment segment = warp_segment<TILE, GROUP>(tile_lo, tile_hi, tiles_per_warp, W);
    if (segment.first_tile >= segment.end_tile) return;  // the whole warp (block) leaves together
    const int lane = threadIdx.x & (LANES - 1), warp = threadIdx.x / LANES;
    const unsigned int column = lane_column<Word>();
    const long long report_lo = max(owned_lo, segment.first_tile * TILE);
    Word carry = ~(Word)0;  // exact state before the tile: R_0 = 1^m (Eq. (1)) at the halo's start

    for_each_tile<ALPHA, Prefetch<ALPHA>::value, GROUP>(
        text, n, segment.halo_tile, segment.end_tile, [&](const unsigned int (&chars)[NWORDS], long long t) {
        const long long first = t * TILE + thread_offset<ALPHA, GROUP>();  // this lane's first character

        // Phase 1 (thread): sequential Shift-Or over alpha characters from the
        // identity <0, 0^w>: the local inclusive scans under dagger (Definition 1).
        Word x = 0;
        Word local[WILDCARD ? 1 : ALPHA];
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) {
            x = (x << 1) | lookup<Word>(chars, i, column);
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
        // The state before this warp's part of the tile completes every lane's scan:
        // lane 31's one tile earlier, or with BLOCK_SCAN the block level's prefix.
        Word prefix = carry;
        if constexpr (BLOCK_SCAN) {
            const int parity = (int)(t & 1);
            if (lane == LANES - 1) warp_aggregate[parity][warp] = x;
            __syncthreads();
            prefix = block_prefix<Word>(carry, warp, carry, [&](Word v, int j) {
                return shl<Word>(v, LANES * ALPHA) | warp_aggregate[parity][j];  // dagger, Definition 1
            });
        }
        const int covered = (lane + 1) * ALPHA;  // characters this lane's scan already holds
        if (covered < W) x |= prefix << covered;
        Word before = __shfl_up_sync(FULL_MASK, x, 1);  // exact state before this lane
        if (lane == 0) before = prefix;
        if constexpr (!BLOCK_SCAN) carry = __shfl_sync(FULL_MASK, x, LANES - 1);
        if (t < segment.first_tile) return;  // the halo: states only

        unsigned int positions = 0;  // bit j: the pattern ends at position first + j
        if constexpr (WILDCARD) {
            positions = wildcard_ends<Word, ALPHA>(x, m);
        } else {
            // Phase 3 (Fig. 4): add the exact state before this thread to each local scan.
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
        report_warp_hits<ALPHA>(positions, first, report_lo, owned_hi, row, 0, count, capacity, out_row, out_end,
                                out_dist);
    });
}

// Blocks per SM the register budget aims at: 3 of 8 warps fit in shared memory
// (64 KB of table each; 4 would need 256 KB); 64-bit states take 2, so that
// alpha = 16 and 32 keep their states in registers.
#define MIN_BLOCKS_32 3
#define MIN_BLOCKS_64 2
#define EXACT_KERNEL_SCHEME(BITS, ALPHA, BLOCK_SCAN, SUFFIX)                                               \
    extern "C" __global__ void __launch_bounds__(LANES * SCAN_WARPS, MIN_BLOCKS_##BITS)                     \
        exact_w##BITS##_a##ALPHA##_wildcard##SUFFIX(SCAN_ARGS) {                                            \
        exact_scan<word##BITS, ALPHA, true, BLOCK_SCAN>(SCAN_CALL);                                       \
    }                                                                                                   \
    extern "C" __global__ void __launch_bounds__(LANES * SCAN_WARPS, MIN_BLOCKS_##BITS)                     \
        exact_w##BITS##_a##ALPHA##_phase3##SUFFIX(SCAN_ARGS) {                                              \
        exact_scan<word##BITS, ALPHA, false, BLOCK_SCAN>(SCAN_CALL);                                      \
    }
#define EXACT_KERNEL(BITS, ALPHA) EXACT_KERNEL_SCHEME(BITS, ALPHA, false, )
#define EXACT_KERNEL_BLOCK(BITS, ALPHA) EXACT_KERNEL_SCHEME(BITS, ALPHA, true, _block)

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
// Table 1's block level kept, for alpha = 16 and 32 (BLOCK_SCAN_ALPHAS in __init__.py)
EXACT_KERNEL_BLOCK(32, 16)
EXACT_KERNEL_BLOCK(32, 32)
EXACT_KERNEL_BLOCK(64, 16)
EXACT_KERNEL_BLOCK(64, 32)

// ---------------------------------------------------------------------------
// edit-wm-scan: Algorithm 2 in the tribrid scheme
// ---------------------------------------------------------------------------
//
// Per tile, level 0 is the Shift-Or scan above; level d = 1..k scans the
// elements <1, <~N_j, M_j & N_j>> under double-dagger (Definitions 2-4,
// Theorem 6) with N_j = y_{d-1,j-1} & (y_{d-1,j-1} << 1) & (y_{d-1,j} << 1)
// (Algorithm 2, line 5). After each level's scan a thread knows the exact
// state before its first character and re-runs the level's recurrence (Eq. (2))
// over its alpha characters (phase 3), which gives the exact states that the
// next level's N_j needs. d(e) is the first level whose state at e has bit
// m - 1 clear.
//
// The wildcard extension for Wu-Manber (WILDCARD, when m + alpha - 1 <= w):
// with the mask bits >= m zero, bit m - 1 + i of level d's state at position j
// is clear iff P followed by i wildcards ends at j within d differences, i.e.
// iff min over e of d(e) + |i - (j - e)| <= d. Since |d(e) - d(e + 1)| <= 1
// (one more or one fewer inserted text character), that minimum is d(j - i).
// So the exact state at a lane's last character gives every level's verdict on
// all alpha of its ends, the last level needs no phase 3, and no level tests
// bit m - 1 character by character.

// (x, y) of an aggregate applied to the state v: ((v << u) & ~x) | y (Definition 4).
template <typename Word>
__device__ __forceinline__ Word apply_pair(Word v, int u, Word x, Word y) {
    return (shl<Word>(v, u) & ~x) | y;
}

// The exact states before the tile, per level, that carry over from lane 31 of
// one tile to lane 0 of the next. K > 0 (k fixed when compiled, Section 5.2's
// complete unrolling): registers, every lane holding lane 31's value. K = 0
// (any k): this warp's row of a shared array.
template <typename Word, int K> struct LevelCarries {
    Word value[K + 1];
    __device__ __forceinline__ LevelCarries(Word *, int) {
#pragma unroll
        for (int d = 0; d <= K; ++d) value[d] = shl<Word>(~(Word)0, d);  // R_{d,0} = 1^{m-d} 0^d
    }
    __device__ __forceinline__ Word load(int d) const { return value[d]; }
    __device__ __forceinline__ void store(int d, Word inclusive) {
        value[d] = __shfl_sync(FULL_MASK, inclusive, LANES - 1);
    }
    __device__ __forceinline__ void set(int d, Word state) { value[d] = state; }  // every lane's own
};

template <typename Word> struct LevelCarries<Word, 0> {
    Word *value;
    __device__ __forceinline__ LevelCarries(Word *warp_row, int k) : value(warp_row) {
        for (int d = threadIdx.x & (LANES - 1); d <= k; d += LANES) value[d] = shl<Word>(~(Word)0, d);
        __syncwarp();
    }
    __device__ __forceinline__ Word load(int d) const { return value[d]; }
    __device__ __forceinline__ void store(int d, Word inclusive) {
        __syncwarp();  // every lane has read value[d]
        if ((threadIdx.x & (LANES - 1)) == LANES - 1) value[d] = inclusive;
        __syncwarp();
    }
    __device__ __forceinline__ void set(int d, Word state) {  // the same state in every lane
        __syncwarp();
        if ((threadIdx.x & (LANES - 1)) == 0) value[d] = state;
        __syncwarp();
    }
};

template <typename Word, int ALPHA, bool WILDCARD, int K, bool BLOCK_SCAN = false>
__device__ __forceinline__ void wm_scan(SCAN_ARGS) {
    constexpr int W = Bits<Word>::value;
    constexpr int GROUP = BLOCK_SCAN ? SCAN_WARPS : 1;  // warps sharing a segment
    constexpr int TILE = LANES * GROUP * ALPHA;
    constexpr int NWORDS = (ALPHA + 3) / 4;
    __shared__ Word level_carry[K > 0 ? 1 : SCAN_WARPS][K > 0 ? 1 : WM_K_MAX + 1];  // K = 0 only
    __shared__ Word aggregate_x[BLOCK_SCAN ? 2 : 1][SCAN_WARPS], aggregate_y[BLOCK_SCAN ? 2 : 1][SCAN_WARPS];

    if (K > 0) k = K;  // the launcher picks the kernel compiled for this k
    const int row = blockIdx.y + row_offset;
    const int m = lengths[row];
    fill_table<Word>(tables, row);
    __syncthreads();  // the block's only barrier
    const WarpSegment segment = warp_segment<TILE, GROUP>(tile_lo, tile_hi, tiles_per_warp, W + k);
    if (segment.first_tile >= segment.end_tile) return;
    const int lane = threadIdx.x & (LANES - 1), warp = threadIdx.x / LANES;
    const unsigned int column = lane_column<Word>();
    const long long report_lo = max(owned_lo, segment.first_tile * TILE);
    const Word last_bit = (Word)1 << (m - 1);
    LevelCarries<Word, K> carry(level_carry[K > 0 ? 0 : warp], k);
    int round = 0;  // BLOCK_SCAN: block-level scans done, for the aggregates' double buffer

    for_each_tile<ALPHA, WM_PREFETCH, GROUP>(
        text, n, segment.halo_tile, segment.end_tile, [&](const unsigned int (&chars)[NWORDS], long long t) {
        const long long first = t * TILE + thread_offset<ALPHA, GROUP>();
        const bool halo = t < segment.first_tile;  // states only, no hits
        Word mask[ALPHA], state[ALPHA];  // the masks M_j; the exact states of the level below
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) mask[i] = lookup<Word>(chars, i, column);
        unsigned int found = 0;  // ends whose distance is known (bit i: position first + i)
        Word before_previous_level = 0;

#pragma unroll (K > 0 ? K + 1 : 1)  // k fixed: levels unrolled, carries in registers
        for (int d = 0; d <= k; ++d) {
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
                    const Word n_mask = left & (left << 1) & (state[i] << 1);  // Algorithm 2, line 5
                    left = state[i];
                    x = (x << 1) | ~n_mask;                                   // line 7: <1, <~N, M & N>>
                    y = ((y << 1) | mask[i]) & n_mask;
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
            // The state before this warp's part of the tile completes the scan: the
            // exact state at this lane's last character, and before its first.
            Word prefix = carry.load(d);
            if constexpr (BLOCK_SCAN) {
                const int buffer = round++ & 1;
                if (lane == LANES - 1) {
                    aggregate_x[buffer][warp] = x;
                    aggregate_y[buffer][warp] = y;
                }
                __syncthreads();
                Word after_tile;
                prefix = block_prefix<Word>(prefix, warp, after_tile, [&](Word v, int j) {
                    return d == 0 ? shl<Word>(v, LANES * ALPHA) | aggregate_x[buffer][j]
                                  : apply_pair<Word>(v, LANES * ALPHA, aggregate_x[buffer][j], aggregate_y[buffer][j]);
                });
                carry.set(d, after_tile);
            }
            const int covered = (lane + 1) * ALPHA;
            const Word inclusive = d == 0 ? (x | shl<Word>(prefix, covered)) : apply_pair<Word>(prefix, covered, x, y);
            Word before = __shfl_up_sync(FULL_MASK, inclusive, 1);
            if (lane == 0) before = prefix;
            if constexpr (!BLOCK_SCAN) carry.store(d, inclusive);

            // Phase 3: re-run level d from the exact state before this thread (Eq. (2)):
            // the next level's N_j, and without the wildcard this level's ends.
            unsigned int positions = 0;  // ends within d differences
            if (!WILDCARD || d < k) {
                Word z = before, all = ~(Word)0;
                if (d == 0) {
#pragma unroll
                    for (int i = 0; i < ALPHA; ++i) { z = (z << 1) | mask[i]; state[i] = z; if (!WILDCARD) all &= z; }
                } else {  // N_j again (cheaper than keeping alpha of them in registers)
                    Word left = before_previous_level;
#pragma unroll
                    for (int i = 0; i < ALPHA; ++i) {
                        const Word n_mask = left & (left << 1) & (state[i] << 1);
                        left = state[i];
                        z = ((z << 1) | mask[i]) & n_mask;
                        state[i] = z;
                        if (!WILDCARD) all &= z;
                    }
                }
                if (!WILDCARD && !(all & last_bit)) {
#pragma unroll
                    for (int i = 0; i < ALPHA; ++i) {
                        if (!(state[i] & last_bit)) positions |= 1u << i;
                    }
                }
            }
            before_previous_level = before;
            if (halo) continue;
            if (WILDCARD) positions = wildcard_ends<Word, ALPHA>(inclusive, m);
            positions &= ~found;  // d(e) = d: the first level where e ends a match
            found |= positions;
            report_warp_hits<ALPHA>(positions, first, report_lo, owned_hi, row, d, count, capacity, out_row,
                                    out_end, out_dist);
        }
    });
}

// wm_scan_w{BITS}_a{ALPHA}_{wildcard,phase3}: any k; ..._k{K}: compiled for k = K;
// ..._block: any k, with Table 1's block level.
#define WM_KERNEL_SCHEME(BITS, ALPHA, ENDS, WILDCARD, K, BLOCK_SCAN, SUFFIX)                               \
    extern "C" __global__ void __launch_bounds__(LANES * SCAN_WARPS, MIN_BLOCKS_##BITS)                     \
        wm_scan_w##BITS##_a##ALPHA##_##ENDS##SUFFIX(SCAN_ARGS) {                                            \
        wm_scan<word##BITS, ALPHA, WILDCARD, K, BLOCK_SCAN>(SCAN_CALL);                                   \
    }
#define WM_KERNEL_K(BITS, ALPHA, ENDS, WILDCARD, K, SUFFIX) \
    WM_KERNEL_SCHEME(BITS, ALPHA, ENDS, WILDCARD, K, false, SUFFIX)
#define WM_KERNEL(BITS, ALPHA)                                    \
    WM_KERNEL_K(BITS, ALPHA, wildcard, true, 0, )                 \
    WM_KERNEL_K(BITS, ALPHA, phase3, false, 0, )
#define WM_KERNEL_FIXED(BITS, ALPHA, K)                           \
    WM_KERNEL_K(BITS, ALPHA, wildcard, true, K, _k##K)            \
    WM_KERNEL_K(BITS, ALPHA, phase3, false, K, _k##K)

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
// k = 1, 2, 3 with alpha = 8 and 16 (WM_FIXED_K and WM_FIXED_ALPHAS in __init__.py)
WM_KERNEL_FIXED(32, 8, 1)
WM_KERNEL_FIXED(32, 8, 2)
WM_KERNEL_FIXED(32, 8, 3)
WM_KERNEL_FIXED(32, 16, 1)
WM_KERNEL_FIXED(32, 16, 2)
WM_KERNEL_FIXED(32, 16, 3)
WM_KERNEL_FIXED(64, 8, 1)
WM_KERNEL_FIXED(64, 8, 2)
WM_KERNEL_FIXED(64, 8, 3)
WM_KERNEL_FIXED(64, 16, 1)
WM_KERNEL_FIXED(64, 16, 2)
WM_KERNEL_FIXED(64, 16, 3)
// Table 1's block level kept, alpha = 16, any k
WM_KERNEL_SCHEME(32, 16, wildcard, true, 0, true, _block)
WM_KERNEL_SCHEME(32, 16, phase3, false, 0, true, _block)
WM_KERNEL_SCHEME(64, 16, wildcard, true, 0, true, _block)
WM_KERNEL_SCHEME(64, 16, phase3, false, 0, true, _block)

// ---------------------------------------------------------------------------
// edit-wm-scan with alpha = w: 32 characters per lane, one 32-bit scan (m <= 32)
// or two 16-character halves per 32-bit word (m <= 15)
// ---------------------------------------------------------------------------
//
// On the H100 the scan above is bound by the integer ALU, not by memory: about
// 12 ALU instructions per character at k = 1 (Nsight Compute: ALU pipe 78-85%
// busy), against 5.5 per byte that the ALU can spend at the copy roof. Two
// changes cut that:
//   * alpha = w, so the scan needs no steps (Section 4.3: a lane's alpha
//     characters shift out every older bit): the exact state at the end of a
//     lane's characters is its local scan (phase 1), at level 0 and, given the
//     exact N_j, at every level (the pair <~X, Y> applied to any v gives Y,
//     v << w being 0), so phase 1 needs no X. A lane starts from the end of the
//     lane before (a shuffle), lane 0 from lane 31 of the previous tile.
//   * For m <= 15, two scans in one word (SIMD within a register, SPLIT = 2):
//     each lane's 32 characters are two halves of 16 (A: the first 16, B: the
//     next 16); every state word holds half A's 16-bit state in bits 0-15 and
//     half B's in bits 16-31, so each logical operation advances two
//     characters. Half B starts where half A ends (in the same word). Bit 15 is
//     kept 0 ("active") at level 0 by masking it each step, so shifting left
//     moves a 0 into bit 16, as a shift of half B alone would; N_j then has bit
//     15 clear, so every level keeps bit 15 clear. That costs one pattern
//     position: m <= 15. Both halves' masks come from one table row: B[c] at
//     the lane's column and B[c] << 16 128 bytes further (fill_half_tables).
// Hits: the AND of the last level's states over the steps flags a lane with an
// end; then (rarely) the lane re-runs plain Wu-Manber over its characters.

#define HALF_MASK 0x7fff7fffu  // bits 15 and 31 forced active (0)

__device__ __forceinline__ void fill_half_tables(const word64 *tables, int row) {
    for (int code = threadIdx.x; code < CODES; code += blockDim.x) {
        const word32 mask = (word32)tables[(long long)row * CODES + code] & 0xffffu;
        word32 *copies = (word32 *)(shiftor_table + code * TABLE_STRIDE);
#pragma unroll
        for (int lane = 0; lane < LANES; ++lane) {
            copies[lane] = mask;
            copies[LANES + lane] = mask << 16;
        }
    }
}

// Both halves' masks of step i: characters i (half A) and 16 + i (half B).
__device__ __forceinline__ word32 half_masks(const unsigned int (&chars)[8], int i, unsigned int column) {
    const unsigned int offset_a = __byte_perm(chars[i >> 2], column, 0x5504u | ((unsigned int)(i & 3) << 4));
    const unsigned int offset_b = __byte_perm(chars[4 + (i >> 2)], column, 0x5504u | ((unsigned int)(i & 3) << 4));
    return *(const word32 *)(shiftor_table + offset_a) + *(const word32 *)(shiftor_table + LANES * 4 + offset_b);
}

// The exact states before each half, packed, from the exact states at their ends:
// half B starts where half A ends; half A where half B of the lane before ends.
__device__ __forceinline__ word32 half_starts(word32 ends, word32 tile_carry, int lane) {
    word32 before_a = __shfl_up_sync(FULL_MASK, ends >> 16, 1);
    if (lane == 0) before_a = tile_carry;
    return before_a | (ends << 16);
}

// Rare (some lane of the warp has an end): the lane re-runs plain Wu-Manber (Eq. (2))
// over its 32 characters from m + K characters before them (or from the text's
// start, with the states of Eq. (2)), reading the text again (cached), so that the
// hot loop keeps no extra state for it. d(e) = the first level active at e; bit i
// of a level's positions: character i of the lane.
template <int K>
__device__ __forceinline__ void lane_rescan(const unsigned char *text, long long n, long long first, int m,
                                              bool lane_has_ends, long long report_lo, long long report_hi, int row,
                                              unsigned int column, unsigned long long *count,
                                              unsigned long long capacity, int *out_row, long long *out_end,
                                              short *out_dist) {
    unsigned int positions[K + 1];
    word32 states[K + 1];
#pragma unroll
    for (int d = 0; d <= K; ++d) {
        positions[d] = 0;
        states[d] = ~0u << d;  // R_{d,0} = 1^{m-d} 0^d
    }
    const word32 last_bit = 1u << (m - 1);
    const long long start = lane_has_ends ? max(0LL, first - (m + K)) : first + 32;
    for (long long p = start; p < min(first + 32, n); ++p) {
        const word32 mask = *(const word32 *)(shiftor_table + (unsigned int)text[p] * TABLE_STRIDE + column);
        word32 previous_old = states[0];
        states[0] = (states[0] << 1) | mask;
#pragma unroll
        for (int d = 1; d <= K; ++d) {
            const word32 old = states[d];
            states[d] = ((old << 1) | mask) & previous_old & (previous_old << 1) & (states[d - 1] << 1);
            previous_old = old;
        }
        if (p >= first) {
            bool known = false;
#pragma unroll
            for (int d = 0; d <= K; ++d) {
                if (!known && !(states[d] & last_bit)) {
                    positions[d] |= 1u << (p - first);
                    known = true;
                }
            }
        }
    }
#pragma unroll
    for (int d = 0; d <= K; ++d) {
        report_warp_hits<32>(positions[d], first, report_lo, report_hi, row, d, count, capacity, out_row, out_end,
                             out_dist);
    }
}

// How a 32-bit state word holds a lane's 32 characters: one scan of 32 (SPLIT = 1,
// w = 32, m <= 32) or two scans of 16 side by side (SPLIT = 2, w = 16, m <= 15).
template <int SPLIT> struct WordSplit;

template <> struct WordSplit<1> {
    static constexpr int STEPS = 32;             // characters per scan and lane
    static constexpr word32 LEVEL0_KEEP = ~0u;
    static __device__ __forceinline__ void fill(const word64 *tables, int row) { fill_table<word32>(tables, row); }
    static __device__ __forceinline__ word32 masks(const unsigned int (&chars)[8], int i, unsigned int column) {
        return lookup<word32>(chars, i, column);
    }
    static __device__ __forceinline__ word32 starts(word32 ends, word32 tile_carry, int lane) {
        const word32 before = __shfl_up_sync(FULL_MASK, ends, 1);
        return lane == 0 ? tile_carry : before;
    }
    static __device__ __forceinline__ word32 carry(word32 ends) { return __shfl_sync(FULL_MASK, ends, LANES - 1); }
    static __device__ __forceinline__ word32 initial(int d) { return ~0u << d; }  // R_{d,0} = 1^{m-d} 0^d
    static __device__ __forceinline__ word32 end_bits(int m) { return 1u << (m - 1); }
};

template <> struct WordSplit<2> {
    static constexpr int STEPS = 16;
    static constexpr word32 LEVEL0_KEEP = HALF_MASK;
    static __device__ __forceinline__ void fill(const word64 *tables, int row) { fill_half_tables(tables, row); }
    static __device__ __forceinline__ word32 masks(const unsigned int (&chars)[8], int i, unsigned int column) {
        return half_masks(chars, i, column);
    }
    static __device__ __forceinline__ word32 starts(word32 ends, word32 tile_carry, int lane) {
        return half_starts(ends, tile_carry, lane);
    }
    static __device__ __forceinline__ word32 carry(word32 ends) {
        return __shfl_sync(FULL_MASK, ends >> 16, LANES - 1);  // lane 31's half B
    }
    static __device__ __forceinline__ word32 initial(int d) { return (0xffffu << d) & 0x7fffu; }
    static __device__ __forceinline__ word32 end_bits(int m) { return (1u << (m - 1)) | (1u << (m + 15)); }
};

template <int K, int SPLIT>
__device__ __forceinline__ void wm_alpha_w(SCAN_ARGS) {
    using Split = WordSplit<SPLIT>;
    constexpr int ALPHA = 32, TILE = LANES * ALPHA, STEPS = Split::STEPS;
    const int row = blockIdx.y + row_offset;
    const int m = lengths[row];
    Split::fill(tables, row);
    __syncthreads();  // the block's only barrier
    const WarpSegment segment = warp_segment<TILE>(tile_lo, tile_hi, tiles_per_warp, STEPS + K);
    if (segment.first_tile >= segment.end_tile) return;
    const int lane = threadIdx.x & (LANES - 1);
    const unsigned int column = lane_column<word32>();
    const long long report_lo = max(owned_lo, segment.first_tile * TILE);
    const word32 end_bits = Split::end_bits(m);  // bit m - 1 of each scan
    word32 carry[K + 1];  // exact states before the tile (lane 31's last scan), per level
#pragma unroll
    for (int d = 0; d <= K; ++d) carry[d] = Split::initial(d);

    for_each_tile<ALPHA, 2>(
        text, n, segment.halo_tile, segment.end_tile, [&](const unsigned int (&chars)[8], long long t) {
        word32 mask[STEPS], state[STEPS], before[K + 1];
#pragma unroll
        for (int i = 0; i < STEPS; ++i) mask[i] = Split::masks(chars, i, column);
        word32 all = ~0u;  // AND of the last level's states: an end of the pattern clears end_bits

#pragma unroll
        for (int d = 0; d <= K; ++d) {
            // Phase 1: the local scan from 0, which is the exact end state.
            word32 ends = 0;
            if (d == 0) {
#pragma unroll
                for (int i = 0; i < STEPS; ++i) ends = ((ends << 1) | mask[i]) & Split::LEVEL0_KEEP;
            } else {
                word32 left = before[d - 1];
#pragma unroll
                for (int i = 0; i < STEPS; ++i) {
                    const word32 n_mask = left & (left << 1) & (state[i] << 1);  // Algorithm 2, line 5
                    left = state[i];
                    state[i] = n_mask;  // the level below is no longer needed: keep N_j
                    ends = ((ends << 1) | mask[i]) & n_mask;
                }
            }
            before[d] = Split::starts(ends, carry[d], lane);
            carry[d] = Split::carry(ends);
            // Phase 3: the exact states, for the next level's N_j (or this level's ends).
            word32 z = before[d];
#pragma unroll
            for (int i = 0; i < STEPS; ++i) {
                z = d == 0 ? ((z << 1) | mask[i]) & Split::LEVEL0_KEEP : ((z << 1) | mask[i]) & state[i];
                if (d < K) state[i] = z;
                else all &= z;
            }
        }
        if (t < segment.first_tile) return;  // the halo: states only
        const long long first = t * TILE + (long long)lane * ALPHA;
        const bool ends_here = (all & end_bits) != end_bits;
        if (!__any_sync(FULL_MASK, ends_here)) return;

        lane_rescan<K>(text, n, first, m, ends_here, report_lo, owned_hi, row, column, count, capacity, out_row,
                       out_end, out_dist);
    });
}

// wm_scan_w32_a32_k{K}: one 32-bit scan (m <= 32; its 32 masks and states take
// registers for 2 blocks per SM); wm_scan_w16x2_a32_k{K}: two 16-bit scans (m <= 15).
#define WM_ALPHA_W_KERNELS(K)                                                                               \
    extern "C" __global__ void __launch_bounds__(LANES * SCAN_WARPS, 2) wm_scan_w32_a32_k##K(SCAN_ARGS) {   \
        wm_alpha_w<K, 1>(SCAN_CALL);                                                                      \
    }                                                                                                   \
    extern "C" __global__ void __launch_bounds__(LANES * SCAN_WARPS, MIN_BLOCKS_32)                         \
        wm_scan_w16x2_a32_k##K(SCAN_ARGS) {                                                                 \
        wm_alpha_w<K, 2>(SCAN_CALL);                                                                      \
    }
WM_ALPHA_W_KERNELS(1)
WM_ALPHA_W_KERNELS(2)
WM_ALPHA_W_KERNELS(3)


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
