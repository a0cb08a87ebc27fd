// Starts and alignments (extended CIGARs) of search hits on the GPU, one thread per hit, on the text
// codes a GPU search already holds on the device. The same computation as cpu.py, whose docstring
// derives it; a hit's answer is the same on both backends (tests/test_gpu_locate.py).
//
// Hamming: start = end - m; one '=' or 'X' per pattern position.
//
// Edit distance: the banded DP over the reversed strings,
//     R[i][j] = ED(P[m-i:], text[end-j:end]),
// kept only where |i - j| <= d (the hit's distance): row m gives ED(P, text[end-j:end]) for every
// start end - j at once; the smallest start is the largest j with R[m][j] == d, and the traceback
// from (m, j) to (0, 0) walks the pattern forwards, ties broken diagonal, then I, then D.
// The band lives in global scratch as band[cell * hits + hit] (cell = i * (2d + 1) + j - i + d), so
// that the threads of a warp touch consecutive words. Values above d are stored as d + 1: an
// alignment of cost <= d never passes through a cell above d, so the start and the traceback see
// exactly what the full values would give them.
//
// Each hit's CIGAR is written run by run at cigar_at[hit] (room for 2 characters per operation:
// a run of L operations takes its digits and a letter, at most 2 L); cigar_length[hit] says how
// many were written. status[hit]: 0 fine, 1 the window is not in the text, 2 no start reaches d
// (as cpu.py's BAD_WINDOW and BAD_DISTANCE).
//
// Text codes: A0 C1 G2 T3, 4 any other byte; a pattern position's mask has bit c set when it
// matches code c (never bit 4). Plain C types only: NVRTC compiles this without the standard headers.

#define BAD_WINDOW 1
#define BAD_DISTANCE 2

__device__ __forceinline__ bool matches(unsigned char mask, unsigned char code) {
    return (mask >> code) & 1;
}

// Run-length encoder of one hit's operations into CIGAR text.
struct Cigar {
    unsigned char *out;
    int written;
    int op;   // the current run's operation (-1 before the first)
    int run;  // its length so far
};

__device__ __forceinline__ void end_run(Cigar &c) {
    const char letters[4] = {'=', 'X', 'I', 'D'};
    if (c.run == 0) return;
    char digits[10];
    int count = 0;
    for (int r = c.run; r > 0; r /= 10) digits[count++] = '0' + r % 10;
    while (count > 0) c.out[c.written++] = digits[--count];
    c.out[c.written++] = letters[c.op];
}

__device__ __forceinline__ void push(Cigar &c, int op) {
    if (op != c.op) {
        end_run(c);
        c.op = op;
        c.run = 0;
    }
    ++c.run;
}

extern "C" __global__ void locate_hamming(const unsigned char *text, long long n, const unsigned char *masks,
                                          int mask_stride, const int *lengths, const int *rows,
                                          const long long *ends, int hits, unsigned char *cigars,
                                          const long long *cigar_at, int *cigar_length, long long *starts,
                                          signed char *status) {
    const int h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= hits) return;
    const int row = rows[h];
    const int m = lengths[row];
    const long long end = ends[h], start = end - m;
    starts[h] = start;
    cigar_length[h] = 0;
    if (start < 0 || end > n) {
        status[h] = BAD_WINDOW;
        return;
    }
    Cigar c = {cigars + cigar_at[h], 0, -1, 0};
    const unsigned char *mask = masks + (long long)row * mask_stride;
    for (int j = 0; j < m; ++j) push(c, matches(mask[j], text[start + j]) ? 0 : 1);
    end_run(c);
    cigar_length[h] = c.written;
    status[h] = 0;
}

extern "C" __global__ void locate_edit(const unsigned char *text, long long n, const unsigned char *masks,
                                       int mask_stride, const int *lengths, const int *rows,
                                       const long long *ends, const int *distances, const long long *lowest,
                                       int hits, int *band, unsigned char *cigars, const long long *cigar_at,
                                       int *cigar_length, long long *starts, signed char *status) {
    const int h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= hits) return;
    const int row = rows[h];
    const int m = lengths[row], d = distances[h];
    const long long end = ends[h];
    starts[h] = -1;
    cigar_length[h] = 0;
    if (end > n || end < 0 || d < 0) {
        status[h] = BAD_WINDOW;
        return;
    }
    const unsigned char *mask = masks + (long long)row * mask_stride;
    const int width = 2 * d + 1, above = d + 1;
    // Text characters before the end that the alignment may use: down to the hit's record, at most m + d.
    const int j_max = (int)max(-1LL, min(end - lowest[h], (long long)(m + d)));
#define BAND(i, x) band[((long long)(i) * width + (x)) * hits + h]
    // Row 0: the empty pattern suffix against j text characters costs j (all D).
    for (int x = 0; x < width; ++x) {
        const int j = x - d;
        BAND(0, x) = (j >= 0 && j <= j_max) ? min(j, above) : above;
    }
    for (int i = 1; i <= m; ++i) {
        const unsigned char pattern_mask = mask[m - i];  // row i puts P[m - i] in front
        for (int x = 0; x < width; ++x) {
            const int j = x + i - d;
            int best = above;
            if (j >= 0 && j <= j_max) {
                if (j == 0) {
                    best = min(i, above);  // all I
                } else {
                    best = BAND(i - 1, x) + (matches(pattern_mask, text[end - j]) ? 0 : 1);  // diagonal
                    if (x > 0) best = min(best, BAND(i, x - 1) + 1);                      // D
                }
                if (x + 1 < width) best = min(best, BAND(i - 1, x + 1) + 1);              // I
                best = min(best, above);
            }
            BAND(i, x) = best;
        }
    }
    // The smallest start: the largest j with R[m][j] == d.
    int j_best = -1;
    for (int j = min(j_max, m + d); j >= max(0, m - d); --j) {
        if (BAND(m, j - m + d) == d) {
            j_best = j;
            break;
        }
    }
    if (j_best < 0) {
        status[h] = BAD_DISTANCE;
        return;
    }
    Cigar c = {cigars + cigar_at[h], 0, -1, 0};
    int i = m, j = j_best;
    while (i > 0 || j > 0) {
        const int x = j - i + d, value = BAND(i, x);
        if (i > 0 && j > 0) {
            const bool same = matches(mask[m - i], text[end - j]);
            if (BAND(i - 1, x) + (same ? 0 : 1) == value) {
                push(c, same ? 0 : 1);
                --i;
                --j;
                continue;
            }
        }
        if (i > 0 && x + 1 < width && BAND(i - 1, x + 1) + 1 == value) {
            push(c, 2);
            --i;
            continue;
        }
        push(c, 3);
        --j;
    }
#undef BAND
    end_run(c);
    starts[h] = end - j_best;
    cigar_length[h] = c.written;
    status[h] = 0;
}
