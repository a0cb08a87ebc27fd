// CRISPR off-target kernels (seqsift.kernels.crispr, issue 16): PAM candidates first, then guides.
//
// crispr_pam_candidates: one thread per text position; positions where the PAM
//   (IUPAC masks, forward orientation of one strand) matches exactly are
//   compacted into a candidate list with an atomic counter. Found once per
//   chunk and strand, shared by every guide.
// crispr_check: one thread per candidate (grid-stride), a tile of up to
//   ROWS_PER_BLOCK guide rows of one strand and one length L <= 32 in shared
//   memory. The thread builds the one-hot text window(s) of its candidate once
//   (4 bits a base in a 128-bit word of two 64-bit halves, no __int128 for
//   NVRTC's sake; a nibble never straddles the halves; a non-ACGT base is 0000 and so matches
//   nothing), then per row: the mismatch bits are the nibbles of (guide & text)
//   that are zero, counted by popcount. Bulges (DNA: b extra genome bases after
//   row base j; RNA: row bases j..j+b-1 unpaired) read the prefix and the
//   suffix from two windows shifted by b and try every j, after a lower bound
//   (bases mismatched in both windows) rules most candidates out.
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
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p + pam_length <= n; p += stride) {
        bool ok = true;
        for (int i = 0; i < pam_length && ok; i++) {
            unsigned char code = text[p + i];
            ok = code <= 3 && ((pam[i] >> code) & 1);
        }
        if (ok) {
            unsigned long long slot = atomicAdd(count, 1ULL);
            if (slot < capacity) out[slot] = p;
        }
    }
}

// One-hot window: bit 4*i + code set for text[first + i], i < length; 0 outside the text or for non-ACGT.
__device__ __forceinline__ Word128 one_hot(const unsigned char* __restrict__ text, long long n, long long first,
                                           int length)
{
    Word128 w = {0ULL, 0ULL};
    for (int i = 0; i < length; i++) {
        long long t = first + i;
        if (t >= 0 && t < n) {
            unsigned char code = text[t];
            if (code <= 3) w = w_or(w, w_bit(i, code));
        }
    }
    return w;
}

// Bit 4*i set where row base i (i < length) does not match the window.
// (Each half is shifted on its own: a nibble's bits fold onto its bit 0 within one half.)
__device__ __forceinline__ Word128 mismatch_bits(Word128 guide, Word128 window, Word128 care)
{
    Word128 y = w_and(guide, window);
    y.lo |= y.lo >> 1;
    y.hi |= y.hi >> 1;
    y.lo |= y.lo >> 2;
    y.hi |= y.hi >> 2;
    return w_andnot(care, y);
}

// Nibble-bit-0 mask of the first j bases.
__device__ __forceinline__ Word128 first_bases(int j)
{
    Word128 m = {0ULL, 0ULL};
    for (int i = 0; i < j; i++) m = w_or(m, w_bit(i, 0));
    return m;
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
    __shared__ Word128 s_guide[ROWS_PER_BLOCK];
    __shared__ short s_limit[ROWS_PER_BLOCK];
    __shared__ int s_row[ROWS_PER_BLOCK];
    int tile = blockIdx.y * ROWS_PER_BLOCK;
    int tile_rows = min(ROWS_PER_BLOCK, rows - tile);
    for (int r = threadIdx.x; r < tile_rows; r += blockDim.x) {
        s_guide[r].lo = guide_lo[tile + r];
        s_guide[r].hi = guide_hi[tile + r];
        s_limit[r] = limits[tile + r];
        s_row[r] = row_ids[tile + r];
    }
    __syncthreads();

    const Word128 care = first_bases(length);
    const int max_shift = dna_bulge > rna_bulge ? dna_bulge : rna_bulge;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < candidate_count; c += stride) {
        long long p = candidates[c];
        // anchor: where row base 0 sits without a bulge
        long long anchor = pam_right ? p - length : p + pam_length;
        Word128 windows[2 * 2 + 1];  // windows[max_shift + s]: row base i against text[anchor + s + i]
        for (int s = -max_shift; s <= max_shift; s++) windows[max_shift + s] = one_hot(text, n, anchor + s, length);
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
            Word128 prefix_window = windows[max_shift + prefix_shift];
            Word128 suffix_window = windows[max_shift + suffix_shift];
            for (int r = 0; r < tile_rows; r++) {
                int limit = s_limit[r];
                int best = limit + 1, best_at = 0;
                if (kind == BULGE_NONE) {
                    best = popc128(mismatch_bits(s_guide[r], prefix_window, care));
                } else {
                    Word128 a = mismatch_bits(s_guide[r], prefix_window, care);
                    Word128 b = mismatch_bits(s_guide[r], suffix_window, care);
                    if (popc128(w_and(a, b)) - (kind == BULGE_RNA ? size : 0) > limit) continue;
                    int last_j = kind == BULGE_DNA ? length - 1 : length - 1 - size;
                    Word128 before = w_bit(0, 0);  // first_bases(j) for j = 1
                    for (int j = 1; j <= last_j; j++) {
                        // suffix: row bases from j (DNA) or j + size (RNA) on
                        Word128 skipped = kind == BULGE_DNA ? before : first_bases(j + size);
                        int mm = popc128(w_and(a, before)) + popc128(w_andnot(w_and(b, care), skipped));
                        if (mm < best || (mm == best && minus && mm <= limit)) { best = mm; best_at = j; }
                        before = w_or(before, w_bit(j, 0));
                    }
                }
                if (best > limit) continue;
                unsigned long long slot = atomicAdd(count, 1ULL);
                if (slot < capacity) {
                    out_row[slot] = s_row[r];
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
