// Smith-Waterman screening beyond the paper (issue 26): affine gaps and Hopper's DPX instructions.
//
//   sw_gotoh       sw-gotoh: Gotoh's affine-gap DP, one pair per thread, 32-bit cells (linear gaps
//                  as O = E); the reference kernel, and the fall-back of the 16-bit kernels below.
//   sw_dpx_linear  sw-dpx: the linear-gap cell in 16-bit lanes on DPX instructions.
//   sw_dpx_affine  sw-dpx-affine: Gotoh's cell in 16-bit lanes on DPX instructions.
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
// * Score: a byte permute (PRMT) per cell. For target column j the group's first thread builds an
//   8-byte table (two registers): byte b (b = 0..3) of the first holds c1 + c2 if lane 0's target base
//   is b, else 0; the second does the same for lane 1 (an N base: all 0). Each row keeps a selector:
//   its query base in the low nibble of each lane's low byte (lane 1 indexes bytes 4..7), and 8 in the
//   nibble of each lane's high byte. PRMT's sign-replicate mode (selector nibble >= 8) turns that high
//   byte into 0 (every table byte is < 128), and a query N takes selector 8 as well: s'' = s + c2 is
//   c1 + c2 on a match and 0 otherwise, in both lanes, in one instruction. The table moves down the
//   group by shuffles with the row, so each column's table is built once per group.
// * Biases keep every lane positive, so the constant subtractions below are plain 32-bit IADD/IMAD
//   that never borrow across lanes (and the compiler may put them on the FMA pipe): with
//   Z = H + B + c2 (the cell's result) and B = max(0, O - c2) (O = g for the linear cell):
//     P  = max(Y_diag + s'', B + c2)         one VIADDMNMX: max(H_diag + s, 0) + B + c2
//     linear:  Z = max(P, W_up, W_left)        one VIMNMX3, with W = Z - g kept per cell
//     affine:  Ec = max(Ec - E, A_left)        VIADDMNMX, A = Z - O kept per cell, Ec = E + B + c2
//              Fc = max(Fc - E, A_up)          VIADDMNMX
//              Z  = max(P, Ec, Fc)             VIMNMX3
//     Y = Z - c2 (the cell as the next diagonal), best = max(best, Z).
//   Per cell pair: PRMT + 2 DPX + 2 subtractions (linear) or PRMT + 4 DPX + 2 subtractions (affine),
//   and a VIMNMX3 per two cells for the running maximum. E and F never fall below -O, so Ec - E and
//   every stored lane stay >= 0; the one addition that can wrap is Y_diag + s''.
// * Saturation: the first cell whose Z exceeds 32767 - c1 is computed exactly (its inputs are below
//   that), and the running maximum keeps it; so a lane whose best is <= 32767 - c1 never wrapped and
//   is exact, and any other is reported as -1 and rescored by sw_gotoh (the launcher). No 8-bit
//   kernel: Hopper has DPX for 16-bit lanes only; four 8-bit lanes would need emulated SIMD maxima
//   (several instructions each) and gain nothing.
//
// Codes: x (the shorter sequence) pair-major, x[p * m_in + i]; y as shift amounts ysh[p * n4 + j] =
// 8 * code for A/C/G/T and 32 for anything else (the launcher prepares it; n4 a multiple of 4).
// Plain C types only: NVRTC (CuPy) compiles this file without the C++ standard headers; plain nvcc
// compiles it too (nvcc -arch=sm_90 -c dpx.cu).

typedef unsigned int u32;

#ifndef DPX_ROWS
#define DPX_ROWS 8
#endif
#define DPX_FULL 0xffffffffu

// max(a + b, c) per signed 16-bit lane (VIADDMNMX; __viaddmax_s16x2).
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

// The row selector of dpx_prmt for query codes a (lane 0) and b (lane 1).
__device__ __forceinline__ u32 dpx_selector(unsigned int a, unsigned int b) {
    const u32 lo = a < 4 ? a : 8u;
    const u32 hi = b < 4 ? 4u + b : 8u;
    return (0x80u | lo) | ((0x80u | hi) << 8);
}

