// edit-nfa on the GPU: the diagonal bit-parallel NFA of Baeza-Yates & Navarro
// (1999) in Hyyro's (2008) packing, one thread block per NFA, as in Onsjo &
// Watanabe 2009 (../shared/papers/onsjo2009-bit-parallel-nfa.txt, "the paper").
//
// The NFA, the word layout and the update are explained in nfa_cpu.py, which
// runs the same word updates on the CPU (tests compare both with the oracle).
// In short: diagonals 1..m of the NFA (the pattern padded with k characters
// that match nothing, so the whole last column (r, m) is kept and d(e) is
// exact), D = 32 / S diagonals of S bits per 32-bit word, 0 = active.
//
// Work split (paper, Section 3 and Fig. 4): block (x = text segment, y = row).
// The block's threads hold the NFA's words, WPT consecutive words per thread
// in registers. Per text character every word is updated from itself and its
// two neighbours (Fig. 5); words at a thread's edges are exchanged through
// shared memory (double buffered, one __syncthreads per character), the
// compiled pattern masks M[c] sit in shared memory. Each block scans
// [seg_lo, seg_hi), starting m + k characters earlier with every diagonal
// inactive (warm-up: an alignment of cost <= k spans at most m + k
// characters), in tiles of NFA_TILE characters decoded into shared memory.
//
// Text: 2-bit packed (16 characters per word, paper Section 3) plus an
// "N plane" of one bit per character. Code 4 (N or any non-ACGT byte) never
// matches and has no 2-bit code of its own; the plane keeps the packing
// exact at 1/2 bit per character more. Each block decodes its tile into
// codes 0..4, and M[4] is all ones (no match at any state).
//
// d(e): the final states (r, m), r <= k, are marked in a per-word mask; a
// word with an active one writes the smallest such r (its highest diagonal)
// into the tile's per-character minimum with a shared atomicMin; rows with
// m <= k start every character at d = m (diagonal 0). After each tile the
// characters with d <= k in the block's segment are emitted (hits.cuh).
//
// Plain C types only: NVRTC (CuPy) compiles this file without the C++
// standard headers.
#include "hits.cuh"

#define NFA_TILE 512  // text characters per shared-memory tile (even)

// The row-0 bit of every S-bit slot of a word.
__host__ __device__ constexpr unsigned row0_bits(int slot) {
    unsigned bits = 0;
    for (int s = 0; s + slot <= 32; s += slot) bits |= 1u << s;
    return bits;
}

// Compile-time layout of a state word with S-bit diagonal slots (nfa_cpu.py).
template <int S>
struct Layout {
    static constexpr int D = 32 / S;                                  // diagonals per word
    static constexpr unsigned ROW0 = row0_bits(S);                    // row 0 of each slot
    static constexpr unsigned TOP = ROW0 << (S - 1);                  // row S-1 of each slot
    static constexpr unsigned USED = D * S == 32 ? 0xffffffffu : ((1u << (D * S)) - 1u);
};

// One text character for one state word (the paper's Fig. 5; nfa_cpu.nfa_step).
//   cw: this word, up: the word before (lower diagonals), low: the word after,
//   cm: M[c] of this word for the text code c.
template <int S>
__device__ __forceinline__ unsigned nfa_step(unsigned cw, unsigned up, unsigned low, unsigned cm) {
    typedef Layout<S> L;
    unsigned match, insert;
    if constexpr (L::D == 1) {
        match = up | cm;                       // diagonal i-1, row r -> diagonal i, row r
        insert = (low << 1) | L::ROW0;         // diagonal i+1, row r -> diagonal i, row r+1
    } else {
        match = (cw >> S) | (up << ((L::D - 1) * S)) | cm;
        insert = (cw << (S + 1)) | (low >> ((L::D - 1) * S - 1)) | L::ROW0;
    }
    // Delete rule: inside a diagonal every row below an active one is active.
    // Adding 1 to each slot runs a carry over its leading inactive rows (Hyyro
    // 2008); the slot's last row is cleared first so the carry never leaves it.
    const unsigned cleared = match & ~L::TOP;
    const unsigned close = ((cleared + L::ROW0) ^ cleared) & match;
    const unsigned replace = (cw << 1) | L::ROW0;  // same diagonal, row r -> r+1
    return close & replace & insert & L::USED;
}

