"""SASS instructions per DP cell of dpx.cu's step loops (for the roof fractions of benchmarks/README.md).

    python benchmarks/sw_sass.py [--rows 16 19] [--skew 4]   # needs nvcc, cuobjdump and nvdisasm on PATH

Compiles dpx.cu for sm_90 once per gap model, DPX_ROWS (R) and mode, as dpx_launch does, disassembles each
sw_dpx_* kernel and takes its step loop: the smallest loop (a backward branch) that holds the 4 shuffles (8
affine) of the rows passed down, i.e. the 4-step unrolled body, 4 steps x R rows x 2 lanes = 8 R cells. Each
instruction is put in a pipe: alu (integer ALU: VIMNMX3, VIADDMNMX, PRMT, LOP3, ISETP, SEL, SHF, IADD3,
VIADD, LEA, ...), fma (IMAD and its forms: the FMA pipe), mem (loads, stores, shuffles), ctl, uniform.
At the H100's 16.7e12 ALU instructions/s (DESIGN.md) the ALU roof is 16.7e12 / (alu per cell) cells/s;
the issue roof 33.4e12 / (all per cell).
"""
from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

SOURCE = Path(__file__).parents[1] / "src" / "seqsift" / "kernels" / "sw" / "dpx.cu"
LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
ALU_ROOF, ISSUE_ROOF = 16.7e12, 33.4e12


def pipe(instruction: str) -> str:
    words = instruction.split()
    name = (words[1] if words[0].startswith("@") else words[0]).split(".")[0]
    if name in ("LDS", "STS", "SHFL", "LDG", "STG", "LDC", "LD", "ST", "S2R", "BAR", "ATOMG", "RED", "LDCU", "S2UR"):
        return "mem"
    if name in ("BRA", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "WARPSYNC", "NOP", "YIELD"):
        return "ctl"
    if name.startswith("IMAD") or name in ("HFMA2", "HADD2", "HMUL2", "HMNMX2"):
        return "fma"
    if name.startswith("U") or name == "R2UR":
        return "uniform"
    return "alu"


def step_loop(binary: Path, kernel: str) -> list[str]:
    text = subprocess.run(["cuobjdump", "-sass", "-fun", kernel, str(binary)], capture_output=True, text=True,
                          check=True).stdout
    text = text.split(f"Function : {kernel}\n", 1)[1].split("Function :", 1)[0]
    code = [(int(a, 16), ins) for a, ins in LINE.findall(text)]
    loops = []
    for i, (address, ins) in enumerate(code):
        found = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)\s*$", ins)
        if found and int(found.group(1), 16) < address:
            head = next(j for j, (a, _) in enumerate(code) if a == int(found.group(1), 16))
            body = [c for _, c in code[head:i + 1]]
            if sum("SHFL.UP" in c for c in body) >= 4:
                loops.append(body)
    return min(loops, key=len)   # the innermost: the rounds' loop around it holds it


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[16, 19])
    ap.add_argument("--skew", type=int, default=1,
                    help="DPX_SKEW of the tiles and the linear lists, as dpx_skew gives them (4 at R <= 16); the "
                         "affine lists (Gotoh's cell) stay unskewed")
    args = ap.parse_args()
    print(f"{'kernel':28s} {'R':>3s} {'alu/cell':>9s} {'fma/cell':>9s} {'all/cell':>9s} {'ALU roof':>10s} {'issue roof':>10s}")
    with tempfile.TemporaryDirectory() as tmp:
        # (affine, g = c2, half, floor): the linear module also as the launcher builds it where g = c2 (its lists
        # of pairs keep one value a cell: DPX_GAP_IS_MISMATCH) and on half lanes (DPX_HALF); the affine one
        # also with E floored at 0 (DPX_FLOOR_E). Each mode as dpx_launch compiles it: the running maximum over
        # P (DPX_BEST_FROM_P) in all but the linear tiles.
        for affine, same, half, floor in ((0, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 1, 1, 0), (1, 0, 0, 0),
                                          (1, 0, 0, 1)):
            for rows in args.rows:
                for mode in ("pairs",) if same else ("tiles", "pairs"):
                    best_from_p = int(affine or mode == "pairs")
                    skew = 1 if affine and mode == "pairs" else args.skew
                    binary = Path(tmp) / f"dpx_{affine}_{same}_{half}_{floor}_{rows}_{mode}.o"
                    subprocess.run(["nvcc", "-arch=sm_90", f"-DDPX_ROWS={rows}", f"-DDPX_AFFINE={affine}",
                                    f"-DDPX_GAP_IS_MISMATCH={same}", f"-DDPX_HALF={half}", f"-DDPX_FLOOR_E={floor}",
                                    f"-DDPX_BEST_FROM_P={best_from_p}", f"-DDPX_SKEW={skew}", "-c", str(SOURCE),
                                    "-o", str(binary)], check=True)
                    kernel = f"sw_dpx_{mode}_{'affine' if affine else 'linear'}"
                    body = step_loop(binary, kernel)
                    counts = Counter(pipe(ins) for ins in body)
                    cells = 4 * rows * 2
                    alu, fma, total = counts["alu"] / cells, counts["fma"] / cells, len(body) / cells
                    label = kernel + (" (g = c2)" if same else "") + (" half" if half else "") + (
                        " floored" if floor else "")
                    print(f"{label:28s} {rows:3d} {alu:9.3f} {fma:9.3f} {total:9.3f} {ALU_ROOF / alu:10.3g} "
                          f"{ISSUE_ROOF / total:10.3g}")


if __name__ == "__main__":
    main()
