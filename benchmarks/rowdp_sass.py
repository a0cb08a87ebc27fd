"""SASS instructions per DP cell of the rowdp kernels (for bench_rowdp.py's roof fractions).

    python benchmarks/rowdp_sass.py        # needs nvcc and cuobjdump (with nvdisasm) on PATH

Compiles rowdp.cu for sm_90 with nvcc, disassembles each kernel and walks its
row loop (from the loop head to the backward branch after the row's barrier)
along the path of a pattern position with one code (A, C, G or T; IUPAC
positions take a longer branch): the instructions of one row of one thread,
split into the work of each of its R cells (the body of the column loop) and
the per-row rest (pattern byte, IUPAC test, row pointers, barrier). Each
instruction is put in a pipe: int = integer ALU (ISETP, IADD3, LOP3,
VIMNMX, ...), imad = integer multiply-add (the FMA pipe), mem = shared or
global memory and shuffles (MIO), ctl = branches and convergence barriers.
A cell where the text matches the pattern position skips the branch of
equation (3)'s mismatch case; both paths are printed.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

SOURCE = Path(__file__).parents[1] / "src" / "seqsift" / "kernels" / "rowdp" / "rowdp.cu"
LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")


def pipe(instruction: str) -> str:
    op = instruction.split()[0] if not instruction.startswith("@") else instruction.split()[1]
    name = op.split(".")[0]
    if name in ("LDS", "STS", "SHFL", "LDG", "STG", "LDC", "LD", "ST", "S2R", "BAR", "ATOMG", "RED"):
        return "mem"
    if name in ("BRA", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "WARPSYNC"):
        return "ctl"
    if name.startswith("IMAD"):
        return "imad"
    return "int"


def disassemble(kernel: str, binary: Path) -> list[tuple[int, str]]:
    text = subprocess.run(["cuobjdump", "-sass", "-fun", kernel, str(binary)], capture_output=True, text=True,
                          check=True).stdout
    return [(int(a, 16), ins) for a, ins in LINE.findall(text)]


def branch_target(instruction: str) -> int | None:
    match = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)\s*$", instruction)
    return int(match.group(1), 16) if match else None


def index_of(code, address: int) -> int:
    return next(j for j, (a, _) in enumerate(code) if a == address)


def _sets_code_test(before, predicate: str) -> bool:
    """Did one of these instructions set ``predicate`` by comparing with -1 (single_code(mask) > -1)?"""
    return any(ins.startswith("ISETP.GT") and f" {predicate}," in ins and "-0x1" in ins for _, ins in before)


def single_code_row(code) -> tuple[list[str], list[str]]:
    """(one row of one thread for a single-code pattern position, mismatch path; the column-loop body
    if the column loop has a run-time trip count (rowdp_global), else [])."""
    # The row loop: the widest backward branch whose range holds a barrier and a cell's X load.
    loops = []
    for i, (address, ins) in enumerate(code):
        target = branch_target(ins)
        if target is not None and target < address:
            head = index_of(code, target)
            inside = [c for _, c in code[head:i + 1]]
            if any("BAR.SYNC" in c for c in inside) and any(".U16" in c and "LD" in c for c in inside):
                loops.append((i - head, head, i))
    _, head, back = max(loops)
    i, path, taken, body = head, [], False, []
    while i <= back:
        address, ins = code[i]
        path.append(ins)
        target = branch_target(ins)
        # The dispatch on single_code(mask) >= 0: a branch on "ISETP.GT ... -0x1" (once per row).
        if (target is not None and not taken and ins.startswith("@P") and target > address
                and _sets_code_test(code[max(0, i - 8):i], ins.split()[0][1:])):
            taken, i = True, index_of(code, target)
            continue
        if "BAR.SYNC" in ins:
            taken = False  # the loop may hold several rows (unrolled)
        if target is not None and not ins.startswith("@") and target > address:
            i = index_of(code, target)
            continue
        if target is not None and target < address and i < back and taken:  # the column loop
            body = [c for _, c in code[index_of(code, target):i + 1]]
        i += 1
    rows = sum("BAR.SYNC" in c for c in path)
    if rows > 1:  # several rows per trip: keep one row's share (the path is the same each row)
        path = path[:len(path) // rows]
    return path, body


def match_skips(path: list[str]) -> int:
    """Instructions a matching cell skips: from its '@!Px BRA' (delta == 0) to the BSYNC."""
    for index, ins in enumerate(path):
        if ins.startswith("@!P") and " BRA " in ins and any(c.startswith("BSYNC") for c in path[index:index + 20]):
            end = next(j for j in range(index + 1, len(path)) if path[j].startswith("BSYNC"))
            return end - index - 1
    return 0


def per_cell(path: list[str], body: list[str], r: int) -> dict[str, float]:
    """Instructions per cell by pipe, the per-row rest shared by the r cells of a thread."""
    if body:
        rest = Counter(pipe(i) for i in path)
        rest.subtract(Counter(pipe(i) for i in body))
        cells = Counter(pipe(i) for i in body)
        return {p: cells[p] + rest[p] / r for p in ("int", "imad", "mem", "ctl")}
    counts = Counter(pipe(i) for i in path)
    return {p: counts[p] / r for p in ("int", "imad", "mem", "ctl")}


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        binary = Path(folder) / "rowdp.o"
        subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", f"-I{SOURCE.parent.parent}", "-c", str(SOURCE), "-o",
                        str(binary)], check=True)
        global_path, global_body = single_code_row(disassemble("rowdp_global", binary))
        print("kernel          R  int  imad  mem  ctl  total (per cell, mismatch path)  a match skips")
        for r in (1, 2, 4, 8, 16):
            path, _ = single_code_row(disassemble(f"rowdp_shfl_r{r}", binary))
            for name, cells in ((f"rowdp_shfl_r{r}", per_cell(path, [], r)),
                                ("rowdp_global", per_cell(global_path, global_body, r))):
                skips = match_skips(path if name != "rowdp_global" else global_body)
                print(f"{name:15s} {r:2d} {cells['int']:5.1f} {cells['imad']:4.1f} {cells['mem']:4.1f} "
                      f"{cells['ctl']:4.1f}  {sum(cells.values()):5.1f}  {skips:3d}")


if __name__ == "__main__":
    main()
