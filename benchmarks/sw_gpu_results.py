"""Issue 26's results file: results/sw_gpu.json and .png, from one round's device runs.

    python benchmarks/sw_gpu_results.py --kernels K/sw_affine.json --e2e E/screen_e2e.json \
        --peers P/sw_affine.json [P2/sw_affine.json ...] --sass "tiles_linear=1.359,..." [--out benchmarks/results]
    python benchmarks/sw_gpu_results.py --replace-e2e --e2e E/screen_e2e.json [E2/screen_e2e.json ...]
    python benchmarks/sw_gpu_results.py --replace-threshold K/sw_affine.json   # a newer qgram section only
    python benchmarks/sw_gpu_results.py --kernels K/sw_affine.json --sass ... --issue ... --kernels-only NAME
    python benchmarks/sw_gpu_results.py --replace-kernels --kernels K/sw_affine.json --sass ... --issue ...

Takes the kernel records of ``bench_sw_affine.py`` (``--kernels``), the end-to-end screen of
``bench_screen_e2e.py`` (``--e2e``) and the peers' records (GASAL2, parasail) of other runs of
``bench_sw_affine.py`` (``--peers``: each record keeps the commit and date it was measured at), adds each
DPX kernel's roof fraction from the ALU instructions per cell that ``sw_sass.py`` counted for that commit
(``--sass``: the ALU pipe's 16.7e12 instructions/s over that count; with ``--issue``'s count of all
instructions per cell, the issue roof of 33.4e12 instructions/s too, and the record takes whichever roof it is
nearer: the binding one, the issue slots for the half lanes' linear cell), and repeats the best of each kind as
the records the issue names: ``sw-linear-best``, ``sw-affine-best`` (full scores) and
``sw-threshold-best`` (the flag kernel at the threshold that random pairs pass least often, counted as
pairs x m x n). Writes sw_gpu.json in DESIGN.md's shape and a bar chart of the rates; ``--kernels-only
NAME``: the kernel records alone, with their roofs, as NAME.json and NAME.png (no end-to-end or peers).
``--replace-kernels``: a newer run's kernel, threshold and q-gram records in place of an existing sw_gpu.json's,
keeping its end-to-end and peers' records (each stamped with the commit it was measured at).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

ALU_ROOF = 16.7e12   # the H100's ALU-pipe instructions per second (DESIGN.md)
ISSUE_ROOF = 33.4e12   # its issue slots: one instruction a clock per SM sub-partition
GOALS = {"sw-linear-best": 10e12, "sw-affine-best": 6e12, "sw-threshold-best": 20e12}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def with_roof(record: dict, alu_per_cell: dict[str, float], commit: str,
              all_per_cell: dict[str, float] | None = None) -> dict:
    """The record with roof_fraction where sw_sass.py counted its kernel (sw-dpx[-affine] pairs/tiles): of the
    ALU pipe's roof, or of the issue roof where ``all_per_cell`` counts it and the record is nearer that one."""
    name = record["algorithm"]
    mode = record.get("mode")
    if mode and name.startswith("sw-dpx"):
        key = f"{mode}_{'affine' if 'affine' in name else 'linear'}"
        roofs = []
        if key in alu_per_cell:
            roofs.append((record["value"] * alu_per_cell[key] / ALU_ROOF,
                          f"ALU pipe: 16.7e12 instructions/s / {alu_per_cell[key]} per cell"))
        if all_per_cell and key in all_per_cell:
            roofs.append((record["value"] * all_per_cell[key] / ISSUE_ROOF,
                          f"issue slots: 33.4e12 instructions/s / {all_per_cell[key]} per cell"))
        if roofs:
            fraction, roof = max(roofs)
            record = dict(record, roof_fraction=round(fraction, 3),
                          roof=f"{roof} (SASS of {commit}, R=16, benchmarks/sw_sass.py)")
    return record


def counts(text: str) -> dict[str, float]:
    return {k: float(v) for k, v in (item.split("=") for item in text.split(",") if item)}