template <bool AFFINE>
__device__ __forceinline__ void dpx_body(const unsigned char *__restrict__ x, const unsigned char *__restrict__ ysh,
                                         long long pairs, int m_in, int rounds, int n, int n4, int group, int c1,
                                         int c2, int gap_open, int gap_extend, int bias,
                                         u32 *__restrict__ boundary, int *__restrict__ scores) {
    const int R = DPX_ROWS;
    const int lane = threadIdx.x & 31;
    const int k = lane & (group - 1);                                   // rank in the group
    const long long gid = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / group;
    const long long groups = (pairs + 1) / 2;
    const bool real = gid < groups;                                     // whole warps run; spare groups idle
    const long long pa = real ? 2 * gid : 0;
    const long long pb = real && 2 * gid + 1 < pairs ? 2 * gid + 1 : pa;

    const u32 K = (u32)(c1 + c2);                 // s'' on a match
    const u32 BASE = pack2(bias + c2);            // Z of H = 0
    const u32 C2 = pack2(c2);
    const u32 GO = pack2(gap_open);               // g for the linear cell
    const u32 NGE = pack2(-gap_extend);
    const u32 Y0 = pack2(bias);                   // Y of H = 0
    const u32 G0 = pack2(bias + c2 - gap_open);   // W / A of H = 0; Ec / Fc of E = F = -O
    const u32 *ya = reinterpret_cast<const u32 *>(ysh + pa * (long long)n4);
    const u32 *yb = reinterpret_cast<const u32 *>(ysh + pb * (long long)n4);
    u32 *bound = boundary + (real ? gid : 0) * 2LL * 2 * n;   // [2 buffers][n][Y, Fc]

    u32 best = BASE;
    for (int round = 0; round < rounds; ++round) {
        u32 sel[DPX_ROWS], Y[DPX_ROWS], G[DPX_ROWS], EC[DPX_ROWS];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int row = (round * group + k) * R + r;
            const unsigned int xa = row < m_in ? x[pa * m_in + row] : 4u;
            const unsigned int xb = row < m_in ? x[pb * m_in + row] : 4u;
            sel[r] = dpx_selector(xa, xb);
            Y[r] = Y0;
            G[r] = G0;
            EC[r] = G0;
        }
        const u32 *above = bound + (long long)((round + 1) & 1) * 2 * n;   // the previous round's last row
        u32 *below = bound + (long long)(round & 1) * 2 * n;
        const bool writes = real && k == group - 1 && round + 1 < rounds;
        u32 botY = Y0, botF = G0, myA = 0, myB = 0;   // what the thread below reads (column j)
        u32 diag_in = Y0;                             // Y of the row above at column j - 1
        const int steps = n + group - 1;
        for (int t0 = 0; t0 < steps; t0 += 4) {
            u32 y4a = 0x20202020u, y4b = 0x20202020u;  // shift 32: no base
            if (t0 < n4) {
                y4a = ya[t0 >> 2];
                y4b = yb[t0 >> 2];
            }
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const int t = t0 + u;
                u32 upY = __shfl_up_sync(DPX_FULL, botY, 1, group);
                u32 upF = AFFINE ? __shfl_up_sync(DPX_FULL, botF, 1, group) : 0u;
                u32 ta = __shfl_up_sync(DPX_FULL, myA, 1, group);
                u32 tb = __shfl_up_sync(DPX_FULL, myB, 1, group);
                if (k == 0) {   // the group's first thread: column t's table, and the row above the round
                    ta = dpx_shl(K, (y4a >> (8 * u)) & 0xffu);
                    tb = dpx_shl(K, (y4b >> (8 * u)) & 0xffu);
                    if (t < n && round > 0) {
                        upY = above[2 * t];
                        upF = above[2 * t + 1];
                    } else {
                        upY = Y0;
                        upF = G0;
                    }
                }
                const int j = t - k;
                if (j >= 0 && j < n) {
                    u32 gup = upY + C2 - GO;   // W (linear) or A (affine) of the row above: Z - O, Z = Y + c2
                    u32 fc = upF;
                    u32 z = BASE;
                    u32 zprev = BASE;
                    // The diagonal terms first, from the rows' values of column j - 1: then each Y[r] is
                    // dead once read and the new one takes its register (written the other way round, the
                    // old and new Y of a row were live together and cost a register move per cell).
                    u32 P[DPX_ROWS];
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        P[r] = dpx_addmax(r == 0 ? diag_in : Y[r - 1], dpx_prmt(ta, tb, sel[r]), BASE);
                    }
#pragma unroll
                    for (int r = 0; r < R; ++r) {
                        const u32 p = P[r];
                        if (AFFINE) {
                            EC[r] = dpx_addmax(EC[r], NGE, G[r]);
                            fc = dpx_addmax(fc, NGE, gup);
                            z = dpx_max3(p, EC[r], fc);
                        } else {
                            z = dpx_max3(p, gup, G[r]);
                        }
                        Y[r] = z - C2;
                        G[r] = z - GO;
                        gup = G[r];
                        if (r & 1) best = dpx_max3(best, zprev, z);
                        zprev = z;
                    }
                    if (R & 1) best = dpx_max(best, z);
                    botY = Y[R - 1];
                    botF = fc;
                    diag_in = upY;
                    if (writes) {
                        below[2 * j] = botY;
                        below[2 * j + 1] = botF;
                    }
                }
                myA = ta;
                myB = tb;
            }
        }
        __syncwarp();   // the next round's first thread reads what this round's last one wrote
    }
    // The group's maximum, then each lane's score: -1 where it may have wrapped.
    for (int offset = group >> 1; offset > 0; offset >>= 1) best = dpx_max(best, __shfl_xor_sync(DPX_FULL, best, offset, group));
    if (real && k == 0) {
        const int base = bias + c2;
        const int limit = 32767 - c1;
        const int za = (int)(short)(best & 0xffffu);
        const int zb = (int)(short)(best >> 16);
        scores[pa] = za > limit ? -1 : za - base;
        if (pb != pa) scores[pb] = zb > limit ? -1 : zb - base;
    }
}

extern "C" __global__ void __launch_bounds__(256)
    sw_dpx_linear(const unsigned char *x, const unsigned char *ysh, long long pairs, int m_in, int rounds, int n,
                  int n4, int group, int c1, int c2, int gap, int bias, unsigned int *boundary, int *scores) {
    dpx_body<false>(x, ysh, pairs, m_in, rounds, n, n4, group, c1, c2, gap, gap, bias, boundary, scores);
}

extern "C" __global__ void __launch_bounds__(256)
    sw_dpx_affine(const unsigned char *x, const unsigned char *ysh, long long pairs, int m_in, int rounds, int n,
                  int n4, int group, int c1, int c2, int gap_open, int gap_extend, int bias, unsigned int *boundary,
                  int *scores) {
    dpx_body<true>(x, ysh, pairs, m_in, rounds, n, n4, group, c1, c2, gap_open, gap_extend, bias, boundary, scores);
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
