// CRISPR off-target kernels (seqsift.kernels.crispr, issue 16): PAM candidates first, then guides.
//
// crispr_pam_candidates: one thread per text position; positions where the PAM
//   (IUPAC masks, forward orientation of one strand) matches exactly are
//   compacted into a candidate list, one atomic per warp (a ballot numbers
//   the warp's matches). Found once per chunk and strand, shared by every guide.
// crispr_check: one thread per candidate (grid-stride), a tile of up to
//   ROWS_PER_BLOCK guide rows of one strand and one length L <= 32 in shared
//   memory. The thread builds the text window(s) of its candidate once, then
//   per row counts the mismatched bases with a popcount over "lanes", one bit
//   per row base. Two layouts of a row (chosen per tile, see the kernel):
//   - TwoBit, for tiles whose rows are all plain A/C/G/T: 2 bits a base in a
//     64-bit word (A=0 C=1 G=2 T=3), lane bit 2i. A base matches when the two
//     codes XOR to 00; a window base that is not A/C/G/T (or lies outside the
//     text) has its lane set in the window's `bad` word, a mismatch whatever
//     the row holds. Per row: XOR, fold each base's two bits onto one, OR
//     `bad`, popcount.
//   - OneHot, for tiles with IUPAC rows: 4 bits a base in a 128-bit word of
//     two 64-bit halves (no __int128 for NVRTC's sake; a nibble never
//     straddles the halves), lane bit 4i; the row's nibble is its IUPAC set,
//     the window's the base's one bit (0000 for non-ACGT, matching nothing);
//     a base matches when row & window leave a bit in its nibble.
//   Bulges (DNA: b extra genome bases after row base j; RNA: row bases
//   j..j+b-1 unpaired) read the prefix and the suffix from two windows
//   shifted by b and try every j, after a lower bound (bases mismatched in
//   both windows) rules most candidates out; the same code runs on both
//   layouts (check_tile is a template over them).
//
// Conventions match kernels/crispr/cpu.py exactly: text codes A=0 C=1 G=2 T=3,
// other=4; a site is owned when its last base lies in [owned_lo, owned_hi);
// hits carry (row, start, length, bulge type, bulge size, j, mismatches); of
// several j the fewest mismatches wins, then the smallest j on + rows and the
// largest on - rows (leftmost in the guide's own orientation).

#define ROWS_PER_BLOCK 256
#define MAX_ROW 32
#define BULGE_NONE 0
#define BULGE_DNA 1
#define BULGE_RNA 2
#define FULL_WARP 0xffffffffu

// 128 bits as two halves; base i is nibble i: bits 4i..4i+3 (lo for i < 16, hi for i >= 16).
struct Word128 {
    unsigned long long lo, hi;
};

__device__ __forceinline__ Word128 w_and(Word128 a, Word128 b) { return {a.lo & b.lo, a.hi & b.hi}; }
__device__ __forceinline__ Word128 w_or(Word128 a, Word128 b) { return {a.lo | b.lo, a.hi | b.hi}; }
__device__ __forceinline__ Word128 w_andnot(Word128 a, Word128 b) { return {a.lo & ~b.lo, a.hi & ~b.hi}; }
__device__ __forceinline__ int popc128(Word128 x) { return __popcll(x.lo) + __popcll(x.hi); }

// The word with one bit set: bit 4 * base + offset.
__device__ __forceinline__ Word128 w_bit(int base, int offset)
{
    Word128 w = {0ULL, 0ULL};
    if (base < 16) w.lo = 1ULL << (4 * base + offset);
    else w.hi = 1ULL << (4 * (base - 16) + offset);
    return w;
}

extern "C" __global__ void crispr_pam_candidates(const unsigned char* __restrict__ text, long long n,
                                                 const unsigned char* __restrict__ pam, int pam_length,
                                                 unsigned long long* count, long long* out,
                                                 unsigned long long capacity)
{
    // The loop is uniform across a warp (blockDim.x is a multiple of 32), so every lane takes part in the ballot.
    const int lane = threadIdx.x & 31;
    const long long last = n - pam_length;  // the last position a PAM fits at
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long warp_first = (long long)blockIdx.x * blockDim.x + (threadIdx.x - lane); warp_first <= last;
         warp_first += stride) {
        long long p = warp_first + lane;
        bool ok = p <= last;
        for (int i = 0; i < pam_length && ok; i++) {
            unsigned char code = text[p + i];
            ok = code <= 3 && ((pam[i] >> code) & 1);
        }
        unsigned matches = __ballot_sync(FULL_WARP, ok);
        if (matches == 0) continue;
        unsigned long long first_slot = 0;
        if (lane == 0) first_slot = atomicAdd(count, (unsigned long long)__popc(matches));
        first_slot = __shfl_sync(FULL_WARP, first_slot, 0);
        if (ok) {
            unsigned long long slot = first_slot + __popc(matches & ((1u << lane) - 1u));
            if (slot < capacity) out[slot] = p;
        }
    }
}