def best(records: list[dict], name: str, pick, note: str) -> dict:
    chosen = max((r for r in records if pick(r)), key=lambda r: r["value"])
    met = "met" if chosen["value"] >= GOALS[name] else "not met"
    return dict(chosen, algorithm=name, workload=f"{chosen['algorithm']}: {chosen['workload']}",
                note=f"goal {GOALS[name]:.0e}: {met}{note}")


def e2e_records(e2e: dict) -> list[dict]:
    """bench_screen_e2e.py's records, each stamped with the commit and date it was measured at."""
    records = []
    for r in e2e["records"]:
        r = dict(r, measured=f"commit {e2e['commit']}, {e2e['date']}")
        if r.get("goal_s"):   # one run: the README's table gives the spread of plain runs beside it
            r["note"] = f"goal <= {r['goal_s']:g} s: {'met' if r['wall_s'] <= r['goal_s'] else 'not met'} in this run"
        records.append(r)
    return records


def replace_e2e(e2e_paths: list[Path], out: Path) -> None:
    """Swap the end-to-end screen's records in an existing sw_gpu.json for newer runs' (kernels unchanged)."""
    results = load(out / "sw_gpu.json")
    fresh = [r for path in e2e_paths for r in e2e_records(load(path))]
    names = {r["algorithm"] for r in fresh}
    results["records"] = [r for r in results["records"] if r["algorithm"] not in names] + fresh
    (out / "sw_gpu.json").write_text(json.dumps(results, indent=1) + "\n")
    plot(results["records"], out / "sw_gpu.png", results)


