// edit-myers on the GPU: Myers' bit-vector search (Myers 1999, in Hyyro's
// formulation, Hyyro 2003) for many patterns per launch.
//
// Work split: block (x = group of 128 rows, y = text segment). All threads of
// a block scan the SAME text segment, so the block loads it once into shared
// memory and every read of a character is a broadcast; each thread runs the
// DP of its own row (pattern x strand). A thread starts m + k characters
// before its segment ("warm-up"): d(e) <= k only depends on text[e - m - k, e),
// so the distances it reports for its segment are exact.
//
// Rows of at most 32 characters use one 32-bit word (myers_short32), of at
// most 64 one 64-bit word (myers_short); longer rows
// use W words with carries between them (myers_long, Hyyro's block scheme),
// W <= MAX_WORDS. Hits are compacted on the device: an atomic counter hands
// out slots in (row, end, distance) arrays; the launcher reruns with larger
// arrays in the rare case they overflow.
//
// Text codes: A0 C1 G2 T3, 4 = any other reference byte (never matches).
// peq[row][code][word]: bit i set when pattern position 64 * word + i matches.
// Plain C types only: NVRTC (CuPy) compiles this file without the C++ standard headers.
#include "hits.cuh"

#define ROWS_PER_BLOCK 128
#define MAX_WORDS 16

// The block's text segment in shared memory (dynamic size, set by the launcher).
extern __shared__ unsigned char segment[];

// The block's text segment: ends e with e - 1 in [lo, hi), read from
// read_lo = lo - (max_m + k) on (the warm-up of the longest row).
struct Segment {
    long long lo, hi, read_lo;
};

// Finds blockIdx.y's segment and loads text[read_lo, hi) into shared memory.
__device__ __forceinline__ Segment load_segment(const unsigned char *text, long long owned_lo, long long owned_hi,
                                                long long segment_length, int max_m, int k,
                                                unsigned char *shared_text) {
    Segment s;
    s.lo = owned_lo + (long long)blockIdx.y * segment_length;
    s.hi = min(s.lo + segment_length, owned_hi);
    s.read_lo = max(0LL, s.lo - (long long)(max_m + k));
    for (long long i = s.read_lo + threadIdx.x; i < s.hi; i += blockDim.x) {
        shared_text[i - s.read_lo] = text[i];
    }
    __syncthreads();
    return s;
}

// One column step of Myers' search for one row (Hyyro 2003, Fig. 3), the pattern in the top m bits of
// Word (below them: rows that match every code; see myers_one_word). Returns the change of the score
// D[last row][j]: +1, 0 or -1, read from the top bit of the horizontal deltas.
template <typename Word>
__device__ __forceinline__ int myers_step(const Word x, Word &pv, Word &mv) {
    const int top = 8 * sizeof(Word) - 1;
    const Word xv = x | mv;
    const Word xh = (((x & pv) + pv) ^ pv) | x;
    Word ph = mv | ~(xh | pv);
    Word mh = pv & xh;
    const int change = (int)(ph >> top) - (int)(mh >> top);
    ph <<= 1;  // free start in the text: D[0][j] = 0, no carry into row 1
    mh <<= 1;
    pv = mh | ~(xv | ph);
    mv = ph & xv;
    return change;
}

// One machine word per row: Word = 32-bit for rows of at most 32 characters
// (one instruction per bit operation), 64-bit up to 64 characters.
//
// The pattern sits in the word's top m bits, so that the score's change is
// the top bit of each horizontal delta (two shifts and a subtraction, where a
// test of bit m - 1 took a compare and a select per delta). The w = bits - m
// rows below it match every code: with their vertical deltas 0 in the first
// column (pv has only the pattern's bits), D[i][j] = 0 for every i <= w and
// j, exactly the free start row 0 of the pattern alone. The steps before the
// segment (the warm-up) run in a loop of their own, without the report test, and the segment's own
// steps test their scores four at a time.
template <typename Word>
__device__ __forceinline__ void myers_one_word(const unsigned char *text, const unsigned long long *peq,
                                               const int *lengths, int rows, int k, int max_m, int max_bits,
                                               long long owned_lo, long long owned_hi,
                                               long long segment_length, unsigned long long *count,
                                               unsigned long long capacity, int *out_row, long long *out_end,
                                               short *out_dist) {
    // Each thread's Peq words, [code][thread], after the text segment.
    __shared__ Word eq[5][ROWS_PER_BLOCK];
    const Segment seg = load_segment(text, owned_lo, owned_hi, segment_length, max_m, k, segment);

    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x;
    if (row >= rows) return;
    const int m = lengths[row];
    if (m == 0 || m > max_bits) return;
    const int below = max_bits - m;  // rows under the pattern, matching every code
    const Word every = below ? (((Word)1 << below) - 1) : (Word)0;
    for (int c = 0; c < 5; ++c) eq[c][threadIdx.x] = ((Word)peq[(size_t)row * 5 + c] << below) | every;

    // Myers (1999) state: vertical deltas +1 (Pv) / -1 (Mv) of column j; the
    // score is D[m][j], the distance of the whole pattern ending at j.
    Word pv = ~every, mv = 0;
    int score = m;
    // This row's own warm-up start: m + k before the segment.
    // Positions relative to the shared segment, in 32-bit arithmetic (fewer
    // instructions per character than 64-bit text positions).
    const int first = (int)(max(0LL, seg.lo - (long long)(m + k)) - seg.read_lo);
    const int report_from = (int)(seg.lo - seg.read_lo);
    const int stop = (int)(seg.hi - seg.read_lo);
    const Word *my_eq = &eq[0][threadIdx.x];  // my_eq[code * ROWS_PER_BLOCK]: this row's Peq word of code
    for (int t = first; t < report_from; ++t) {
        score += myers_step<Word>(my_eq[segment[t] * ROWS_PER_BLOCK], pv, mv);
    }
    // Four steps at a time, one test of their smallest score: hits are rare, and a test with its branch
    // after every step cost four instructions of the step's ~19 (the branch's reconvergence included).
    int t = report_from;
    for (; t + 4 <= stop; t += 4) {
        int scores[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            score += myers_step<Word>(my_eq[segment[t + i] * ROWS_PER_BLOCK], pv, mv);
            scores[i] = score;
        }
        if (min(min(scores[0], scores[1]), min(scores[2], scores[3])) <= k) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                if (scores[i] <= k) emit(count, capacity, out_row, out_end, out_dist, row, seg.read_lo + t + i + 1,
                                         scores[i]);
            }
        }
    }
    for (; t < stop; ++t) {
        score += myers_step<Word>(my_eq[segment[t] * ROWS_PER_BLOCK], pv, mv);
        if (score <= k) emit(count, capacity, out_row, out_end, out_dist, row, seg.read_lo + t + 1, score);
    }
}

