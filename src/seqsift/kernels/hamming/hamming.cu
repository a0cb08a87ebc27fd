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
//   hamming_sliced_* (hamming-packed, 32 rows and more) one-hot text planes,
//                   32 window starts per thread, the mismatches of all 32
//                   counted at once by bit-sliced arithmetic (see below);
//   hamming_direct_* (hamming-packed, fewer rows) the same counting, with the
//                   planes built in registers straight from the text codes.
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

// ---- hamming-packed for a few rows: planes built in registers -------------
// With fewer than 32 rows no block-wide table pays off, and writing the
// planes to global memory (pack_planes) costs more than the search itself.
// Here the text codes are read once, in 16-byte loads, and every lane turns
// its codes into plane words in registers; then each row is counted over the
// lane's 32 window starts with the bit-sliced budget of hamming_sliced_*.
//
// Work: a warp takes `tiles_per_warp` consecutive tiles of 32 words (1,024
// characters). Lane L owns word q = first_word + 32 * tile + L, i.e. window
// starts 32q .. 32q + 31, whose windows (m <= 32, or m <= 64) reach into words
// q + 1 (and q + 2): lanes hand their words down the warp by shuffles, and the
// tile after the current one, loaded a step ahead, supplies lane 31 (and 30).
//
// Loads: the warp reads a tile as two coalesced 512-byte rows; lane L gets the
// 16 codes at 16L and the 16 at 512 + 16L (its two "pieces").
// Packing, per lane: two 32-bit words of four codes each become one word of
// eight 4-bit codes, z = x_a + (x_b << 4) (codes are below 8 here); code bit t
// of the eight is z & (0x11111111 << t), and one multiply by 0x01020408 >> t
// moves these eight bits, in text order, into the top byte: each lands on its
// own bit and every other partial product stays below bit 24 or passes bit
// 31, so nothing carries (cuda.py's emulate_direct redoes it bit for bit).
// Four top bytes make a lane's two 16-code pieces of bit t; two shuffles and
// a byte permute give lane L its own 32-code word. The one-hot planes follow
// from the code bits b0, b1, b2: A = ~b0 & ~b1 & ~b2, C = b0 & ~b1 & ~b2,
// G = ~b0 & b1 & ~b2, T = b0 & b1 & ~b2, so code 4 (N and every other byte)
// matches no base, nor do 5-7; bytes of 8 and more are clamped to 4 first.
// A tile without any code >= 4 (most tiles of a genome) skips b2.
//
// Rows: the launcher turns each row into a plan (cuda.py's direct_row_plans),
// its pattern offsets grouped by the plane they read: group 4h + b holds the
// offsets i of base b (A, C, G, T) with i >> 5 == h, group 8 every position
// whose mask is not a single base (IUPAC codes, N, 0), with its mask. An
// offset of a single-base group costs one funnel shift, and these offsets are
// read two at a time: a group holds pairs, and the odd offset left of a base
// joins group 8, which comes last and is often never reached (the budget does
// not depend on the order in which mismatches are spent).
#define DIRECT_THREADS 256
#define DIRECT_MAX_ROWS 32
#define PLAN_BYTES 160   // per row: [0] m, then where each group starts, its size, the offsets, the masks
#define PLAN_BEGIN 1     // 9 group starts in the offsets (even for groups 0-7)
#define PLAN_COUNT 10    // 9 group sizes: pairs of offsets for groups 0-7, offsets for group 8
#define PLAN_OFFSETS 20  // the 64 pattern offsets
#define PLAN_MASKS 84    // the mask of each offset (read for group 8 only)
#define TILE_CHARS 1024
#define AHEAD_LANES(WORDS) (2 * ((WORDS) - 1))  // lanes whose first piece makes a tile's first WORDS - 1 words
#define NEVER_CODES 0x04040404u
#define ALL_LANES 0xffffffffu

struct TileCodes {
    uint4 piece[2];  // this lane's codes at tile offsets 16L and 512 + 16L, four per 32-bit word
};

