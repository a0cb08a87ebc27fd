"""The CuPy backend shared by every GPU kernel family.

* :func:`gpu_available`: is a CUDA device usable here (never raises);
* :func:`load_module`: a family's ``.cu`` file as a ``cupy.RawModule``,
  compiled once per process and set of macros (CuPy also caches the binary
  on disk);
* :func:`to_device_text`: text codes on the device (no copy for a CuPy array);
* :func:`compact_hits_buffers`: the counter and arrays of the device-side
  hit compaction every kernel uses (an atomic counter hands out slots);
* :func:`is_out_of_memory`, :func:`release_cached_memory`: for
  ``kernels.find_ends``, which splits a task that does not fit the device.

CuPy is imported inside these functions only, so machines without a GPU
never import it.
"""
from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

KERNEL_DIR = Path(__file__).parent
_lock = threading.Lock()


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


@lru_cache(maxsize=None)
def _module(name: str, device: int, defines: tuple[tuple[str, int], ...]):
    import cupy

    source = (KERNEL_DIR / name).read_text()
    capability = cupy.cuda.Device(device).compute_capability  # e.g. "90"
    macros = tuple(f"-D{key}={value}" for key, value in defines)
    return cupy.RawModule(code=source, options=("-std=c++17", f"--gpu-architecture=sm_{capability}",
                                                f"-I{KERNEL_DIR}", *macros))


def load_module(name: str, **defines: int):
    """``name`` (e.g. "edit/edit.cu", relative to this folder) compiled for the current device, cached per process.

    ``defines`` become ``-DNAME=value``: a file that instantiates many kernel
    variants compiles only the one a launch needs (sw.cu's score width).
    """
    import cupy

    with _lock:
        return _module(name, cupy.cuda.Device().id, tuple(sorted(defines.items())))


def to_device_text(text):
    """Text codes as a contiguous uint8 CuPy array."""
    import cupy

    if isinstance(text, cupy.ndarray):
        return cupy.ascontiguousarray(text, dtype=cupy.uint8)
    return cupy.asarray(np.ascontiguousarray(text, dtype=np.uint8))


def compact_hits_buffers(capacity: int):
    """(counter, row int32, end int64, distance int16) on the device for ``capacity`` hits."""
    import cupy

    return (cupy.zeros(1, dtype=cupy.uint64), cupy.empty(capacity, dtype=cupy.int32),
            cupy.empty(capacity, dtype=cupy.int64), cupy.empty(capacity, dtype=cupy.int16))


def is_out_of_memory(err: BaseException) -> bool:
    """CuPy's OutOfMemoryError, or a CUDA allocation error (False without CuPy)."""
    try:
        import cupy
    except ImportError:
        return False
    if isinstance(err, cupy.cuda.memory.OutOfMemoryError):
        return True
    return isinstance(err, cupy.cuda.runtime.CUDARuntimeError) and "cudaErrorMemoryAllocation" in str(err)


def release_cached_memory() -> None:
    """Return the blocks CuPy's memory pool holds to the device."""
    import cupy

    cupy.get_default_memory_pool().free_all_blocks()
