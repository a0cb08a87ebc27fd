"""SASS instructions per (candidate, guide) pair of crispr.cu's plain path, and the roofs they set.

    python benchmarks/crispr_sass.py [--pairs-per-s 1.261e12]   # needs nvcc and cuobjdump on PATH
    python benchmarks/crispr_sass.py --sass crispr_check.sass      # a disassembly saved where they are

Compiles crispr.cu for sm_90 with nvcc, disassembles ``crispr_check`` and
walks the guide loop of ``check_tile_plain`` (2-bit rows, no bulges): the
backward branch whose body holds the popcounts of CANDIDATES_PER_THREAD
candidates. The walk follows the path of a pair that is not a site (the
common case: the atomicAdd and stores of a hit are skipped), from the loop
head to its backward branch, and splits the instructions by pipe: popc
(POPC, a quarter of the integer rate on Hopper: DESIGN.md), int (LOP3, IADD3,
SHF, ISETP, VIADD, ...), imad (IMAD, issued to the FMA pipe), mem (shared and
global loads, atomics) and ctl (branches, convergence barriers). The roofs
per pair on the H100 (132 SMs, 1.98 GHz): integer pipe 64 lanes/SM/clock,
popc 16, issue 128 (four schedulers of 32 lanes); the kernel's roof is the
tightest of them (also printed: the integer roof were IMAD issued to it). With ``--pairs-per-s`` (the kernel's
measured rate, bench_crispr.py's kernel table) it prints the fraction.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

SOURCE = Path(__file__).parents[1] / "src" / "seqsift" / "kernels" / "crispr" / "crispr.cu"
LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
CANDIDATES_PER_THREAD = 4  # as in crispr.cu
SMS, CLOCK_HZ = 132, 1.98e9
LANES_PER_CLOCK = {"int": 64, "popc": 16, "issue": 128}


def pipe(instruction: str) -> str:
    words = instruction.split()
    name = (words[1] if words[0].startswith("@") else words[0]).split(".")[0]
    if name == "POPC":
        return "popc"
    if name in ("LDS", "STS", "LDG", "STG", "LDC", "LD", "ST", "ATOMG", "RED", "ATOM", "S2R", "S2UR", "LDL", "STL"):
        return "mem"
    if name in ("BRA", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "WARPSYNC", "BAR"):
        return "ctl"
    if name.startswith("IMAD") or name.startswith("HFMA") or name.startswith("FFMA"):
        return "imad"
    return "int"


def disassemble(binary: Path) -> str:
    return subprocess.run(["cuobjdump", "-sass", "-fun", "crispr_check", str(binary)], capture_output=True,
                          text=True, check=True).stdout


def branch_target(instruction: str) -> int | None:
    match = re.search(r"\bBRA\b.*?(0x[0-9a-f]+)\s*$", instruction)
    return int(match.group(1), 16) if match else None


def plain_guide_loop(code) -> tuple[int, int]:
    """(head, back) indices of the smallest loop with one hit block (an atomic add) per candidate of a thread
    and two popcounts each: check_tile_plain's guide loop (check_tile's loops take one candidate a thread)."""
    loops = []
    for i, (address, ins) in enumerate(code):
        target = branch_target(ins)
        if target is not None and target < address:
            head = next(j for j, (a, _) in enumerate(code) if a == target)
            body = [c for _, c in code[head:i + 1]]
            atomics = sum("ATOMG" in c for c in body)
            if atomics == CANDIDATES_PER_THREAD and sum(pipe(c) == "popc" for c in body) >= 2 * atomics:
                loops.append((i - head, head, i))
    if not loops:
        raise SystemExit("no guide loop with the expected popcounts found: has crispr.cu changed?")
    _, head, back = min(loops)
    return head, back


def hot_path(code, head: int, back: int) -> list[str]:
    """The loop's instructions along the path of pairs that are not sites (every hit block skipped)."""
    index_of = {a: j for j, (a, _) in enumerate(code)}
    path, i = [], head
    while i <= back:
        address, ins = code[i]
        path.append(ins)
        target = branch_target(ins)
        if target is not None and target > address and index_of[target] <= back + 1:
            skipped = [c for _, c in code[i + 1:index_of[target]]]
            hit_block = any(pipe(c) == "mem" and ("ATOM" in c or "RED" in c or "STG" in c) for c in skipped)
            if not ins.startswith("@") or hit_block:
                i = index_of[target]
                continue
        i += 1
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs-per-s", type=float, help="the kernel's measured (candidate, guide) pairs per second")
    parser.add_argument("--listing", action="store_true", help="print the hot path's instructions")
    parser.add_argument("--sass", help="read this saved `cuobjdump -sass -fun crispr_check` output instead")
    args = parser.parse_args()
    if args.sass:
        text = Path(args.sass).read_text()
    else:
        with tempfile.TemporaryDirectory() as folder:
            binary = Path(folder) / "crispr.cubin"
            subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-std=c++17", f"-I{SOURCE.parent.parent}", str(SOURCE),
                            "-o", str(binary)], check=True)
            text = disassemble(binary)
    code = [(int(address, 16), instruction) for address, instruction in LINE.findall(text)]
    head, back = plain_guide_loop(code)
    path = hot_path(code, head, back)
    if args.listing:
        print("\n".join(path))
    per_pair = {name: count / CANDIDATES_PER_THREAD for name, count in Counter(pipe(c) for c in path).items()}
    total = sum(per_pair.values())
    print("per pair (not a site): " + ", ".join(f"{name} {per_pair.get(name, 0):.2f}"
                                                 for name in ("int", "popc", "imad", "mem", "ctl")) +
          f"; all {total:.2f}")
    roofs = {
        "int pipe": SMS * CLOCK_HZ * LANES_PER_CLOCK["int"] / max(per_pair.get("int", 0), 1e-9),
        "int pipe, were imad on it too": SMS * CLOCK_HZ * LANES_PER_CLOCK["int"] / max(
            per_pair.get("int", 0) + per_pair.get("imad", 0), 1e-9),
        "popc": SMS * CLOCK_HZ * LANES_PER_CLOCK["popc"] / max(per_pair.get("popc", 0), 1e-9),
        "issue (all)": SMS * CLOCK_HZ * LANES_PER_CLOCK["issue"] / total,
    }
    for name, rate in roofs.items():
        print(f"roof by {name}: {rate:.3e} pairs/s")
    tightest = min(rate for name, rate in roofs.items() if "were" not in name)
    if args.pairs_per_s:
        print(f"measured {args.pairs_per_s:.3e} pairs/s = {args.pairs_per_s / tightest:.0%} of the tightest roof "
              f"({tightest:.3e}); {args.pairs_per_s / roofs['int pipe, were imad on it too']:.0%} were IMAD on "
              f"the integer pipe")


if __name__ == "__main__":
    main()