extern "C" __global__ void myers_short(const unsigned char *text, long long n, const unsigned long long *peq,
                                       const int *lengths, int rows, int k, int max_m,
                                       long long owned_lo, long long owned_hi, long long segment_length,
                                       unsigned long long *count, unsigned long long capacity,
                                       int *out_row, long long *out_end, short *out_dist) {
    myers_one_word<unsigned long long>(text, peq, lengths, rows, k, max_m, 64, owned_lo, owned_hi,
                                       segment_length, count, capacity, out_row, out_end, out_dist);
}

extern "C" __global__ void myers_short32(const unsigned char *text, long long n, const unsigned long long *peq,
                                         const int *lengths, int rows, int k, int max_m,
                                         long long owned_lo, long long owned_hi, long long segment_length,
                                         unsigned long long *count, unsigned long long capacity,
                                         int *out_row, long long *out_end, short *out_dist) {
    myers_one_word<unsigned int>(text, peq, lengths, rows, k, max_m, 32, owned_lo, owned_hi,
                                 segment_length, count, capacity, out_row, out_end, out_dist);
}

extern "C" __global__ void myers_long(const unsigned char *text, long long n, const unsigned long long *peq,
                                      const int *lengths, int rows, int words, int k, int max_m,
                                      long long owned_lo, long long owned_hi, long long segment_length,
                                      unsigned long long *count, unsigned long long capacity,
                                      int *out_row, long long *out_end, short *out_dist) {
    const Segment seg = load_segment(text, owned_lo, owned_hi, segment_length, max_m, k, segment);
    const long long seg_lo = seg.lo, seg_hi = seg.hi, read_lo = seg.read_lo;

    const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x;
    if (row >= rows) return;
    const int m = lengths[row];
    if (m <= 64) return;  // short rows go to myers_short
    const int used = (m + 63) / 64;
    const unsigned long long *row_peq = peq + (size_t)row * 5 * words;
    const unsigned long long high = 1ULL << ((m - 1) % 64);  // last row, in the last word

    unsigned long long pv[MAX_WORDS], mv[MAX_WORDS];
#pragma unroll
    for (int w = 0; w < MAX_WORDS; ++w) { pv[w] = ~0ULL; mv[w] = 0ULL; }
    int score = m;
    const long long start = max(0LL, seg_lo - (long long)(m + k));
    for (long long j = start; j < seg_hi; ++j) {
        const int c = segment[j - read_lo];
        // Hyyro's block scheme: the horizontal delta leaving word w (+1, 0, -1)
        // enters word w + 1 as its carry; the top row of word 0 gets 0 (free start).
        int carry_p = 0, carry_m = 0;
#pragma unroll
        for (int w = 0; w < MAX_WORDS; ++w) {
            if (w < used) {
                const unsigned long long x0 = row_peq[c * words + w];
                const unsigned long long x = x0 | (unsigned long long)carry_m;
                const unsigned long long xv = x0 | mv[w];
                const unsigned long long xh = (((x & pv[w]) + pv[w]) ^ pv[w]) | x;
                unsigned long long ph = mv[w] | ~(xh | pv[w]);
                unsigned long long mh = pv[w] & xh;
                const int out_p = (int)(ph >> 63), out_m = (int)(mh >> 63);
                if (w == used - 1) {
                    if (ph & high) ++score;
                    else if (mh & high) --score;
                }
                ph = (ph << 1) | (unsigned long long)carry_p;
                mh = (mh << 1) | (unsigned long long)carry_m;
                pv[w] = mh | ~(xv | ph);
                mv[w] = ph & xv;
                carry_p = out_p;
                carry_m = out_m;
            }
        }
        if (j >= seg_lo && score <= k) {
            emit(count, capacity, out_row, out_end, out_dist, row, j + 1, score);
        }
    }
}