def replace_threshold(kernels_path: Path, out: Path) -> None:
    """Add (or swap) the threshold records of a newer ``bench_sw_affine.py --sections qgram`` run in an existing
    sw_gpu.json, and pick ``sw-threshold-best`` again among every exact threshold record."""
    results = load(out / "sw_gpu.json")
    kernels = load(kernels_path)
    fresh = [dict(r, measured=f"commit {kernels['commit']}, {kernels['date']}") for r in kernels["records"]
             if "threshold" in r["algorithm"]]
    names = {r["algorithm"] for r in fresh} | {"sw-threshold-best"}
    records = [r for r in results["records"] if r["algorithm"] not in names] + fresh
    flags = [r for r in records if r["algorithm"].startswith(("sw-dpx (threshold", "sw-dpx-affine (threshold"))
             and r.get("exact") is not False and r.get("passing") and r["passing"] < 32768]
    chosen = max(flags, key=lambda r: r["value"])
    scoring = "the paper's 2/1/1 scoring, where" if "gap 1," in chosen["workload"] else "a scoring where"
    records.append(best(flags, "sw-threshold-best", lambda r: r is chosen,
                        f"; at {scoring} a threshold screens (the q-gram filter); with 2/1/1 no filter screens"
                        f" random pairs (qgram_filter_plan), and the flag kernel alone is the rate"))
    results["records"] = records
    (out / "sw_gpu.json").write_text(json.dumps(results, indent=1) + "\n")
    plot(records, out / "sw_gpu.png", results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", type=Path)
    ap.add_argument("--e2e", type=Path, nargs="*", default=[])
    ap.add_argument("--replace-e2e", action="store_true",
                    help="only replace the end-to-end records of OUT/sw_gpu.json with --e2e's")
    ap.add_argument("--replace-threshold", type=Path, metavar="K/sw_affine.json",
                    help="only add a newer run's threshold records (its qgram section) to OUT/sw_gpu.json")
    ap.add_argument("--peers", type=Path, nargs="*", default=[])
    ap.add_argument("--sass", default="", help="mode_gap=ALU per cell, comma-separated (tiles_linear=1.359,...)")
    ap.add_argument("--issue", default="", help="mode_gap=all instructions per cell, likewise (the issue roof)")
    ap.add_argument("--replace-kernels", action="store_true",
                    help="swap the kernel records of an existing sw_gpu.json for --kernels' (end to end, peers kept)")
    ap.add_argument("--kernels-only", metavar="NAME", help="write --kernels' records with roofs as OUT/NAME.json, .png")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    if args.replace_threshold:
        replace_threshold(args.replace_threshold, args.out)
    if args.replace_e2e:
        return replace_e2e(args.e2e, args.out)
    if args.replace_threshold:
        return None
    if args.kernels_only:
        kernels = load(args.kernels)
        records = [with_roof(r, counts(args.sass), kernels["commit"], counts(args.issue)) for r in kernels["records"]]
        out = dict(kernels, records=records)
        (args.out / f"{args.kernels_only}.json").write_text(json.dumps(out, indent=1) + "\n")
        return plot(records, args.out / f"{args.kernels_only}.png", kernels)
    if args.replace_kernels:
        if args.kernels is None:
            ap.error("--replace-kernels needs --kernels")
        kept = [r for r in load(args.out / "sw_gpu.json")["records"] if r.get("measured")]
        return write(load(args.kernels), kept, args)
    if args.kernels is None or len(args.e2e) != 1:
        ap.error("--kernels and one --e2e are required unless --replace-e2e or --replace-threshold")
    kernels, e2e = load(args.kernels), load(args.e2e[0])
    others = e2e_records(e2e)
    for path in args.peers:
        peer = load(path)
        others += [dict(r, measured=f"commit {peer['commit']}, {peer['date']}") for r in peer["records"]
                   if r["algorithm"].startswith(("gasal2", "parasail", "sw-dpx-affine (same pairs"))]
    write(kernels, others, args)


def write(kernels: dict, others: list[dict], args) -> None:
    """sw_gpu.json and .png: the kernels' records with their roofs, ``others`` (end to end, peers: stamped with
    the commit each was measured at), and the three best records the issue names."""
    records = [with_roof(r, counts(args.sass), kernels["commit"], counts(args.issue)) for r in kernels["records"]]
    records += others
    full = [r for r in records if r.get("mode") and r.get("same_scores")]
    records.append(best(full, "sw-linear-best", lambda r: r["algorithm"].startswith("sw-dpx (")
                        and "gap 1" in r["workload"], ""))
    records.append(best(full, "sw-affine-best", lambda r: "gap open" in r["workload"],
                        " (CUDASW++4.0: 5.71e12 on an H100, protein)"))
    flags = [r for r in records if r["algorithm"].startswith("sw-dpx (threshold") and r.get("passing")
             and r["passing"] < 32768]   # a threshold every random pair passes says nothing of the screen
    records.append(best(flags, "sw-threshold-best", lambda r: True,
                        "; where every random pair reaches T (T = 64) the flag kernel stops after 32 steps"))
    out = {"device": kernels["device"], "date": kernels["date"], "commit": kernels["commit"], "records": records}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sw_gpu.json").write_text(json.dumps(out, indent=1) + "\n")
    plot(records, args.out / "sw_gpu.png", kernels)


def plot(records: list[dict], path: Path, kernels: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown, labels = [], []
    for r in records:   # one bar per kernel, geometry and scoring (the default geometry repeats R = 16 x G = 8)
        if r.get("quantity") != "cell_updates" or r["value"] >= 1e14:
            continue
        label = r["algorithm"] + (f" T={r['threshold']}" if r.get("threshold") else "")
        if r.get("mode"):
            label += f", {r['rows']} x {r['group']}" + (", linear" if "affine" in label and "gap 1" in r["workload"]
                                                        else "")
        if label not in labels:
            shown.append(r)
            labels.append(label)
    values = [r["value"] / 1e12 for r in shown]
    fig, ax = plt.subplots(figsize=(9, 0.32 * len(shown) + 1.5))
    ax.barh(range(len(shown)), values, color=["C1" if "best" in lab else "C2" if lab.startswith(("gasal", "parasail"))
                                             else "C0" for lab in labels])
    ax.set_yticks(range(len(shown)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("DP cell updates per second (10^12)")
    for goal in (6, 10, 20):
        ax.axvline(goal, color="grey", lw=0.8, ls="--")
    ax.set_title(f"Smith-Waterman on {kernels['device']}, commit {kernels['commit']} ({kernels['date']})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