// IUPAC rows: 4 bits a base (the file's top comment).
struct OneHot {
    typedef Word128 Row;
    typedef Word128 Lanes;
    struct Window {
        Word128 bits;
    };

    // Bit 4*i + code set for text[first + i], i < length; 0 outside the text or for non-ACGT.
    __device__ static __forceinline__ Window window(const unsigned char* __restrict__ text, long long n,
                                                    long long first, int length)
    {
        Window w = {{0ULL, 0ULL}};
        for (int i = 0; i < length; i++) {
            long long t = first + i;
            if (t >= 0 && t < n) {
                unsigned char code = text[t];
                if (code <= 3) w.bits = w_or(w.bits, w_bit(i, code));
            }
        }
        return w;
    }

    // Lane bit 4*i set where row base i (a lane of care) does not match the window.
    // (Each half is shifted on its own: a nibble's bits fold onto its bit 0 within one half.)
    __device__ static __forceinline__ Lanes mismatches(Row row, Window window, Lanes care)
    {
        Word128 y = w_and(row, window.bits);
        y.lo |= y.lo >> 1;
        y.hi |= y.hi >> 1;
        y.lo |= y.lo >> 2;
        y.hi |= y.hi >> 2;
        return w_andnot(care, y);
    }

    __device__ static __forceinline__ Lanes lane(int i) { return w_bit(i, 0); }
    __device__ static __forceinline__ Lanes none() { return {0ULL, 0ULL}; }
    __device__ static __forceinline__ Lanes both(Lanes a, Lanes b) { return w_and(a, b); }
    __device__ static __forceinline__ Lanes either(Lanes a, Lanes b) { return w_or(a, b); }
    __device__ static __forceinline__ Lanes but_not(Lanes a, Lanes b) { return w_andnot(a, b); }
    __device__ static __forceinline__ int count(Lanes a) { return popc128(a); }
};

// Plain A/C/G/T rows: 2 bits a base (the file's top comment).
struct TwoBit {
    typedef unsigned long long Row;
    typedef unsigned long long Lanes;
    struct Window {
        unsigned long long codes, bad;
    };
    static constexpr unsigned long long LOW_BITS = 0x5555555555555555ULL;  // bit 2i of every base

    __device__ static __forceinline__ Window window(const unsigned char* __restrict__ text, long long n,
                                                    long long first, int length)
    {
        Window w = {0ULL, 0ULL};
        for (int i = 0; i < length; i++) {
            long long t = first + i;
            unsigned char code = (t >= 0 && t < n) ? text[t] : 4;
            if (code <= 3) w.codes |= (unsigned long long)code << (2 * i);
            else w.bad |= 1ULL << (2 * i);
        }
        return w;
    }

    __device__ static __forceinline__ Lanes mismatches(Row row, Window window, Lanes care)
    {
        unsigned long long differ = row ^ window.codes;
        return (((differ | (differ >> 1)) & LOW_BITS) | window.bad) & care;
    }

    __device__ static __forceinline__ Lanes lane(int i) { return 1ULL << (2 * i); }
    __device__ static __forceinline__ Lanes none() { return 0ULL; }
    __device__ static __forceinline__ Lanes both(Lanes a, Lanes b) { return a & b; }
    __device__ static __forceinline__ Lanes either(Lanes a, Lanes b) { return a | b; }
    __device__ static __forceinline__ Lanes but_not(Lanes a, Lanes b) { return a & ~b; }
    __device__ static __forceinline__ int count(Lanes a) { return __popcll(a); }
};

// The lanes of the first j bases.
template <class Layout>
__device__ __forceinline__ typename Layout::Lanes first_bases(int j)
{
    typename Layout::Lanes m = Layout::none();
    for (int i = 0; i < j; i++) m = Layout::either(m, Layout::lane(i));
    return m;
}

