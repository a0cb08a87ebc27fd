// Smith-Waterman screening beyond the paper (issue 26): affine gaps and Hopper's DPX instructions.
//
//   sw_gotoh       sw-gotoh: Gotoh's affine-gap DP, one pair per thread, 32-bit cells (linear gaps
//                  as O = E); the reference kernel, and the fall-back of the 16-bit kernels below.
//   sw_dpx_{pairs,tiles}_linear[_reach][_rounds]  sw-dpx: the linear-gap cell in 16-bit lanes on DPX
//                  instructions, for a list of pairs or an all-vs-all tile; _reach: threshold flags.
//                  Where every score fits a half's exact integers, its lanes hold halves and its
//                  additions run on the FMA pipe ("Half lanes", DPX_HALF).
//   sw_dpx_{pairs,tiles}_affine[_reach][_rounds]  sw-dpx-affine: Gotoh's cell in 16-bit lanes, likewise;
//                  with E floored at 0 where the scoring allows ("The floored affine cell", DPX_FLOOR_E).
//   sw_gather_rows the sequences of a code buffer as a padded matrix on the device.
//   sw_count_bases how many A, C, G, T each sequence of a code buffer holds (the composition bound).
//
// Scores (kernels/sw/cpu.py): match +c1, mismatch -c2 (N, code 4, mismatches everything), a gap of
// length L -(O + (L - 1) E) (parasail's convention):
//   E[i][j] = max(E[i][j-1] - E, H[i][j-1] - O),  F[i][j] = max(F[i-1][j] - E, H[i-1][j] - O),
//   H[i][j] = max(0, H[i-1][j-1] + w, E[i][j], F[i][j]).
//
// ---------------------------------------------------------------------------------------------
// The DPX kernels. Hopper's DPX instructions compute a three-way max (VIMNMX3) or an add and a max
// (VIADDMNMX) of two 16-bit lanes per 32-bit register in one instruction, optionally clamped at 0
// (NVIDIA, CUDA C++ Programming Guide, "DPX"; __vimax3_s16x2, __viaddmax_s16x2 and their _relu forms).
// They are written below as the PTX add.s16x2 / max.s16x2 that those intrinsics expand to, which
// ptxas fuses into VIADDMNMX and VIMNMX3. Like CUDASW++4.0 (Schmidt, Kallenborn, Chacon, Hundt
// 2024: "CUDASW++4.0: ultra-fast GPU-based Smith-Waterman protein sequence database search"), a
// register holds two 16-bit DP cells and a thread owns a tile of query rows, its row cells in
// registers, passing the tile's last row to the next thread with a warp shuffle as it moves along the
// target. CUDASW++4.0 puts one alignment in a group of threads with the two lanes holding neighbouring
// cells; here (many short pairs, not one query against a database) the two lanes are two different
// pairs, as GASAL2 and inter-task SIMD schemes (Rognes 2011) do, so the lanes never talk:
//
// * A group of G threads (G = 4..32, a power of two; a warp holds 32 / G groups) computes two pairs,
//   lane 0 (low half) and lane 1. Thread k of the group owns rows [k R, k R + R) of each round of
//   G R rows (R = DPX_ROWS, a compile-time constant); rounds after the first take their top row from
//   a global buffer that the group's last thread wrote. At step t thread k computes column j = t - k
//   of its R rows: the row above it arrives by __shfl_up_sync from thread k - 1, which computed it at
//   step t - 1 (and the diagonal one step earlier still).
// * Score (PAIRS; PRODUCT reads a profile, below): a byte permute (PRMT) per cell. For target column j
//   an 8-byte table (two registers): byte b (b = 0..3) of the first holds c1 + c2 if lane 0's target
//   base is b, else 0; the second does the
//   same for lane 1 (an N base: all 0); K << 8 code, with shl's clamp making code 4 (N) an all-0
//   table. Each thread reads its column's codes itself (round 1 built the table in the group's first
//   thread and shuffled it down, from a separate target-format pass). Each row keeps a selector:
//   its query base in the low nibble of each lane's low byte (lane 1 indexes bytes 4..7), and 8 in the
//   nibble of each lane's high byte. PRMT's sign-replicate mode (selector nibble >= 8) turns that high
//   byte into 0 (every table byte is < 128), and a query N takes selector 8 as well: s'' = s + c2 is
//   c1 + c2 on a match and 0 otherwise, in both lanes, in one instruction.
// * Biases keep every lane positive, so the constant subtractions below are plain 32-bit IADD/IMAD
//   that never borrow across lanes (and the compiler may put them on the FMA pipe): with
//   Z = H + B + c2 (the cell's result) and B = max(0, O - c2) (O = g for the linear cell):
//     P  = max(Y_diag + s'', B + c2)         one VIADDMNMX: max(H_diag + s, 0) + B + c2
//     linear:  Z = max(P, W_up, W_left)        one VIMNMX3, with W = Z - g kept per cell
//     affine:  Ec = max(Ec - E, A_left)        VIADDMNMX, A = Z - O kept per cell, Ec = E + B + c2
//              Fc = max(Fc - E, A_up)          VIADDMNMX
//              Z  = max(P, Ec, Fc)             VIMNMX3
//     Y = Z - c2 (the cell as the next diagonal), best = max(best, P): the largest H of a matrix is a
//     diagonal term (a gap's H is below the H it opened from), and P is off the rows' chain of dependent
//     instructions (DPX_BEST_FROM_P; 0 takes the maximum over Z, as before).
//   Per cell pair (PAIRS; PRODUCT, below, has no PRMT and one subtraction): PRMT + 2 DPX + 2
//   subtractions (linear; one where g = c2, as at the default 2/1/1: then W = Y) or PRMT + 4 DPX + 2
//   subtractions (affine; the floored cell below: 3 DPX and more IMADs), and a VIMNMX3 per two cells for
//   the running maximum. E and F never fall below -O, so Ec - E and every stored lane stay >= 0; the one
//   addition that can wrap is Y_diag + s''.
// * Saturation: the first cell whose Z exceeds 32767 - c1 is a diagonal term computed exactly (its
//   inputs are below that), and the running maximum keeps it; so a lane whose best is <= 32767 - c1
//   never wrapped and is exact, and any other is reported as -1 and rescored by sw_gotoh (the
//   launcher). No 8-bit kernel: Hopper has DPX for 16-bit lanes only; four 8-bit lanes would need
//   emulated SIMD maxima (several instructions each) and gain nothing.
// * Skewed steps (DPX_SKEW = S, one-round launches; the launcher's dpx_skew): thread k computes column
//   t - S k at step t, so the row above arrives from S steps before and a thread's consecutive steps
//   do not wait on each other (each step's first row otherwise waits on the step before's last row,
//   through the shuffle); each thread keeps its last S bottom rows. S = 1 is the scheme above.
//
// Codes (seqsift.alphabet): A0 C1 G2 T3, 4 for N and anything else; x is the shorter sequence of a
// pair (the rows), y the longer (the columns); see "The launch" below for where they are read.
// Plain C types only: NVRTC (CuPy) compiles this file without the C++ standard headers; plain nvcc
// compiles it too (nvcc -arch=sm_90 -c dpx.cu), for any GPU (see "The lane arithmetic").

