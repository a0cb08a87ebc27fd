// The q-gram filter of threshold screening (issue 26): which pairs may reach a score T, exactly.
//
//   sw_qgram_tiles  an all-vs-all tile, every x against every y: one block per y (and chunk of xs)
//   sw_qgram_pairs  a list of pairs, x[p] against y[p]: one warp per pair
//
// Both write first[p], last[p]: the first and the last bin b of pair p whose bins b and b + 1 (of
// 2^width_shift diagonals each; diagonal j - i + len x - q, so that every one is >= 0) hold `need` q-gram
// hits between them, or -1 and -1 where none does, which proves the pair's score below T. An alignment
// that reaches T lies on the diagonals of bins first..last + 1 (kernels/sw/__init__.py, QgramWindows).
// Why that is exact, and how q, the bins and `need` are chosen: kernels/sw/__init__.py, QgramFilter (the
// q-gram lemma of Jokinen and Ukkonen 1991, counted on diagonal strips as SWIFT does: Rasmussen, Stoye
// and Myers 2006). kernels/sw/cpu.py's qgram_filter is the same count on CPU cores.
//
// A sequence's index: a bucket per q-gram word (2 bits a base; no q-gram holding N, code 4) in shared
// memory, heads[4^q] (u32) then positions[] (u16); each warp counts a pair's hits in its own bins[]
// (u32, shared atomics; bin_cap a multiple of 4, at least 4 past the most bins a pair has). The tiles
// kernel indexes its block's y once, and each warp walks its xs' q-grams (a lane per position) through
// y's buckets: a few hundred lookups a pair. The pairs kernel indexes x
// (the shorter side) per warp and walks y, 32 positions at a time, each lane reading one code
// (coalesced) and its q-gram's word made from its neighbours' codes by shuffles.
// Plain C types only (NVRTC compiles this file without the C++ standard headers; nvcc -arch=sm_90 too).

typedef unsigned int u32;
#define QG_FULL 0xffffffffu

// The word of s[at:at + q] (2 bits a base), and whether it holds no N.
__device__ __forceinline__ bool qg_word(const unsigned char *s, int at, int q, u32 *word) {
    u32 w = 0;
    bool clean = true;
    for (int c = 0; c < q; ++c) {
        const u32 b = s[at + c];
        clean = clean && b < 4;
        w = (w << 2) | (b & 3u);
    }
    *word = w;
    return clean;
}

// Index s[0:length] in heads/positions: counts per word, exclusive prefix sums, then each position at its
// bucket's next slot; afterwards heads[w] is where bucket w ends and bucket w + 1 begins. BLOCK: the
// whole block builds it (rank = threadIdx.x), else one warp (rank = lane); the prefix sums are the first
// warp's either way (words / 32 per lane, q >= 3).
template <bool BLOCK>
__device__ __forceinline__ void qg_index(const unsigned char *s, int length, int q, u32 *heads,
                                         unsigned short *positions) {
    const int words = 1 << (2 * q);
    const int rank = BLOCK ? (int)threadIdx.x : (int)(threadIdx.x & 31);
    const int stride = BLOCK ? (int)blockDim.x : 32;
    for (int w = rank; w < words; w += stride) heads[w] = 0;
    if (BLOCK) __syncthreads(); else __syncwarp();
    for (int i = rank; i + q <= length; i += stride) {
        u32 word;
        if (qg_word(s, i, q, &word)) atomicAdd(&heads[word], 1u);
    }
    if (BLOCK) __syncthreads(); else __syncwarp();
    if (rank < 32) {
        const int lane = rank, per_lane = words / 32;
        u32 lane_total = 0;
        for (int k = 0; k < per_lane; ++k) lane_total += heads[lane * per_lane + k];
        u32 inclusive = lane_total;
        for (int offset = 1; offset < 32; offset <<= 1) {
            const u32 v = __shfl_up_sync(QG_FULL, inclusive, offset);
            if (lane >= offset) inclusive += v;
        }
        u32 running = inclusive - lane_total;
        for (int k = 0; k < per_lane; ++k) {
            const u32 count = heads[lane * per_lane + k];
            heads[lane * per_lane + k] = running;
            running += count;
        }
    }
    if (BLOCK) __syncthreads(); else __syncwarp();
    for (int i = rank; i + q <= length; i += stride) {
        u32 word;
        if (qg_word(s, i, q, &word)) positions[atomicAdd(&heads[word], 1u)] = (unsigned short)i;
    }
    if (BLOCK) __syncthreads(); else __syncwarp();
}

// bins[0:bin_count] = 0 by the warp, four a store (bins 16-byte aligned, room for a multiple of 4).
__device__ __forceinline__ void qg_clear_bins(u32 *bins, int bin_count) {
    uint4 *quads = (uint4 *)bins;
    for (int k = threadIdx.x & 31; 4 * k < bin_count; k += 32) quads[k] = make_uint4(0u, 0u, 0u, 0u);
    __syncwarp();
}