// An opaque copy of a loop invariant: the compiler keeps it in a register
// instead of recomputing it in every step.
__device__ __forceinline__ int pinned(int value) {
    asm volatile("" : "+r"(value));
    return value;
}

// The pieces of the tile at byte `at` where it passes the end of the text
// (codes there read as 4), or where only the first `lanes` lanes load their
// first piece (the tile after a warp's last one).
__device__ __noinline__ TileCodes load_tile_edge(const unsigned char *text, long long n, long long at, int lane,
                                                 int lanes) {
    TileCodes codes;
#pragma unroll
    for (int p = 0; p < 2; ++p) {
        const long long start = at + 512 * p + 16 * lane;
        unsigned int w[4] = {NEVER_CODES, NEVER_CODES, NEVER_CODES, NEVER_CODES};
        if (lane < lanes && (p == 0 || lanes == 32)) {
            if (start + 16 <= n) {
                const uint4 v = __ldg(reinterpret_cast<const uint4 *>(text + start));
                w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
            } else {
#pragma unroll
                for (int j = 0; j < 16; ++j) {
                    if (start + j < n) {
                        const unsigned int shift = 8 * (j & 3);
                        w[j >> 2] = (w[j >> 2] & ~(0xffu << shift)) | ((unsigned int)text[start + j] << shift);
                    }
                }
            }
        }
        codes.piece[p] = make_uint4(w[0], w[1], w[2], w[3]);
    }
    return codes;
}

// The same for a tile wholly inside the text, `row` pointing at this lane's
// first piece (text + tile start, as 16-byte vectors, + L).
template <int WORDS>
__device__ __forceinline__ TileCodes load_inside(const uint4 *row, int lane, bool whole) {
    TileCodes codes;
    const uint4 never = make_uint4(NEVER_CODES, NEVER_CODES, NEVER_CODES, NEVER_CODES);
    codes.piece[0] = (whole || lane < AHEAD_LANES(WORDS)) ? __ldg(row) : never;
    codes.piece[1] = whole ? __ldg(row + 32) : never;
    return codes;
}

struct Planes {
    unsigned int base[4];  // bit j: character j of the word is A, C, G, T
};

// Where lane L finds the pieces of its word: tile characters 32L .. 32L + 31
// are the first pieces of lanes 2L and 2L + 1 (L < 16) or their second pieces
// (L >= 16), taken by a byte permute.
struct LaneRoles {
    int low_source, high_source;
    unsigned int halves;
};

__device__ __forceinline__ LaneRoles lane_roles(int lane) {
    LaneRoles roles;
    roles.low_source = pinned((2 * lane) & 31);
    roles.high_source = pinned((2 * lane + 1) & 31);
    roles.halves = (unsigned int)pinned(lane < 16 ? 0x5410 : 0x7632);
    return roles;
}

// Code bit t of the lane's 32 codes (eight per z word): bits 0-15 the first
// piece, 16-31 the second, in text order.
__device__ __forceinline__ unsigned int piece_bits(const unsigned int z[4], int t) {
    unsigned int top[4];
#pragma unroll
    for (int g = 0; g < 4; ++g) top[g] = (z[g] & (0x11111111u << t)) * (0x01020408u >> t);
    return __byte_perm(__byte_perm(top[0], top[1], 0x0073), __byte_perm(top[2], top[3], 0x7300), 0x7610);
}

__device__ __forceinline__ unsigned int own_word(unsigned int pieces, const LaneRoles &roles) {
    const unsigned int low = __shfl_sync(ALL_LANES, pieces, roles.low_source);
    const unsigned int high = __shfl_sync(ALL_LANES, pieces, roles.high_source);
    return __byte_perm(low, high, roles.halves);
}