typedef unsigned int u32;

#ifndef DPX_ROWS
#define DPX_ROWS 8
#endif
#ifndef DPX_GAP_IS_MISMATCH
#define DPX_GAP_IS_MISMATCH 0   // linear gaps with g = c2 (set by the launcher; see GO below)
#endif
#ifndef DPX_SKEW
#define DPX_SKEW 1              // one-round kernels: thread k computes column t - DPX_SKEW k at step t (1, 2, 4)
#endif
#ifndef DPX_HALF
#define DPX_HALF 0              // linear cells as half-precision numbers (set by the launcher; "Half lanes" below)
#endif
#ifndef DPX_FLOOR_E
#define DPX_FLOOR_E 0           // the affine cell with E floored at 0 (set by the launcher; "The floored affine cell")
#endif
#ifndef DPX_BEST_FROM_P
#define DPX_BEST_FROM_P 0       // the running maximum over the diagonal terms P, not Z (set by the launcher; "best")
#endif
#define DPX_FULL 0xffffffffu

// The lane arithmetic. Hopper (sm_90) has it in hardware: the PTX add.s16x2 and max.s16x2 below, which
// ptxas fuses into DPX instructions. PTX has no 16-bit-lane add or max before sm_90 (A100, A10, L4, T4,
// RTX cards), so there each lane is computed apart in 32-bit integers, the same wrapping add and signed
// max (a handful of instructions where DPX takes one): the kernels run, and score alike, on any GPU.
// DPX_EMULATE takes that path on Hopper too, so that the GPU tests run it. (CUDA's __vadd2 and __vmaxs2
// would not do for the tests: on sm_90 they compile to the same 16x2 instructions.)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && !defined(DPX_EMULATE)
// max(a + b, c) per signed 16-bit lane, a + b wrapping (VIADDMNMX; __viaddmax_s16x2).
__device__ __forceinline__ u32 dpx_addmax(u32 a, u32 b, u32 c) {
    u32 d;
    asm("{.reg .b32 t;\n\tadd.s16x2 t, %1, %2;\n\tmax.s16x2 %0, t, %3;}" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// max(a, b, c) per signed 16-bit lane (VIMNMX3; __vimax3_s16x2).
__device__ __forceinline__ u32 dpx_max3(u32 a, u32 b, u32 c) {
    u32 d;
    asm("{.reg .b32 t;\n\tmax.s16x2 t, %1, %2;\n\tmax.s16x2 %0, t, %3;}" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

__device__ __forceinline__ u32 dpx_max(u32 a, u32 b) {
    u32 d;
    asm("max.s16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
    return d;
}
#else
// Each 16-bit lane apart: a + b wrapping, and max as signed 16-bit numbers (the high lane's sign comes
// with the arithmetic shift, the low lane's with the cast to short).
__device__ __forceinline__ u32 lanes_add(u32 a, u32 b) { return ((a + b) & 0xffffu) | (((a >> 16) + (b >> 16)) << 16); }
__device__ __forceinline__ u32 dpx_max(u32 a, u32 b) {
    const int low = max((int)(short)(a & 0xffffu), (int)(short)(b & 0xffffu));
    const int high = max((int)a >> 16, (int)b >> 16);
    return ((u32)low & 0xffffu) | ((u32)high << 16);
}
__device__ __forceinline__ u32 dpx_addmax(u32 a, u32 b, u32 c) { return dpx_max(lanes_add(a, b), c); }
__device__ __forceinline__ u32 dpx_max3(u32 a, u32 b, u32 c) { return dpx_max(dpx_max(a, b), c); }
#endif

// PRMT in its default mode: a selector nibble >= 8 replicates the sign of the byte it names
// (__byte_perm masks those bits away, so it is written in PTX).
__device__ __forceinline__ u32 dpx_prmt(u32 lo, u32 hi, u32 sel) {
    u32 d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(lo), "r"(hi), "r"(sel));
    return d;
}

// value << shift with shifts >= 32 giving 0 (PTX shl clamps the shift).
__device__ __forceinline__ u32 dpx_shl(u32 value, u32 shift) {
    u32 d;
    asm("shl.b32 %0, %1, %2;" : "=r"(d) : "r"(value), "r"(shift));
    return d;
}

__device__ __forceinline__ u32 pack2(int v) { return ((u32)v & 0xffffu) * 0x10001u; }

// a * b + c, one IMAD on the FMA pipe: ptxas sees a PTX mad of registers, whose values it does not know, and
// keeps it (C's a * b + c with b = 0 or 1 it may turn back into a select on the ALU pipe).
__device__ __forceinline__ u32 dpx_mad(u32 a, u32 b, u32 c) {
    u32 d;
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

// The row selector of dpx_prmt for query codes a (lane 0) and b (lane 1).
__device__ __forceinline__ u32 dpx_selector(unsigned int a, unsigned int b) {
    const u32 lo = a < 4 ? a : 8u;
    const u32 hi = b < 4 ? 4u + b : 8u;
    return (0x80u | lo) | ((0x80u | hi) << 8);
}

// ---------------------------------------------------------------------------------------------
// Half lanes (DPX_HALF, linear gaps on Hopper). The two 16-bit lanes of a register may hold IEEE
// half-precision numbers instead of biased integers: a half holds every integer of magnitude <= 2048
// exactly, and a sum of two such integers whose value is <= 2048 is exact too. So a linear cell whose
// values stay within that (the launcher's dpx_half_admits: c1 (min(m, n) + 1) + c1 + c2 + g <= 2048, so
// there is no saturation to handle) can do its additions on the FMA pipe as half arithmetic, leaving the
// ALU pipe (the integer cell's limit, benchmarks/README.md) only its maxima:
//   P = relu(W_diag + s')       HFMA2.RELU (W_diag x 1 + s', clamped at 0): FMA pipe, in place of a VIADDMNMX
//   Z = max(P, W_up, W_left)    VIMNMX3 on the halves' bits, as signed 16-bit integers: for halves >= +0 the
//                               bits order as the numbers do, and every W below 0 (W >= -g) has its sign bit
//                               set, so it orders below P >= +0, which is always one of the three
//   W = Z - g                   HADD2: FMA pipe, in place of the IMAD
//   best = max(best, Z, Z')     VIMNMX3 on halves >= +0, as above
// Lanes hold H itself (no bias): H = 0 is +0, and the diagonal's and gaps' values of H = 0 are -g. ALU
// instructions per cell pair: 1.5 (a VIMNMX3 and half of one) where the integer cell takes 2.5.
//
// The floored affine cell (DPX_FLOOR_E). Gotoh's cell takes four maxima a cell pair on the ALU pipe: P's
// floor at 0 (VIADDMNMX), E's and F's (VIADDMNMX each) and H's (VIMNMX3). E' = max(E, 0) obeys
//   E'[i][j] = max(E'[i][j-1] - E, H[i][j-1] - O, 0)       (E's recurrence above, and -E < 0)
// and H = max(0, diag + w, E, F) = max(diag + w, E', F), so the 0 floor moves from P into E's maximum,
// which then has three inputs and no add: E's subtraction and the diagonal's add become IMADs on the FMA
// pipe, and the ALU pipe keeps three maxima a cell pair (and half the running maximum's), not four:
//   P  = Y_diag + s''   (tiles: W_diag + (s + O))   IMAD
//   Ec = max(Ec - E, A_left, B + c2)                IMAD + VIMNMX3
//   Fc = max(Fc - E, A_up)                           VIADDMNMX, as before
//   Z  = max(P, Ec, Fc)                              VIMNMX3
// A 32-bit add never carries or borrows across lanes here where every operand lane is >= 0 and each sum
// stays under 65536: Ec >= B + c2 >= E (the launcher's dpx_floor_admits), Y and W >= 0, and s'' >= 0
// (tiles: s + O >= 0, so O >= c2). Every lane of P stays under 32768 + c1, so the saturation argument
// below holds as it is: a P past 32767 reads as negative and loses to Ec, but only after the first cell
// past 32767 - c1, which was computed exactly from inputs under that.

// relu(a + b) per half lane (HFMA2.RELU a x 1.0 + b).
__device__ __forceinline__ u32 half_relu_add(u32 a, u32 b) {
    u32 d;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("fma.rn.relu.f16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(0x3C003C00u), "r"(b));
#else
    d = 0u;   // never launched: the launcher runs half lanes on sm_90 only
#endif
    return d;
}

// a + b per half lane (HADD2).
__device__ __forceinline__ u32 half_add(u32 a, u32 b) {
    u32 d;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
#else
    d = 0u;
#endif
    return d;
}

// The half of the integer v (|v| <= 2048: exact) in both lanes.
__device__ __forceinline__ u32 half_pair(int v) {
    unsigned short h = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.f16.s32 %0, %1;" : "=h"(h) : "r"(v));
#endif
    return (u32)h * 0x10001u;
}

// The integer a half lane holds (the lane's 16 bits).
__device__ __forceinline__ int half_value(u32 bits) {
    int v = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned short h = (unsigned short)bits;
    asm("cvt.rni.s32.f16 %0, %1;" : "=r"(v) : "h"(h));
#endif
    return v;
}

// The row selector of dpx_prmt for half lanes: the table byte (the high byte of the half of c1 + c2, whose
// low byte is 0) into each lane's high byte, and 0 (byte 0's sign, replicated) into its low byte.
__device__ __forceinline__ u32 dpx_selector_half(unsigned int a, unsigned int b) {
    const u32 lo = a < 4 ? a : 8u;
    const u32 hi = b < 4 ? 4u + b : 8u;
    return 0x8u | (lo << 4) | (0x8u << 8) | (hi << 12);
}

// ---------------------------------------------------------------------------------------------
// The launch (issue 26, round 2). Sequences are read where they lie, in one buffer of codes on the
// device, by (start, length); nothing is padded per pair on the host:
//
// * PRODUCT (all-vs-all tiles): block (bx, by) aligns target y[by] against 2 x (threads / G) of the
//   x sequences. The scores come from shared memory, not from a PRMT on the ALU pipe: at the start of
//   each round a thread writes its rows' score profile, for each target code (A, C, G, T, N) the
//   cell pairs' scores of its R rows in ceil(R / 4) 16-byte words (the query profile of Rognes and
//   Seeberg 2000 and CUDASW++, per thread), and the block converts its target, DPX_CHUNK columns
//   at a time, to each column's profile offset (the target-format pass of round 1, fused into the
//   kernel). A step then loads its column's R scores with ceil(R / 4) LDS.128 on the memory pipe.
//   The tiles take the diagonal from W = Z - O, the value each cell keeps for its gaps anyway, not
//   from Y = Z - c2: the profile holds s + O (c1 + O on a match, O - c2 else: P = max(W_diag + s + O,
//   B + c2) is the same P). So a cell keeps one value, not two (one IMAD fewer per cell pair), and the
//   value passed down the group and through the boundary row is W. Per cell pair: 2 DPX, an IMAD,
//   and the running maximum's half VIMNMX3. (PAIRS keeps the byte table and Y: each lane's target
//   differs there, so each thread would need a profile per pair of columns.)
// * PAIRS (x[p] against y[p]): each thread converts its own column's two target codes, read from
//   rows that hold N (code 4) for DPX_GAP codes before their start and past the longest row of the
//   launch (the launcher gathers them so on the device).
//
// The step loop has no range checks. Columns before 0 (thread k at steps t < k) and past a target's
// end are all-N columns: an N column computed from cells that are all at most some value v leaves
// cells at most v (P = max(Z_diag - c2, H 0), the gaps only subtract), so it changes no maximum, and
// from the all-zero state it leaves the all-zero state, which is what column 0 must see on its left.
// Rows past an x's length are N rows, likewise. So every thread runs every step of the round alike:
// the 4-step unrolled body is the cells, one shuffle per value passed down, a table read and the
// profile's loads (PRODUCT) or two code loads (PAIRS), and for the group's first thread the row above (an
// IMAD in one-round launches: see "The step's own work" in dpx_tile_body; a select with rounds).
//
// REACH (threshold T, the flag kernels): the same cells; every DPX_EXIT_STEPS steps the warp votes,
// and once every pair of the warp has a lane >= T (biased) it stops: such a pair's first cell >= T
// had every input below T, so it was computed exactly, and its flag is final (out = 1, else 0).
// ---------------------------------------------------------------------------------------------

#define DPX_GAP 64          // PAIRS: N codes each y row has before its start and past the launch's longest row
#define DPX_CHUNK 1024      // PRODUCT: target columns per shared-memory table chunk (a multiple of 4)
#define DPX_LEAD 32         // boundary row columns before column 0: thread k writes column t - k, k < 32
#define DPX_TABLE_LEAD (32 * DPX_SKEW)   // table words before a chunk's first column: thread k reads t - S k
#define DPX_TAIL 8          // and after its last: the 4-step body runs up to 3 steps past the end
#define DPX_EXIT_STEPS 32   // REACH: steps between two votes of a warp (a power of two, a multiple of 4)
#define DPX_BOUND_PAD 80    // boundary row: columns kept beyond n (the lead, the unroll and the prefetch)
#define DPX_TABLE_WORDS (DPX_TABLE_LEAD + DPX_CHUNK + DPX_TAIL)   // PRODUCT: 4,256 bytes at S = 1, a multiple of 16
#define DPX_QUADS ((DPX_ROWS + 3) / 4)                      // PRODUCT: a thread's rows in 16-byte profile loads
#define DPX_BLOCK 256                                       // threads per block (the launch, __launch_bounds__)

template <bool AFFINE, bool PRODUCT, bool REACH, bool ROUNDS>
__device__ __forceinline__ void dpx_tile_body(const unsigned char *__restrict__ codes,
                                              const long long *__restrict__ x_start, const int *__restrict__ x_len,
                                              long long x_count, const long long *__restrict__ y_start,
                                              const int *__restrict__ y_len, int rounds, int group, int c1, int c2,
                                              int gap_open, int gap_extend, int bias, int reach_z,
                                              long long bound_row, u32 *__restrict__ boundary,
                                              int *__restrict__ out, long long out_stride) {
    // PRODUCT: the table of columns [c0 - DPX_LEAD, c0 + DPX_CHUNK + DPX_TAIL) (each column's profile offset),
    // then the threads' score profiles: [target code 0..4][quad of rows][thread], 4 cell pairs each.
    extern __shared__ __align__(16) u32 dpx_shared[];
    u32 *dpx_table = dpx_shared;
    const uint4 *profile = (const uint4 *)(dpx_shared + DPX_TABLE_WORDS) + threadIdx.x;
    const int R = DPX_ROWS;
    const int lane = threadIdx.x & 31;
    const int k = lane & (group - 1);                                   // rank in the group
    const long long gid = (long long)blockIdx.x * (blockDim.x / group) + threadIdx.x / group;
    const long long lane_pairs = (x_count + 1) / 2;                     // groups needed along x
    const bool real = gid < lane_pairs;                                 // whole warps run; spare groups idle
    const long long xa = real ? 2 * gid : 0;
    const long long xb = real && 2 * gid + 1 < x_count ? 2 * gid + 1 : xa;
    const long long ya_index = PRODUCT ? (long long)blockIdx.y : xa;
    const long long yb_index = PRODUCT ? (long long)blockIdx.y : xb;
    int n = PRODUCT ? y_len[ya_index] : max(y_len[ya_index], y_len[yb_index]);
    if (!PRODUCT) {   // the warp's shuffles need one step count for all its groups
        for (int offset = 16; offset > 0; offset >>= 1) n = max(n, __shfl_xor_sync(DPX_FULL, n, offset));
    }
    // Thread k computes column t - S k at step t. S = 1: the row above arrives from the step before, so a step's
    // first row waits on the last row of the step before; S = 2 or 4 (one-round kernels, DPX_SKEW) lets a
    // thread's consecutive steps overlap, the row above arriving from S steps before.
    constexpr int S = ROUNDS ? 1 : DPX_SKEW;
    const int steps = n + S * (group - 1);

    constexpr bool HALF = DPX_HALF && !AFFINE;    // half lanes (above): no bias, H itself
    const u32 K = HALF ? (half_pair(c1 + c2) & 0xff00u) >> 8 : (u32)(c1 + c2);   // s'' on a match (its table byte)
    const u32 BASE = HALF ? 0u : pack2(bias + c2);   // Z of H = 0
    const u32 C2 = HALF ? half_pair(-c2) : pack2(c2);   // HALF: added, not subtracted
    // g for the linear cell. DPX_GAP_IS_MISMATCH (g = c2, the 2/1/1 default): then W = Z - g is Y = Z - c2, and
    // PAIRS keeps one value a cell where it keeps two (the compiler sees GO = C2 and merges them).
    const u32 GO = DPX_GAP_IS_MISMATCH && !AFFINE ? C2 : (HALF ? half_pair(-gap_open) : pack2(gap_open));
    const u32 NGE = pack2(-gap_extend);
    constexpr bool FLOOR = AFFINE && DPX_FLOOR_E;   // the floored affine cell (above)
    const u32 GE = pack2(gap_extend);
    const u32 Y0 = HALF ? half_pair(-c2) : pack2(bias);                   // Y of H = 0
    const u32 G0 = HALF ? half_pair(-gap_open) : pack2(bias + c2 - gap_open);   // W / A of H = 0; Ec / Fc of E = F = -O
    const u32 D0 = PRODUCT ? G0 : Y0;             // what the diagonal reads of H = 0 (passed down, boundary)
    // Affine: the constant subtractions as z * one - C, an IMAD on the FMA pipe, which the ALU pipe's
    // DPX instructions leave free (as plain subtractions ptxas put half of them on the ALU pipe as
    // VIADD, SASS of R = 16: 3.48 ALU instructions per cell instead of 3.05). one is 1 (the launch has
    // 256 threads), a value ptxas cannot see. The linear cell's subtractions stay IMADs as they are.
    const u32 one = AFFINE ? blockDim.x >> 8 : 1u;
    // The step's own work, off the ALU pipe: the group's first thread takes the row above a one-round launch
    // (H = 0's) as upY x inner + top_y, an IMAD, where a select would take the ALU pipe; and the PRODUCT
    // table holds each column's profile offset in bytes, so that its address is one add (affine: an IMAD).
    // SASS, affine tiles at S = 4: 1.867 ALU instructions a cell instead of 1.945 (benchmarks/README.md).
    const u32 inner = k != 0 ? 1u : 0u;
    const u32 top_y = k != 0 ? 0u : D0, top_f = k != 0 ? 0u : G0;
    constexpr u32 TABLE_UNIT = DPX_QUADS * DPX_BLOCK * 16;   // PRODUCT: bytes of a target code's profile
    const unsigned char *xa_codes = codes + x_start[xa];
    const unsigned char *xb_codes = codes + x_start[xb];
    const int xa_len = x_len[xa], xb_len = x_len[xb];
    const unsigned char *ya_codes = codes + y_start[ya_index] - S * k;   // PAIRS: column t - S k is ya_codes[t]
    const unsigned char *yb_codes = codes + y_start[yb_index] - S * k;
    const long long slot = PRODUCT ? (long long)blockIdx.y * lane_pairs + gid : gid;
    u32 *bound = boundary + (real ? slot : 0) * 2 * bound_row;   // [2 rows][columns][Y, Fc], rounds > 1 only

    u32 best = BASE;
    bool done = false;   // REACH: every pair of the warp decided (warp-uniform)
    for (int round = 0; round < rounds; ++round) {
        u32 sel[DPX_ROWS], Y[DPX_ROWS], G[DPX_ROWS], EC[DPX_ROWS];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int row = (round * group + k) * R + r;
            if (!PRODUCT) {
                const unsigned int a = row < xa_len ? xa_codes[row] : 4u, b = row < xb_len ? xb_codes[row] : 4u;
                sel[r] = HALF ? dpx_selector_half(a, b) : dpx_selector(a, b);
            }
            Y[r] = Y0;
            G[r] = G0;
            EC[r] = FLOOR ? BASE : G0;   // E = -O, or (FLOOR) E' = max(E, 0) = 0
        }
        if (PRODUCT) {   // this thread's profile of its rows: s + O in each lane, for each target code
#pragma unroll 1
            for (int q = 0; q < DPX_QUADS; ++q) {
                unsigned int a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int row = (round * group + k) * R + 4 * q + i;
                    a[i] = 4 * q + i < R && row < xa_len ? xa_codes[row] : 4u;
                    b[i] = 4 * q + i < R && row < xb_len ? xb_codes[row] : 4u;
                }
#pragma unroll
                for (int y = 0; y < 5; ++y) {
                    u32 w[4];
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int sa = a[i] == (u32)y && y < 4 ? c1 + gap_open : gap_open - c2;
                        const int sb = b[i] == (u32)y && y < 4 ? c1 + gap_open : gap_open - c2;
                        w[i] = HALF ? (half_pair(sa) & 0xffffu) | (half_pair(sb) << 16)
                                    : ((u32)sa & 0xffffu) | ((u32)sb << 16);
                    }
                    ((uint4 *)profile)[(y * DPX_QUADS + q) * DPX_BLOCK] = make_uint4(w[0], w[1], w[2], w[3]);
                }
            }
        }
        // Column j of a boundary row is at [2 (j + DPX_LEAD)]: the first thread reads column t at step t,
        // the last thread writes column t - k.
        const u32 *above = bound + ((round + 1) & 1) * bound_row + 2 * DPX_LEAD;
        u32 *below = bound + (round & 1) * bound_row + 2 * (DPX_LEAD - k);
        // (ROUNDS false: one round, compiled without the boundary row's loads, stores and addresses)
        const bool reads_above = ROUNDS && k == 0 && round > 0;
        const bool writes = ROUNDS && real && k == group - 1 && round + 1 < rounds;
        // This thread's last row at its columns of the last S steps (step t's at [t % S]): what the next thread reads
        u32 botY[S], botF[S];
#pragma unroll
        for (int i = 0; i < S; ++i) {
            botY[i] = D0;
            botF[i] = G0;
        }
        u32 diag_in = D0;            // Y (PRODUCT: W) of the row above at column j - 1
        u32 aboveY[4], aboveF[4], nextY[4], nextF[4];   // the first thread's row above: this block, the next
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            nextY[u] = reads_above ? above[2 * u] : D0;
            nextF[u] = AFFINE && reads_above ? above[2 * u + 1] : G0;
        }
        for (int c0 = 0; c0 < steps; c0 += PRODUCT ? DPX_CHUNK : steps) {
            const int c_end = PRODUCT ? min(steps, c0 + DPX_CHUNK) : steps;
            if (PRODUCT) {   // the target's profile offsets for this chunk (N outside [0, n))
                __syncthreads();
                const unsigned char *target = codes + y_start[ya_index];
                for (int w = threadIdx.x; w < DPX_TABLE_WORDS; w += blockDim.x) {
                    const int j = c0 - DPX_TABLE_LEAD + w;
                    dpx_table[w] = (j >= 0 && j < n ? min((u32)target[j], 4u) : 4u) * TABLE_UNIT;
                }
                __syncthreads();
            }
            const u32 *table = dpx_table + DPX_TABLE_LEAD - S * k - c0;   // PRODUCT: column t - S k is table[t]
            for (int t0 = c0; t0 < c_end && !done; t0 += 4) {
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    aboveY[u] = nextY[u];
                    aboveF[u] = nextF[u];
                    if (reads_above) {   // prefetched a block ahead: the boundary row is in global memory
                        nextY[u] = above[2 * (t0 + 4 + u)];
                        if (AFFINE) nextF[u] = above[2 * (t0 + 4 + u) + 1];
                    }
                }
#pragma unroll
                for (int u = 0; u < 4; ++u) {
                    const int t = t0 + u;
                    u32 upY = __shfl_up_sync(DPX_FULL, botY[u % S], 1, group);   // thread k - 1's, S steps ago
                    u32 upF = AFFINE ? __shfl_up_sync(DPX_FULL, botF[u % S], 1, group) : 0u;
                    if (ROUNDS) {
                        if (k == 0) {   // the group's first thread: the row above the round
                            upY = aboveY[u];
                            if (AFFINE) upF = aboveF[u];
                        }
                    } else {   // one round: the row above is H = 0's, which the first thread takes by an IMAD
                        upY = dpx_mad(upY, inner, top_y);
                        if (AFFINE) upF = dpx_mad(upF, inner, top_f);
                    }
                    u32 ta = 0, tb = 0, score[DPX_QUADS * 4];
                    if (PRODUCT) {   // the column's profile: 4 cell pairs a load
                        const uint4 *column = (const uint4 *)((const char *)profile + table[t] * one);   // bytes
#pragma unroll
                        for (int q = 0; q < DPX_QUADS; ++q) {
                            const uint4 v = column[q * DPX_BLOCK];
                            score[4 * q] = v.x;
                            score[4 * q + 1] = v.y;
                            score[4 * q + 2] = v.z;
                            score[4 * q + 3] = v.w;
                        }
                    } else {   // shl clamps: code 4 (N, and the padding) shifts K out, an all-0 table
                        ta = dpx_shl(K, (u32)ya_codes[t] << 3);
                        tb = dpx_shl(K, (u32)yb_codes[t] << 3);
                    }
                    // W (linear) or A (affine) of the row above: Z - O (PAIRS: from its Y, Z = Y + c2; HALF with
                    // g = c2 adds +0, which leaves every value as it is)
                    u32 gup = PRODUCT ? upY : (HALF ? half_add(upY, half_pair(c2 - gap_open)) : upY + C2 - GO);
                    u32 fc = upF;
                    u32 z = BASE;
                    u32 term_prev = BASE;   // the running maximum's term of the row before (P or Z)
                    // The diagonal terms first, from the rows' values of column j - 1: then each Y[r] is
                    // dead once read and the new one takes its register (round 1, SASS of run 1).
                    u32 P[DPX_ROWS];
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        const u32 diag = r == 0 ? diag_in : (PRODUCT ? G[r - 1] : Y[r - 1]);
                        const u32 s = PRODUCT ? score[r] : dpx_prmt(ta, tb, sel[r]);
                        P[r] = HALF ? half_relu_add(diag, s) : FLOOR ? diag * one + s : dpx_addmax(diag, s, BASE);
                    }
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        if (AFFINE) {
                            EC[r] = FLOOR ? dpx_max3(EC[r] * one - GE, G[r], BASE) : dpx_addmax(EC[r], NGE, G[r]);
                            fc = dpx_addmax(fc, NGE, gup);
                            z = dpx_max3(P[r], EC[r], fc);
                        } else {
                            z = dpx_max3(P[r], gup, G[r]);
                        }
                        if (HALF) {
                            if (!PRODUCT) Y[r] = half_add(z, C2);
                            G[r] = half_add(z, GO);
                        } else {
                            if (!PRODUCT) Y[r] = z * one - C2;
                            G[r] = z * one - GO;
                        }
                        gup = G[r];
                        const u32 term = DPX_BEST_FROM_P ? P[r] : z;
                        if (r & 1) best = dpx_max3(best, term_prev, term);
                        term_prev = term;
                    }
                    if (R & 1) best = dpx_max(best, term_prev);
                    botY[u % S] = PRODUCT ? G[R - 1] : Y[R - 1];
                    botF[u % S] = fc;
                    diag_in = upY;
                    if (writes) {
                        below[2 * t] = botY[0];   // (S = 1 with rounds)
                        if (AFFINE) below[2 * t + 1] = botF[0];
                    }
                }
                if (REACH && ((t0 + 4) & (DPX_EXIT_STEPS - 1)) == 0) {
                    // Decided: a lane of the group >= T in both pairs (or a spare group). Stop when the
                    // whole warp is: its shuffles need every lane.
                    const unsigned reached_a = __ballot_sync(DPX_FULL, (int)(short)(best & 0xffffu) >= reach_z);
                    const unsigned reached_b = __ballot_sync(DPX_FULL, (int)(short)(best >> 16) >= reach_z);
                    const unsigned members = (group == 32 ? DPX_FULL : ((1u << group) - 1u)) << (lane & ~(group - 1));
                    done = __all_sync(DPX_FULL, !real || ((reached_a & members) != 0 && (reached_b & members) != 0));
                }
            }
        }
        if (writes && !done) {   // columns the last thread did not reach: the zero state (the next round's
            // first thread reads up to 4 steps past its loop, and prefetches 4 more)
            const int written = ((steps + 3) & ~3) - k;   // columns < written were written above
            for (int j = written; j < ((steps + 3) & ~3) + 8; ++j) {
                below[2 * (j + k)] = D0;
                if (AFFINE) below[2 * (j + k) + 1] = G0;
            }
        }
        __syncwarp();   // the next round's first thread reads what this round's last one wrote
    }
    // The group's maximum, then each lane's score (-1 where it may have wrapped) or flag.
    for (int offset = group >> 1; offset > 0; offset >>= 1) best = dpx_max(best, __shfl_xor_sync(DPX_FULL, best, offset, group));
    if (real && k == 0) {
        // Each lane as a signed 16-bit integer: the biased Z, or (HALF) the bits of a half >= +0, which order
        // as its value does; REACH compares them with reach_z, the same form of T (the launcher's reach_z).
        const int za = (int)(short)(best & 0xffffu);
        const int zb = (int)(short)(best >> 16);
        const long long column = PRODUCT ? (long long)blockIdx.y : 0;
        if (REACH) {
            out[xa * out_stride + column] = za >= reach_z;
            if (xb != xa) out[xb * out_stride + column] = zb >= reach_z;
        } else if (HALF) {   // H itself; the launcher's bound keeps every score exact, so none is past the limit
            const int ha = half_value(best & 0xffffu), hb = half_value(best >> 16);
            out[xa * out_stride + column] = ha > 2048 - c1 ? -1 : ha;
            if (xb != xa) out[xb * out_stride + column] = hb > 2048 - c1 ? -1 : hb;
        } else {
            const int base = bias + c2;
            const int limit = 32767 - c1;
            out[xa * out_stride + column] = za > limit ? -1 : za - base;
            if (xb != xa) out[xb * out_stride + column] = zb > limit ? -1 : zb - base;
        }
    }
}