template <int WPT>
__device__ __forceinline__ void load_words(const unsigned *p, unsigned (&out)[WPT]) {
    if constexpr (WPT == 4) {
        const uint4 v = *reinterpret_cast<const uint4 *>(p);
        out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w;
    } else if constexpr (WPT == 2) {
        const uint2 v = *reinterpret_cast<const uint2 *>(p);
        out[0] = v.x; out[1] = v.y;
    } else {
        out[0] = p[0];
    }
}

// The per-block state the two halves of a double step share.
struct Edges {
    unsigned *first;  // [threads + 2]: entry t + 1 = word 0 of thread t; [threads + 1] = past the end
    unsigned *last;   // [threads + 2]: entry t + 1 = last word of thread t; [0] = diagonal 0
};

// One text character for the WPT words of this thread, then the barrier.
template <int S, int WPT>
__device__ __forceinline__ void nfa_thread_step(unsigned (&state)[WPT], const unsigned (&final_bits)[WPT],
                                                const unsigned *my_masks, int code_offset, Edges read,
                                                Edges write, int *best, int i, int m) {
    typedef Layout<S> L;
    const int t = threadIdx.x;
    const unsigned up = read.last[t], low = read.first[t + 2];
    unsigned cm[WPT];  // M[c] of this thread's words: code_offset = c * words * 4 bytes
    load_words<WPT>((const unsigned *)((const char *)my_masks + code_offset), cm);
    unsigned next[WPT];
#pragma unroll
    for (int j = 0; j < WPT; ++j) {
        next[j] = nfa_step<S>(state[j], j == 0 ? up : state[j - 1], j == WPT - 1 ? low : state[j + 1], cm[j]);
    }
    unsigned any_final = 0;
#pragma unroll
    for (int j = 0; j < WPT; ++j) any_final |= ~next[j] & final_bits[j];
    if (any_final) {
        // Rare: a final state (r, m) is active. The lowest active final bit of
        // a word is its highest diagonal i, i.e. its smallest r = m - i.
        int smallest = 1 << 30;
#pragma unroll
        for (int j = 0; j < WPT; ++j) {
            const unsigned active = ~next[j] & final_bits[j];
            if (active) {
                const int slot = (__ffs(active) - 1) / S;
                const int diagonal = 1 + (t * WPT + j) * L::D + (L::D - 1 - slot);
                smallest = min(smallest, m - diagonal);
            }
        }
        atomicMin(best + i, smallest);
    }
#pragma unroll
    for (int j = 0; j < WPT; ++j) state[j] = next[j];
    write.first[t + 1] = state[0];
    if (WPT > 1) write.last[t + 1] = state[WPT - 1];
    __syncthreads();
}