// Every qualifying (candidate, row of the tile, bulge) of this thread's candidates, appended to the out arrays.
template <class Layout>
__device__ __forceinline__ void check_tile(
    const unsigned char* __restrict__ text, long long n, const long long* __restrict__ candidates,
    long long candidate_count, const typename Layout::Row* tile_row, const short* tile_limit, const int* tile_id,
    int tile_rows, int length, int pam_length, int pam_right, int minus, int dna_bulge, int rna_bulge,
    long long owned_lo, long long owned_hi, unsigned long long* count, unsigned long long capacity, int* out_row,
    long long* out_start, int* out_length, signed char* out_type, signed char* out_size, short* out_at, short* out_mm)
{
    typedef typename Layout::Lanes Lanes;
    const Lanes care = first_bases<Layout>(length);
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < candidate_count; c += stride) {
        long long p = candidates[c];
        // anchor: where row base 0 sits without a bulge; row base i is read from text[anchor + shift + i]
        long long anchor = pam_right ? p - length : p + pam_length;
        for (int option = 0; option <= dna_bulge + rna_bulge; option++) {
            int kind = option == 0 ? BULGE_NONE : (option <= dna_bulge ? BULGE_DNA : BULGE_RNA);
            int size = option == 0 ? 0 : (kind == BULGE_DNA ? option : option - dna_bulge);
            if (kind == BULGE_RNA && length < size + 2) continue;
            int span = kind == BULGE_NONE ? length : (kind == BULGE_DNA ? length + size : length - size);
            long long start = pam_right ? p - span : p;
            long long end = pam_right ? p + pam_length : p + pam_length + span;
            if (start < 0 || end > n || end - 1 < owned_lo || end - 1 >= owned_hi) continue;
            // prefix and suffix windows (the comment at the top, and cpu.py's shifts)
            int prefix_shift = 0, suffix_shift = 0;
            if (kind == BULGE_DNA) { if (pam_right) prefix_shift = -size; else suffix_shift = size; }
            if (kind == BULGE_RNA) { if (pam_right) prefix_shift = size; else suffix_shift = -size; }
            // (built per option, not kept in an array indexed by the shift: such an array lives in local memory)
            typename Layout::Window prefix_window = Layout::window(text, n, anchor + prefix_shift, length);
            typename Layout::Window suffix_window = Layout::window(text, n, anchor + suffix_shift, length);
            for (int r = 0; r < tile_rows; r++) {
                int limit = tile_limit[r];
                int best = limit + 1, best_at = 0;
                if (kind == BULGE_NONE) {
                    best = Layout::count(Layout::mismatches(tile_row[r], prefix_window, care));
                } else {
                    Lanes a = Layout::mismatches(tile_row[r], prefix_window, care);
                    Lanes b = Layout::mismatches(tile_row[r], suffix_window, care);
                    if (Layout::count(Layout::both(a, b)) - (kind == BULGE_RNA ? size : 0) > limit) continue;
                    int last_j = kind == BULGE_DNA ? length - 1 : length - 1 - size;
                    Lanes before = Layout::lane(0);  // first_bases(j) for j = 1
                    for (int j = 1; j <= last_j; j++) {
                        // suffix: row bases from j (DNA) or j + size (RNA) on
                        Lanes skipped = kind == BULGE_DNA ? before : first_bases<Layout>(j + size);
                        int mm = Layout::count(Layout::both(a, before)) +
                                 Layout::count(Layout::but_not(Layout::both(b, care), skipped));
                        if (mm < best || (mm == best && minus && mm <= limit)) { best = mm; best_at = j; }
                        before = Layout::either(before, Layout::lane(j));
                    }
                }
                if (best > limit) continue;
                unsigned long long slot = atomicAdd(count, 1ULL);
                if (slot < capacity) {
                    out_row[slot] = tile_id[r];
                    out_start[slot] = start;
                    out_length[slot] = (int)(end - start);
                    out_type[slot] = (signed char)kind;
                    out_size[slot] = (signed char)size;
                    out_at[slot] = (short)best_at;
                    out_mm[slot] = (short)best;
                }
            }
        }
    }
}

// The common case on its own: plain A/C/G/T rows (TwoBit), no bulges. Each thread takes CANDIDATES_PER_THREAD
// candidates at once, so that every row read from shared memory serves all of them (the loads, not the
// arithmetic, bounded the one-candidate loop). Same hits as check_tile<TwoBit> with no bulge option.
#define CANDIDATES_PER_THREAD 4