__device__ __forceinline__ Planes pack_tile(const TileCodes &codes, const LaneRoles &roles) {
    const unsigned int x[8] = {codes.piece[0].x, codes.piece[0].y, codes.piece[0].z, codes.piece[0].w,
                               codes.piece[1].x, codes.piece[1].y, codes.piece[1].z, codes.piece[1].w};
    const unsigned int seen = x[0] | x[1] | x[2] | x[3] | x[4] | x[5] | x[6] | x[7];
    const bool any_never = __any_sync(ALL_LANES, (seen & 0xfcfcfcfcu) != 0);  // a code >= 4 in the tile
    unsigned int z[4];  // eight codes each, one per 4-bit nibble
    if (any_never && (seen & 0xf8f8f8f8u) != 0) {
#pragma unroll
        for (int g = 0; g < 4; ++g) {  // bytes >= 8 read as 4
            z[g] = __vminu4(x[2 * g], NEVER_CODES) + (__vminu4(x[2 * g + 1], NEVER_CODES) << 4);
        }
    } else {
#pragma unroll
        for (int g = 0; g < 4; ++g) z[g] = x[2 * g] + (x[2 * g + 1] << 4);
    }
    const unsigned int b0 = own_word(piece_bits(z, 0), roles);
    const unsigned int b1 = own_word(piece_bits(z, 1), roles);
    const unsigned int b2 = any_never ? own_word(piece_bits(z, 2), roles) : 0u;
    Planes planes;
    planes.base[0] = ~b0 & ~b1 & ~b2;
    planes.base[1] = b0 & ~b1 & ~b2;
    planes.base[2] = ~b0 & b1 & ~b2;
    planes.base[3] = b0 & b1 & ~b2;
    return planes;
}

// Word q + shift of every lane (shift 1 or 2): that of lane L + shift of this
// tile, or of the following one.
__device__ __forceinline__ Planes words_ahead(const Planes &current, const Planes &following, int lane, int shift) {
    Planes ahead;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
        ahead.base[b] = __shfl_sync(ALL_LANES, lane < shift ? following.base[b] : current.base[b],
                                    (lane + shift) & 31);
    }
    return ahead;
}

// budget -= mismatch, bit-sliced over 32 windows; a borrow out of the top bit
// plane marks the window dead (more than k mismatches).
template <int BITS>
__device__ __forceinline__ void spend(unsigned int (&budget)[BITS], unsigned int &dead, unsigned int match) {
    unsigned int borrow = ~match;
#pragma unroll
    for (int b = 0; b < BITS; ++b) {
        const unsigned int next = borrow & ~budget[b];
        budget[b] ^= borrow;
        borrow = next;
    }
    dead |= borrow;
}

// Spend the mismatches of `pairs` pairs of offsets from `entry` (16-bit
// aligned) of one single-base group, whose plane words are (low, high); false
// once every window is dead. The funnel shift reads only the low 5 bits of its
// shift, so the first offset of a pair needs no extraction.
template <int BITS>
__device__ __forceinline__ bool spend_pairs(const unsigned char *entry, int pairs, unsigned int low,
                                            unsigned int high, unsigned int (&budget)[BITS], unsigned int &dead) {
    const unsigned short *pair = reinterpret_cast<const unsigned short *>(entry);
    for (const unsigned short *stop = pair + pairs; pair < stop; ++pair) {
        const unsigned int offsets = *pair;
        spend<BITS>(budget, dead, __funnelshift_r(low, high, offsets));
        spend<BITS>(budget, dead, __funnelshift_r(low, high, offsets >> 8));
        if (dead == ALL_LANES) return false;
    }
    return true;
}