// One kernel per mode: sw_dpx_{pairs,tiles}_{linear,affine}[_reach][_rounds]. A module is compiled for one
// gap model (DPX_AFFINE) and one DPX_ROWS, so that each compilation builds only the kernels a job runs.
// _rounds: x longer than one round of a group (G R rows). Without it the kernel has no boundary row:
// none of its loads, stores and 64-bit addresses in the step loop (SASS of the R = 16 linear tiles'
// 4-step body: 267 instructions, where the one kernel for both had 287, 4 LDG and 4 STG among them).
#define DPX_KERNEL(NAME, AFFINE, PRODUCT, REACH, ROUNDS)                                                   \
    extern "C" __global__ void __launch_bounds__(256, 2)                                                   \
        NAME(const unsigned char *codes, const long long *x_start, const int *x_len, long long x_count,   \
             const long long *y_start, const int *y_len, int rounds, int group, int c1, int c2,            \
             int gap_open, int gap_extend, int bias, int reach_z, long long bound_row,                     \
             unsigned int *boundary, int *out, long long out_stride) {                                     \
        dpx_tile_body<AFFINE, PRODUCT, REACH, ROUNDS>(codes, x_start, x_len, x_count, y_start, y_len,       \
                                                      ROUNDS ? rounds : 1, group, c1, c2, gap_open,         \
                                                      gap_extend, bias, reach_z, bound_row, boundary, out,  \
                                                      out_stride);                                           \
    }