__device__ __forceinline__ void check_tile_plain(
    const unsigned char* __restrict__ text, long long n, const long long* __restrict__ candidates,
    long long candidate_count, const unsigned long long* tile_row, const short* tile_limit, const int* tile_id,
    int tile_rows, int length, int pam_length, int pam_right, long long owned_lo, long long owned_hi,
    unsigned long long* count, unsigned long long capacity, int* out_row, long long* out_start, int* out_length,
    signed char* out_type, signed char* out_size, short* out_at, short* out_mm)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x; first < candidate_count;
         first += stride * CANDIDATES_PER_THREAD) {
        TwoBit::Window window[CANDIDATES_PER_THREAD];
        long long site_start[CANDIDATES_PER_THREAD];
        bool owned[CANDIDATES_PER_THREAD];
        for (int k = 0; k < CANDIDATES_PER_THREAD; k++) {
            long long c = first + k * stride;
            owned[k] = false;
            window[k].codes = 0ULL;
            window[k].bad = 0ULL;
            if (c >= candidate_count) continue;
            long long p = candidates[c];
            long long start = pam_right ? p - length : p;
            long long end = start + length + pam_length;
            owned[k] = start >= 0 && end <= n && end - 1 >= owned_lo && end - 1 < owned_hi;
            site_start[k] = start;
            // the window holds `length` lanes only, so lanes past the row need no care mask
            window[k] = TwoBit::window(text, n, pam_right ? start : start + pam_length, length);
            if (!owned[k]) window[k].bad = ~0ULL;  // counts past every limit
        }
        for (int r = 0; r < tile_rows; r++) {
            unsigned long long row = tile_row[r];
            int limit = tile_limit[r];
            for (int k = 0; k < CANDIDATES_PER_THREAD; k++) {
                unsigned long long differ = row ^ window[k].codes;
                int mismatches = __popcll(((differ | (differ >> 1)) & TwoBit::LOW_BITS) | window[k].bad);
                if (mismatches > limit) continue;
                unsigned long long slot = atomicAdd(count, 1ULL);
                if (slot < capacity) {
                    out_row[slot] = tile_id[r];
                    out_start[slot] = site_start[k];
                    out_length[slot] = length + pam_length;
                    out_type[slot] = (signed char)BULGE_NONE;
                    out_size[slot] = 0;
                    out_at[slot] = 0;
                    out_mm[slot] = (short)mismatches;
                }
            }
        }
    }
}

extern "C" __global__ void crispr_check(const unsigned char* __restrict__ text, long long n,
                                        const long long* __restrict__ candidates, long long candidate_count,
                                        const unsigned long long* __restrict__ guide_lo,
                                        const unsigned long long* __restrict__ guide_hi,
                                        const short* __restrict__ limits, const int* __restrict__ row_ids,
                                        int rows, int length, int pam_length, int pam_right, int minus,
                                        int dna_bulge, int rna_bulge, long long owned_lo, long long owned_hi,
                                        unsigned long long* count, unsigned long long capacity,
                                        int* out_row, long long* out_start, int* out_length, signed char* out_type,
                                        signed char* out_size, short* out_at, short* out_mm)
{
    // The tile's rows arrive one-hot (4 bits a base, kernels/crispr/cuda.py's guide_words); when every base of
    // every row is one letter, the tile runs on 2-bit rows (TwoBit), made here while loading.
    __shared__ Word128 s_one_hot[ROWS_PER_BLOCK];
    __shared__ unsigned long long s_two_bit[ROWS_PER_BLOCK];
    __shared__ short s_limit[ROWS_PER_BLOCK];
    __shared__ int s_row[ROWS_PER_BLOCK];
    __shared__ int s_any_iupac;
    int tile = blockIdx.y * ROWS_PER_BLOCK;
    int tile_rows = min(ROWS_PER_BLOCK, rows - tile);
    if (threadIdx.x == 0) s_any_iupac = 0;
    __syncthreads();
    for (int r = threadIdx.x; r < tile_rows; r += blockDim.x) {
        Word128 row = {guide_lo[tile + r], guide_hi[tile + r]};
        unsigned long long codes = 0ULL;
        bool plain = true;
        for (int i = 0; i < length; i++) {
            unsigned nibble = (unsigned)((i < 16 ? row.lo >> (4 * i) : row.hi >> (4 * (i - 16))) & 0xF);
            plain = plain && (nibble == 1 || nibble == 2 || nibble == 4 || nibble == 8);
            codes |= (unsigned long long)((nibble > 1) + (nibble > 2) + (nibble > 4)) << (2 * i);
        }
        if (!plain) atomicOr(&s_any_iupac, 1);
        s_one_hot[r] = row;
        s_two_bit[r] = codes;
        s_limit[r] = limits[tile + r];
        s_row[r] = row_ids[tile + r];
    }
    __syncthreads();
    if (!s_any_iupac && dna_bulge == 0 && rna_bulge == 0)
        check_tile_plain(text, n, candidates, candidate_count, s_two_bit, s_limit, s_row, tile_rows, length,
                         pam_length, pam_right, owned_lo, owned_hi, count, capacity, out_row, out_start, out_length,
                         out_type, out_size, out_at, out_mm);
    else if (s_any_iupac)
        check_tile<OneHot>(text, n, candidates, candidate_count, s_one_hot, s_limit, s_row, tile_rows, length,
                           pam_length, pam_right, minus, dna_bulge, rna_bulge, owned_lo, owned_hi, count, capacity,
                           out_row, out_start, out_length, out_type, out_size, out_at, out_mm);
    else
        check_tile<TwoBit>(text, n, candidates, candidate_count, s_two_bit, s_limit, s_row, tile_rows, length,
                           pam_length, pam_right, minus, dna_bulge, rna_bulge, owned_lo, owned_hi, count, capacity,
                           out_row, out_start, out_length, out_type, out_size, out_at, out_mm);
}