// The warp's first and last passing bin of bins[0:bin_count], written by lane 0 at out (then the bins may
// be cleared). A lane reads four bins at a time, and the one after them (bin_cap >= bin_count + 4).
__device__ __forceinline__ void qg_passing_bins(const u32 *bins, int bin_count, int need, int *first, int *last,
                                                long long out) {
    const int lane = threadIdx.x & 31;
    const uint4 *quads = (const uint4 *)bins;
    int lo = 0x7fffffff, hi = -1;
    for (int k = lane; 4 * k + 1 < bin_count; k += 32) {
        const uint4 v = quads[k];
        const u32 after = bins[4 * k + 4];
        const u32 sums[4] = {v.x + v.y, v.y + v.z, v.z + v.w, v.w + after};
        for (int r = 0; r < 4; ++r) {
            if (4 * k + r + 1 < bin_count && sums[r] >= (u32)need) {
                lo = min(lo, 4 * k + r);
                hi = 4 * k + r;
            }
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        lo = min(lo, __shfl_xor_sync(QG_FULL, lo, offset));
        hi = max(hi, __shfl_xor_sync(QG_FULL, hi, offset));
    }
    if (lane == 0) {
        first[out] = hi < 0 ? -1 : lo;
        last[out] = hi;
    }
    __syncwarp();
}

// Tiles: block (bx, by) indexes y[by] (and every gridDim.y-th y after it), then its warps take the xs of
// chunk bx, x_per_block of them, one at a time. Shared: heads[4^q], bins[warps][bin_cap], positions[y_cap].
extern "C" __global__ void sw_qgram_tiles(const unsigned char *codes, const long long *x_start, const int *x_len,
                                          long long x_count, const long long *y_start, const int *y_len,
                                          long long y_count, int x_per_block, int q, int width_shift, int need,
                                          int bin_cap, int *first, int *last) {
    extern __shared__ __align__(16) u32 qg_shared[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int words = 1 << (2 * q);
    u32 *heads = qg_shared;
    u32 *bins = qg_shared + words + warp * bin_cap;
    unsigned short *positions = (unsigned short *)(qg_shared + words + warps * bin_cap);
    const long long x_first = (long long)blockIdx.x * x_per_block;
    const long long x_end = min(x_count, x_first + x_per_block);
    for (long long yi = blockIdx.y; yi < y_count; yi += gridDim.y) {
        const int n = y_len[yi];
        qg_index<true>(codes + y_start[yi], n, q, heads, positions);
        for (long long xi = x_first + warp; xi < x_end; xi += warps) {
            const unsigned char *x = codes + x_start[xi];
            const int m = x_len[xi];
            const int bin_count = ((n + m) >> width_shift) + 2;
            qg_clear_bins(bins, bin_count);
            for (int i = lane; i + q <= m; i += 32) {   // x's q-gram at i, through y's bucket of its word
                u32 word;
                if (qg_word(x, i, q, &word)) {
                    const u32 bucket_end = heads[word];
                    for (u32 e = word ? heads[word - 1] : 0u; e < bucket_end; ++e)
                        atomicAdd(&bins[((int)positions[e] - i + m - q) >> width_shift], 1u);
                }
            }
            __syncwarp();
            qg_passing_bins(bins, bin_count, need, first, last, xi * y_count + yi);
        }
        __syncthreads();   // every warp is done with this y's index before the next y's is built
    }
}

// Pairs: warp w of block b takes pair p = b * warps + w. Shared per warp: heads[4^q], bins[bin_cap],
// positions[x_cap] (x_cap rounded up to a multiple of 8).
extern "C" __global__ void sw_qgram_pairs(const unsigned char *codes, const long long *x_start, const int *x_len,
                                          const long long *y_start, const int *y_len, long long count, int q,
                                          int width_shift, int need, int x_cap, int bin_cap, int *first,
                                          int *last) {
    extern __shared__ __align__(16) u32 qg_shared[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int words = 1 << (2 * q);
    const int position_words = ((x_cap + 7) >> 3) << 2;   // x_cap u16, a multiple of 4 words: bins stay aligned
    u32 *heads = qg_shared + (long long)warp * (words + bin_cap + position_words);
    u32 *bins = heads + words;
    unsigned short *positions = (unsigned short *)(bins + bin_cap);
    const long long p = (long long)blockIdx.x * (blockDim.x >> 5) + warp;
    if (p >= count) return;   // the whole warp: nothing below syncs the block
    const int m = x_len[p];
    qg_index<false>(codes + x_start[p], m, q, heads, positions);
    const unsigned char *y = codes + y_start[p];
    const int n = y_len[p];
    const int bin_count = ((n + m) >> width_shift) + 2;
    qg_clear_bins(bins, bin_count);
    // lane l takes position j = base + l; the codes of j + 1 .. j + q - 1 come from the lanes after it, or,
    // past lane 31, from the next 32 positions (each lane holds both: here | next << 8)
    const int grams = n - q + 1;
    u32 here = lane < n ? y[lane] : 4u;   // codes past n read as N
    for (int base = 0; base < grams; base += 32) {
        const int ahead = base + 32 + lane;
        const u32 next = ahead < n ? y[ahead] : 4u;
        const u32 both = here | (next << 8);
        u32 word = 0;
        bool clean = true;
        for (int d = 0; d < q; ++d) {
            const u32 v = __shfl_sync(QG_FULL, both, (lane + d) & 31);
            const u32 b = lane + d < 32 ? v & 0xffu : v >> 8;
            clean = clean && b < 4;
            word = (word << 2) | (b & 3u);
        }
        const int j = base + lane;
        if (clean && j < grams) {
            const u32 bucket_end = heads[word];
            for (u32 e = word ? heads[word - 1] : 0u; e < bucket_end; ++e)
                atomicAdd(&bins[(j - (int)positions[e] + m - q) >> width_shift], 1u);
        }
        here = next;
    }
    __syncwarp();
    qg_passing_bins(bins, bin_count, need, first, last, p);
}