#ifndef DPX_AFFINE
#define DPX_AFFINE 0
#endif
// The four modes of a gap model (GAP: linear or affine), one-round (SUFFIX empty) or _rounds. The one-round
// kernels come first: NVVM's code for a kernel can depend on the order they are instantiated in.
#define DPX_MODE_KERNELS(GAP, AFFINE, SUFFIX, ROUNDS)                                                      \
    DPX_KERNEL(sw_dpx_pairs_##GAP##SUFFIX, AFFINE, false, false, ROUNDS)                                   \
    DPX_KERNEL(sw_dpx_pairs_##GAP##_reach##SUFFIX, AFFINE, false, true, ROUNDS)                            \
    DPX_KERNEL(sw_dpx_tiles_##GAP##SUFFIX, AFFINE, true, false, ROUNDS)                                    \
    DPX_KERNEL(sw_dpx_tiles_##GAP##_reach##SUFFIX, AFFINE, true, true, ROUNDS)

#if DPX_AFFINE
DPX_MODE_KERNELS(affine, true, , false)
DPX_MODE_KERNELS(affine, true, _rounds, true)
#else
DPX_MODE_KERNELS(linear, false, , false)
DPX_MODE_KERNELS(linear, false, _rounds, true)
#endif

// --------------------------------------------------------------------------------------------
// sw_gather_rows: rows[p][c] = codes[start[p] + c - lead] where 0 <= c - lead < len[p], else N (4):
// sequences read from the shared buffer into a padded matrix on the device (the PAIRS rows above, with
// lead = DPX_GAP, and the code matrices of the kernels without a buffer call shape, with lead = 0).
// --------------------------------------------------------------------------------------------
extern "C" __global__ void sw_gather_rows(const unsigned char *__restrict__ codes, const long long *__restrict__ start,
                                          const int *__restrict__ len, long long rows, int width, int lead,
                                          unsigned char *__restrict__ out) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * width) return;
    const long long p = i / width;
    const int c = (int)(i - p * width) - lead;
    out[i] = c >= 0 && c < len[p] ? codes[start[p] + c] : (unsigned char)4;
}

// --------------------------------------------------------------------------------------------
// sw-gotoh: one pair per thread, 32-bit cells. Codes position-major (x[i * pairs + p]) so that a
// warp's loads are coalesced; each sweep takes GT_COLS target columns down all m rows with the
// columns' H and F in registers; scratch carries H[i][j0 - 1] and E[i][j0 - 1] between sweeps.
// --------------------------------------------------------------------------------------------
#define GT_COLS 8

extern "C" __global__ void __launch_bounds__(128)
    sw_gotoh(const unsigned char *__restrict__ x, const unsigned char *__restrict__ y, long long pairs, int m, int n,
             int c1, int c2, int gap_open, int gap_extend, int *__restrict__ scratch_h, int *__restrict__ scratch_e,
             int *__restrict__ scores) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pairs) return;
    for (int i = 0; i < m; ++i) {
        scratch_h[(long long)i * pairs + p] = 0;            // H[i][-1]
        scratch_e[(long long)i * pairs + p] = -gap_open;    // E[i][-1] (-inf, see cpu.py)
    }
    int best = 0;
    for (int j0 = 0; j0 < n; j0 += GT_COLS) {
        int yc[GT_COLS], hup[GT_COLS], fup[GT_COLS];
#pragma unroll
        for (int c = 0; c < GT_COLS; ++c) {
            // Columns past n compare against a code that matches nothing; their cells only lose score
            // from real ones and are never read back.
            yc[c] = j0 + c < n ? (int)y[(long long)(j0 + c) * pairs + p] : 5;
            hup[c] = 0;            // H[-1][j]
            fup[c] = -gap_open;    // F[-1][j]
        }
        int corner = 0;   // H[i-1][j0-1]
        for (int i = 0; i < m; ++i) {
            const int xi = x[(long long)i * pairs + p];
            const int on_match = xi < 4 ? c1 : -c2;   // N never matches, itself included
            int left = scratch_h[(long long)i * pairs + p];
            int e = scratch_e[(long long)i * pairs + p];
            const int next_corner = left;
            int d = corner;
#pragma unroll
            for (int c = 0; c < GT_COLS; ++c) {
                const int w = xi == yc[c] ? on_match : -c2;
                e = max(e - gap_extend, left - gap_open);
                const int f = max(fup[c] - gap_extend, hup[c] - gap_open);
                const int h = max(max(d + w, 0), max(e, f));
                d = hup[c];
                hup[c] = h;
                fup[c] = f;
                left = h;
                best = max(best, h);
            }
            scratch_h[(long long)i * pairs + p] = left;
            scratch_e[(long long)i * pairs + p] = e;
            corner = next_corner;
        }
    }
    scores[p] = best;
}