template <int BITS, int WORDS>
__device__ __forceinline__ void direct_rows(const unsigned char *text, long long n, const unsigned char *plans,
                                            int rows, int k, long long owned_lo, long long owned_hi,
                                            long long first_word, long long tiles, int tiles_per_warp,
                                            unsigned long long *count, unsigned long long capacity,
                                            int *out_row, long long *out_end, short *out_dist) {
    __shared__ __align__(16) unsigned char plan[DIRECT_MAX_ROWS][PLAN_BYTES];
    __shared__ long long first_start[DIRECT_MAX_ROWS], last_start[DIRECT_MAX_ROWS];
    __shared__ long long interior_first, interior_last;  // starts that every row may report
    const unsigned int *plan_source = reinterpret_cast<const unsigned int *>(plans);
    for (int e = threadIdx.x; e < rows * (PLAN_BYTES / 4); e += blockDim.x) {
        reinterpret_cast<unsigned int *>(&plan[0][0])[e] = plan_source[e];
    }
    if (threadIdx.x == 0) {
        // Window starts row r may report: its last character owned, the window inside the text.
        long long most_first = 0, least_last = n;
        for (int r = 0; r < rows; ++r) {
            const int m = plans[r * PLAN_BYTES];
            first_start[r] = max(0LL, owned_lo + 1 - m);
            last_start[r] = min(owned_hi - m, n - m);
            most_first = max(most_first, first_start[r]);
            least_last = min(least_last, last_start[r]);
        }
        interior_first = most_first;
        interior_last = least_last;
    }
    __syncthreads();
    const int lane = pinned(threadIdx.x & 31);
    const LaneRoles roles = lane_roles(lane);
    const long long tile_begin = (((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5) * tiles_per_warp;
    if (tile_begin >= tiles) return;  // the whole warp
    // The warp's tiles are steps 0 .. steps - 1 from byte chunk_at; the first
    // words of step `steps` are read too. In a "fast" chunk all of these lie
    // inside the text (every chunk but the last one or two).
    const long long chunk_at = (first_word + 32 * tile_begin) * 32;
    const int steps = pinned((int)min((long long)tiles_per_warp, tiles - tile_begin));
    const bool fast = (n - chunk_at) / TILE_CHARS > steps;
    // Steps [interior_begin, interior_end) hold no window that a row may not report.
    const long long below = interior_first - chunk_at, above = interior_last - (TILE_CHARS - 1) - chunk_at;
    const int interior_begin =
        pinned(below <= 0 ? 0 : (int)min((long long)steps, (below + TILE_CHARS - 1) / TILE_CHARS));
    const int interior_end = pinned(above < 0 ? 0 : (int)min((long long)steps, above / TILE_CHARS + 1));
    const uint4 *lane_row = reinterpret_cast<const uint4 *>(text + chunk_at) + lane;  // its codes of step 0

    Planes current = pack_tile(fast ? load_inside<WORDS>(lane_row, lane, true)
                                    : load_tile_edge(text, n, chunk_at, lane, 32), roles);
    TileCodes ahead = fast ? load_inside<WORDS>(lane_row + 64, lane, 1 < steps)
                           : load_tile_edge(text, n, chunk_at + TILE_CHARS, lane,
                                            1 < steps ? 32 : AHEAD_LANES(WORDS));
    const uint4 *ahead_row = lane_row + 128;  // this lane's codes of step + 2
#pragma unroll 1
    for (int step = 0; step < steps; ++step, ahead_row += 64) {
        const Planes following = pack_tile(ahead, roles);
        if (fast && step + 2 < steps) {  // in flight while this tile is counted
            ahead.piece[0] = __ldg(ahead_row);
            ahead.piece[1] = __ldg(ahead_row + 32);
        } else if (step + 2 <= steps) {
            const bool whole = step + 2 < steps;
            ahead = fast ? load_inside<WORDS>(ahead_row, lane, whole)
                         : load_tile_edge(text, n, chunk_at + (step + 2) * (long long)TILE_CHARS, lane,
                                          whole ? 32 : AHEAD_LANES(WORDS));
        }
        const Planes next = words_ahead(current, following, lane, 1);
        const Planes next2 = WORDS == 3 ? words_ahead(current, following, lane, 2) : next;
        const bool interior = step >= interior_begin && step < interior_end;

        for (int r = 0; r < rows; ++r) {
            unsigned int dead = 0;  // windows past k mismatches, or not to be reported
            if (!interior) {
                const long long base = chunk_at + step * (long long)TILE_CHARS + 32 * lane;  // lane's first start
                const long long first = first_start[r], last = last_start[r];
                if (base > last || base + 31 < first) continue;
                if (first > base) dead = ~(ALL_LANES << (first - base));
                if (last < base + 31) dead |= ~((2u << (last - base)) - 1u);
            }
            unsigned int budget[BITS];
#pragma unroll
            for (int b = 0; b < BITS; ++b) budget[b] = ((k >> b) & 1) ? ALL_LANES : 0u;
            const unsigned char *offsets = plan[r] + PLAN_OFFSETS;
#pragma unroll
            for (int h = 0; h < WORDS - 1; ++h) {
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    // offset i: bit j of the shifted plane is character (lane's first start) + j + i
                    const int g = 4 * h + b;
                    if (!spend_pairs<BITS>(offsets + plan[r][PLAN_BEGIN + g], plan[r][PLAN_COUNT + g],
                                           h == 0 ? current.base[b] : next.base[b],
                                           h == 0 ? next.base[b] : next2.base[b], budget, dead)) {
                        goto row_done;
                    }
                }
            }
            {
                const unsigned char *entry = offsets + plan[r][PLAN_BEGIN + 8];
                for (const unsigned char *stop = entry + plan[r][PLAN_COUNT + 8]; entry < stop; ++entry) {
                    const int i = *entry;  // any mask: one base, several, or none
                    const unsigned int mask = entry[PLAN_MASKS - PLAN_OFFSETS];
                    unsigned int match = 0;
#pragma unroll
                    for (int b = 0; b < 4; ++b) {
                        if (mask & (1u << b)) {
                            match |= (WORDS == 3 && i >= 32) ? __funnelshift_r(next.base[b], next2.base[b], i)
                                                             : __funnelshift_r(current.base[b], next.base[b], i);
                        }
                    }
                    spend<BITS>(budget, dead, match);
                    if (dead == ALL_LANES) goto row_done;
                }
            }
            {
                const long long base = chunk_at + step * (long long)TILE_CHARS + 32 * lane;
                const int m = plan[r][0];
                unsigned int alive = ~dead;
                while (alive) {
                    const int j = __ffs(alive) - 1;
                    alive &= alive - 1;
                    int left = 0;
#pragma unroll
                    for (int b = 0; b < BITS; ++b) left |= ((budget[b] >> j) & 1) << b;
                    emit(count, capacity, out_row, out_end, out_dist, r, base + j + m, k - left);
                }
            }
        row_done:;
        }
        current = following;
    }
}

#define DIRECT_KERNEL(BITS, WORDS)                                                                              \
    extern "C" __global__ void __launch_bounds__(DIRECT_THREADS, 4) hamming_direct_##BITS##_##WORDS(            \
        const unsigned char *text, long long n, const unsigned char *plans, int rows, int k, long long owned_lo, \
        long long owned_hi, long long first_word, long long tiles, int tiles_per_warp, unsigned long long *count, \
        unsigned long long capacity, int *out_row, long long *out_end, short *out_dist) {                        \
        direct_rows<BITS, WORDS>(text, n, plans, rows, k, owned_lo, owned_hi, first_word, tiles, tiles_per_warp,  \
                                 count, capacity, out_row, out_end, out_dist);                                   \
    }
DIRECT_KERNEL(1, 2)
DIRECT_KERNEL(2, 2)
DIRECT_KERNEL(3, 2)
DIRECT_KERNEL(4, 2)
DIRECT_KERNEL(5, 2)
DIRECT_KERNEL(6, 2)
DIRECT_KERNEL(1, 3)
DIRECT_KERNEL(2, 3)
DIRECT_KERNEL(3, 3)
DIRECT_KERNEL(4, 3)
DIRECT_KERNEL(5, 3)
DIRECT_KERNEL(6, 3)
DIRECT_KERNEL(7, 3)

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
SLICED_KERNEL(7)
