"""Launcher of the bit-sliced hamming-packed kernel (hamming_bitsliced.cu).

Call shape as every kernel: ``packed(text, batch, k, owned_lo, owned_hi) ->
EndHits``; text is a NumPy or CuPy array of text codes, or a
:class:`Planes` already on the device. For repeated searches,
``plan = prepare(batch, k)`` once, then ``run(plan, planes, lo, hi)``.

Rows are grouped by (length, has IUPAC codes): a launch has one m. The
counter is chosen per group (see _counter).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from seqsift.kernels import EndHits
from seqsift.kernels.cuda import KERNEL_DIR, compact_hits_buffers, to_device_text

SOURCE = Path(__file__).with_name("hamming_bitsliced.cu")
THREADS = 128
_lock = threading.Lock()
_functions: dict = {}


def _function(name: str):
    """Kernel ``name`` (an extern "C" name or a template name expression), compiled once per process and device."""
    import cupy

    key = (cupy.cuda.Device().id, name)
    with _lock:
        if key not in _functions:
            expressions = [name] if "<" in name else None
            module = cupy.RawModule(code=SOURCE.read_text(), options=("-std=c++17", f"-I{KERNEL_DIR}"),
                                    name_expressions=expressions)
            _functions[key] = module.get_function(name)
        return _functions[key]


@dataclass
class Planes:
    """Text as bit-planes on the device: hi, lo (the code's bits), nn (not A/C/G/T), 32 characters a word."""
    hi: object
    lo: object
    nn: object
    n: int

    @property
    def nwords(self) -> int:
        return int(self.hi.size)


def planes(text) -> Planes:
    import cupy

    if isinstance(text, Planes):
        return text
    codes = to_device_text(text)
    n = int(codes.size)
    nwords = max(1, (n + 31) // 32)
    hi, lo, nn = (cupy.empty(nwords, dtype=cupy.uint32) for _ in range(3))
    blocks = min((nwords * 32 + 255) // 256, 1 << 20)
    _function("pack_planes")((blocks,), (256,), (codes, np.int64(n), hi, lo, nn, np.int64(nwords)))
    return Planes(hi, lo, nn, n)


_SINGLE_CODE = {1: 0, 2: 1, 4: 2, 8: 3}


@dataclass
class Group:
    m: int
    iupac: bool
    name: str
    R: int
    rows: int
    table: object    # cupy uint32 (rows_padded, m, 4)
    row_ids: object  # cupy int32 (rows,)


@dataclass
class Plan:
    k: int
    groups: list
    capacity: int = 1 << 20
    buffers: tuple | None = field(default=None, repr=False)


def _counter(m: int, k: int) -> tuple[str, int]:
    """(counter type, its registers per row) for rows of length m, k <= m.

    Levels<k + 1> costs k + 1 ops a position: best for k <= 1. Otherwise the
    biased carry-save count Carry<T> (2 ops a position), with 2^T >= k + 1
    and 2^T > m - k - 1 so that the count + bias never wraps.
    """
    if k <= 1:
        return f"Levels<{k + 1}>", k + 1
    t = max(3, k.bit_length(), (m - k - 1).bit_length())
    return f"Carry<{t}>", t + 1


def prepare(batch, k: int) -> Plan:
    import cupy

    k = int(k)
    groups = []
    if k < 0:
        return Plan(k, groups)
    masks = np.asarray(batch.masks, dtype=np.uint8)
    lengths = np.asarray(batch.lengths, dtype=np.int64)
    single = np.ones(batch.rows, dtype=bool)
    for r in range(batch.rows):
        single[r] = np.isin(masks[r, :lengths[r]], (1, 2, 4, 8)).all()
    for m in sorted(set(lengths.tolist()) - {0}):
        for iupac in (False, True):
            ids = np.flatnonzero((lengths == m) & (single != iupac))
            if ids.size == 0:
                continue
            counter, registers = _counter(m, min(k, m))
            R = 4 if registers <= 8 else 2 if registers <= 16 else 1
            while R > 1 and R > ids.size:
                R //= 2
            padded = -(-ids.size // R) * R
            rows_masks = masks[ids, :m]
            table = np.zeros((padded, m, 4), dtype=np.uint32)
            if iupac:
                table[:] = 0xFFFFFFFF  # padding rows: every position mismatches
                for b in range(4):
                    table[:ids.size, :, b] = np.where((rows_masks >> b) & 1, 0, 0xFFFFFFFF)
            else:
                codes = np.vectorize(_SINGLE_CODE.get, otypes=[np.int64])(rows_masks)
                table[:ids.size, :, 0] = np.where(codes & 2, 0xFFFFFFFF, 0)
                table[:ids.size, :, 1] = np.where(codes & 1, 0xFFFFFFFF, 0)
            name = f"hamming_bitsliced<{counter}, {R}, {'true' if iupac else 'false'}>"
            groups.append(Group(m, iupac, name, R, int(ids.size), cupy.asarray(table),
                                cupy.asarray(ids.astype(np.int32))))
    return Plan(k, groups)


def run(plan: Plan, text, owned_lo: int, owned_hi: int) -> EndHits:
    import cupy

    if not plan.groups:
        return EndHits.empty()
    text_planes = planes(text)
    n = text_planes.n
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    launches = []
    for g in plan.groups:
        s_lo = max(0, int(owned_lo) + 1 - g.m)
        s_hi = min(n, int(owned_hi)) - g.m
        if s_hi < s_lo:
            continue
        words = (s_hi >> 5) - (s_lo >> 5) + 1
        blocks_x = -(-words // THREADS)
        groups_of_rows = -(-g.rows // g.R)
        grid_y = max(1, min(groups_of_rows, -(-8 * sms // blocks_x), 65_535))
        k_eff = min(plan.k, g.m)
        launches.append((_function(g.name), (blocks_x, grid_y),
                         (text_planes.hi, text_planes.lo, text_planes.nn, np.int64(text_planes.nwords),
                          g.table, g.row_ids, np.int32(g.rows), np.int32(groups_of_rows * g.R),
                          np.int32(g.m), np.int32(k_eff), np.int64(s_lo), np.int64(s_hi))))
    if not launches:
        return EndHits.empty()
    while True:
        if plan.buffers is None or plan.buffers[1].size < plan.capacity:
            plan.buffers = compact_hits_buffers(plan.capacity)
        count, out_row, out_end, out_dist = plan.buffers
        count.fill(0)
        for function, grid, args in launches:
            function(grid, (THREADS,), (*args, count, np.uint64(plan.capacity), out_row, out_end, out_dist))
        found = int(count.get()[0])
        if found <= plan.capacity:
            return EndHits(out_row[:found].get(), out_end[:found].get(), out_dist[:found].get())
        plan.capacity = found  # grow and rerun: the kernels are deterministic in what they find


def packed(text, batch, k, owned_lo, owned_hi) -> EndHits:
    return run(prepare(batch, k), text, owned_lo, owned_hi)