// --------------------------------------------------------------------------------------------
// sw_count_bases: counts[k][b] = how many codes b (0..3: A, C, G, T) codes[start[k]:+len[k]] holds; N
// and other codes (4) are not counted. The input of the threshold's composition bound
// (kernels/sw/__init__.py, composition_bound), so that a GPU screen needs no host pass over its codes.
// One warp per sequence: its lanes read the codes 32 at a time, side by side, each lane counts its own,
// and the warp sums the four counts. (A thread per sequence, as before, had a warp's loads a sequence's
// length apart: 32,768 sequences of 8,192 took 1.20 ms on an H200, a warp each 0.28 ms.)
// --------------------------------------------------------------------------------------------
extern "C" __global__ void sw_count_bases(const unsigned char *__restrict__ codes, const long long *__restrict__ start,
                                          const long long *__restrict__ len, long long count,
                                          int *__restrict__ counts) {
    const long long k = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;   // the warp's sequence
    const int lane = threadIdx.x & 31;
    if (k >= count) return;   // whole warps: k is the same for the 32 lanes
    const unsigned char *sequence = codes + start[k];
    const long long length = len[k];
    int a = 0, c = 0, g = 0, t = 0;
    for (long long q = lane; q < length; q += 32) {
        const unsigned char code = sequence[q];
        a += code == 0;
        c += code == 1;
        g += code == 2;
        t += code == 3;
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        a += __shfl_xor_sync(DPX_FULL, a, offset);
        c += __shfl_xor_sync(DPX_FULL, c, offset);
        g += __shfl_xor_sync(DPX_FULL, g, offset);
        t += __shfl_xor_sync(DPX_FULL, t, offset);
    }
    if (lane == 0) {
        counts[4 * k] = a;
        counts[4 * k + 1] = c;
        counts[4 * k + 2] = g;
        counts[4 * k + 3] = t;
    }
}