template <int S, int WPT>
__device__ __forceinline__ void nfa_scan(const unsigned *packed, const unsigned *n_plane, long long n,
                                         const unsigned *peq, const unsigned *final_masks, const int *lengths,
                                         int row_offset, int k, long long owned_lo, long long owned_hi,
                                         long long segment_length,
                                         unsigned long long *count, unsigned long long capacity,
                                         int *out_row, long long *out_end, short *out_dist) {
    typedef Layout<S> L;
    const int threads = blockDim.x, t = threadIdx.x;
    const int words = threads * WPT;
    const int row = blockIdx.y;
    const int m = lengths[row];
    const long long seg_lo = owned_lo + (long long)blockIdx.x * segment_length;
    if (seg_lo >= owned_hi) return;  // the whole block leaves together
    const long long seg_hi = min(seg_lo + segment_length, owned_hi);
    const long long start = max(0LL, seg_lo - (long long)(m + k));
    const long long stop = start + ((seg_hi - start + 1) & ~1LL);  // an even number of steps

    // Shared memory: M[5][words], two edge buffers, the tile's minimum d and its codes.
    extern __shared__ __align__(16) unsigned smem[];
    unsigned *masks = smem;
    unsigned *edge_base = masks + 5 * words;
    const int edge_len = threads + 2;
    Edges buffer0, buffer1;
    buffer0.first = edge_base;
    buffer1.first = edge_base + edge_len;
    // With one word per thread its first word is its last: one array serves both.
    buffer0.last = WPT == 1 ? buffer0.first : edge_base + 2 * edge_len;
    buffer1.last = WPT == 1 ? buffer1.first : edge_base + 3 * edge_len;
    int *best = (int *)(edge_base + (WPT == 1 ? 2 : 4) * edge_len);
    int *code_offsets = best + NFA_TILE;  // per character: its code times words * 4 (bytes into M)

    const unsigned *row_peq = peq + (size_t)row * 5 * words;
    for (int i = t; i < 5 * words; i += threads) masks[i] = row_peq[i];
    unsigned state[WPT], final_bits[WPT];
#pragma unroll
    for (int j = 0; j < WPT; ++j) {
        state[j] = L::USED;  // every diagonal inactive: the column D[j] = j
        final_bits[j] = final_masks[(size_t)row * words + t * WPT + j];
    }
    buffer0.first[t + 1] = L::USED;
    buffer0.last[t + 1] = L::USED;
    if (t == 0) {
        buffer0.last[0] = buffer1.last[0] = 0u;  // diagonal 0: always active
        buffer0.first[threads + 1] = buffer1.first[threads + 1] = L::USED;  // past the last word: inactive
    }
    const int none = m <= k ? m : k + 1;
    const unsigned *my_masks = masks + t * WPT;

    for (long long tile = start; tile < stop; tile += NFA_TILE) {
        const int len = (int)min((long long)NFA_TILE, stop - tile);
        for (int i = t; i < len; i += threads) {
            const long long p = tile + i;
            int code = 4;
            if (p < n) {
                const unsigned two_bit = (packed[p >> 4] >> ((p & 15) * 2)) & 3u;
                code = (n_plane[p >> 5] >> (p & 31)) & 1u ? 4 : (int)two_bit;
            }
            code_offsets[i] = code * words * 4;
            best[i] = none;
        }
        __syncthreads();
        for (int i = 0; i < len; i += 2) {
            // Two characters per turn: the edge buffers swap roles (read 0 / write 1, then back).
            nfa_thread_step<S, WPT>(state, final_bits, my_masks, code_offsets[i], buffer0, buffer1, best, i, m);
            nfa_thread_step<S, WPT>(state, final_bits, my_masks, code_offsets[i + 1], buffer1, buffer0, best,
                                    i + 1, m);
        }
        for (int i = t; i < len; i += threads) {
            const long long p = tile + i;
            const int d = best[i];
            if (d <= k && p >= seg_lo && p < seg_hi) {
                emit(count, capacity, out_row, out_end, out_dist, row_offset + row, p + 1, d);
            }
        }
        __syncthreads();  // before the next tile overwrites code_offsets and best
    }
}

// One kernel per (slot width S, words per thread WPT): S = 32 / floor(32 / (k + 1)).
#define NFA_KERNEL(S, WPT)                                                                                   \
    extern "C" __global__ void __launch_bounds__(1024, 2) nfa_s##S##_w##WPT(                                 \
        const unsigned *packed, const unsigned *n_plane, long long n, const unsigned *peq,                   \
        const unsigned *final_masks, const int *lengths, int row_offset, int k, long long owned_lo,           \
        long long owned_hi, long long segment_length, unsigned long long *count,                             \
        unsigned long long capacity, int *out_row, long long *out_end, short *out_dist) {                    \
        nfa_scan<S, WPT>(packed, n_plane, n, peq, final_masks, lengths, row_offset, k, owned_lo, owned_hi,   \
                         segment_length, count, capacity, out_row, out_end, out_dist);                       \
    }

#define NFA_KERNELS(S) NFA_KERNEL(S, 1) NFA_KERNEL(S, 2) NFA_KERNEL(S, 4)

NFA_KERNELS(1)
NFA_KERNELS(2)
NFA_KERNELS(3)
NFA_KERNELS(4)
NFA_KERNELS(5)
NFA_KERNELS(6)
NFA_KERNELS(8)
NFA_KERNELS(10)
NFA_KERNELS(16)
NFA_KERNELS(32)

// Text codes -> 2-bit packed words (character 16q + i at bits 2i, 2i+1 of
// packed[q]) and the N plane (bit i of n_plane[q] for character 32q + i: code >= 4).
// One thread per 32 characters.
extern "C" __global__ void nfa_pack_text(const unsigned char *text, long long n, unsigned *packed,
                                         unsigned *n_plane) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long first = q * 32;
    if (first >= n) return;
    unsigned low = 0, high = 0, n_bits = 0;
#pragma unroll 8
    for (int i = 0; i < 32; ++i) {
        const long long p = first + i;
        const unsigned c = p < n ? text[p] : 4u;
        if (c > 3u) n_bits |= 1u << i;
        if (i < 16) low |= (c & 3u) << (2 * i);
        else high |= (c & 3u) << (2 * (i - 16));
    }
    packed[2 * q] = low;
    packed[2 * q + 1] = high;
    n_plane[q] = n_bits;
}
