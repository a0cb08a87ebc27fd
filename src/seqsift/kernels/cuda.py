"""The CuPy backend shared by every GPU kernel family.

* :func:`gpu_available`: is a CUDA device usable here (never raises);
* :func:`load_module`: a family's ``.cu`` file as a ``cupy.RawModule``,
  compiled once per process and set of macros (CuPy also caches the binary
  on disk); :func:`shared_memory_per_block`: how much shared memory a launch
  may give one block on a device (GPUs before Hopper give less);
* :func:`to_device_text`: text codes on the device (no copy for a CuPy array);
* :func:`upload_and_encode`: raw reference bytes across PCIe from pinned
  buffers, encoded to text codes on the device (``encode/encode.cu``);
  :func:`prepare_device` readies all it needs ahead of a job's first task
  (:func:`ready_device`: CuPy and the CUDA context only, for screen);
* :func:`task_stream`, :func:`priority_stream`, :func:`uploaded_once`: each
  task thread's own streams (its searches; its short kernels, first in line
  for the SMs), and device arrays the threads share, complete before they
  are shared; :func:`device_turn`: the GPU to one task thread's kernels at
  a time (screen);
* :func:`launch_into_hit_buffers`: the one launch loop of the families that
  compact hits (launch into hit buffers, read the hit counter, grow the
  buffers to the count and launch again if the hits did not fit); :func:`launch_end_hits`
  runs it with :func:`compact_hits_buffers`, the counter and arrays of the
  device-side hit compaction the search kernels share (hits.cuh: an atomic
  counter hands out slots), and copies the hits back as ``EndHits``;
  :func:`compact_hit_args` is those buffers as the kernels' last arguments;
* :func:`is_out_of_memory`, :func:`release_cached_memory`: for
  ``kernels.find_ends``, which splits a task that does not fit the device.

CuPy is imported inside these functions only, so machines without a GPU
never import it.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..io.genome_cache import FileRange

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


@lru_cache(maxsize=None)
def shared_memory_per_block(device: int) -> int:
    """The most shared memory (bytes) one block may use on CUDA device ``device``, once a kernel opts in:
    227 KB on Hopper, 163 KB on the A100, 99 KB on sm_86 and sm_89 (the A10, L4 and RTX cards), 64 KB
    on the T4."""
    import cupy

    return int(cupy.cuda.Device(device).attributes["MaxSharedMemoryPerBlockOptin"])


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


STAGE_BYTES = 32 << 20
"""Bytes per pinned staging buffer; each task thread has two and alternates them."""
STAGING_THREADS = 4
"""Task threads per GPU worker (seqsift.cluster.GPU_TASK_THREADS, which this package does not import):
staging buffers for this many are allocated together (256 MiB of pinned memory in all)."""
ENCODE_THREADS = 256
WINDOW_ALIGN = 256
"""Byte alignment of every window's device array (the Hamming kernels read 16-byte vectors)."""
SLAB_BYTES = 1 << 30
"""Device bytes reserved at a time for the windows' arrays (see ``_WindowSlabs``)."""


_staging_lock = threading.Lock()
_staging_free: list[list[np.ndarray]] = []  # pairs of pinned buffers no thread has taken yet
_staging_allocations = 0  # how many times STAGING_THREADS pairs were allocated in this process


def _staging_pair() -> list[np.ndarray]:
    """Two pinned buffers of STAGE_BYTES for the calling thread, out of one allocation per STAGING_THREADS.

    A pinned allocation (cudaHostAlloc) waits for the work queued on the
    device (the CUDA programming guide's "implicit synchronization"), so a
    second task thread that allocated its buffers lazily waited for the
    first thread's search (0.15-0.2 s per thread in the H100 profile of a
    3.1 Gbp job). The first thread to upload allocates every thread's
    buffers at once, before any search is queued.
    """
    with _staging_lock:
        if not _staging_free:
            _allocate_staging()
        return _staging_free.pop()


def _allocate_staging() -> None:
    """STAGING_THREADS more pairs of pinned buffers, in one allocation (the caller holds _staging_lock)."""
    import cupy

    global _staging_allocations
    size = 2 * STAGING_THREADS * STAGE_BYTES
    block = np.frombuffer(cupy.cuda.alloc_pinned_memory(size), np.uint8)[:size]  # the pool may round up
    buffers = block.reshape(2 * STAGING_THREADS, STAGE_BYTES)
    _staging_free.extend([[buffers[2 * t], buffers[2 * t + 1]] for t in range(STAGING_THREADS)])
    _staging_allocations += 1


_ready_lock = threading.Lock()
_device_ready = False


def ready_device() -> None:
    """CuPy imported and this process's CUDA context made, the context on a thread of its own
    beside the import (:func:`open_context`): what any GPU job's first task waits for before its
    first upload. Once per process; calling it again costs nothing.

    ``screen`` calls this ahead, on the thread that starts its in-process
    cluster, while it reads its inputs (its tasks upload their codes with
    CuPy: no staging buffers, no encoding kernel); search and crispr call
    :func:`prepare_device`, which begins with it.
    """
    global _device_ready
    with _ready_lock:
        if not _device_ready:
            opening = threading.Thread(target=open_context, name="seqsift-cuda-context", daemon=True)
            opening.start()
            import cupy  # noqa: F401

            opening.join()
            _device_ready = True


def prepare_device() -> None:
    """Do ahead of a job's first GPU task what that task would do before its first upload.

    CuPy's import, the process's CUDA context on the current device
    (:func:`ready_device`), the task threads' pinned staging buffers and the
    encoding kernel took the first task of a fresh CLI process 0.6-1.2 s on
    the H100 host (benchmarks/README.md). The search and crispr jobs call
    this on the thread that starts a job's in-process cluster, while the job
    reads its reference: on a first run (the file indexed and cached) or from
    gzip, that reading is longer than all of this. Calling it again costs nothing.
    """
    ready_device()
    with _staging_lock:
        if _staging_allocations == 0:
            _allocate_staging()
    _encoder()


def open_context(ordinal: int = 0) -> bool:
    """Make the CUDA driver's primary context of device ``ordinal`` (0: CuPy's current device in a
    job's process, whose GPU a worker sees as device 0) through libcuda itself, without CuPy; whether
    it is there.

    CuPy makes the same context at its first device call, after its import:
    on the H100 host the import took 0.5 s and the context 0.2 s more, one
    after the other, before a job's first upload. The driver's calls made
    through ctypes hold no GIL, so on a thread of its own this runs while
    CuPy imports; CuPy then finds the context made (the runtime uses the
    device's primary context) and goes on. The context is retained for the
    process's life, as CuPy's is. Without libcuda (no driver, another
    platform) it does nothing: CuPy reports what is missing where it always has.
    """
    import ctypes

    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    device, context = ctypes.c_int(), ctypes.c_void_p()
    return (libcuda.cuInit(0) == 0 and libcuda.cuDeviceGet(ctypes.byref(device), ordinal) == 0
            and libcuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0)


def _encoder():
    """``(encode_text_codes, its code table on this device)``: encode/encode.cu's kernel, both loaded once."""
    import cupy

    from ..alphabet import TEXT_CODE_ARRAY

    kernel = load_module("encode/encode.cu").get_function("encode_text_codes")
    return kernel, _device_code_table(cupy.cuda.Device().id, TEXT_CODE_ARRAY.tobytes())


class _Uploader(threading.local):
    """This thread's copy stream and its two pinned staging buffers (taken on first use).

    The stream does not synchronise with the legacy default stream the search
    kernels run on, so one task thread's upload and encoding overlap another
    thread's search (several task threads per GPU worker: seqsift.cluster).
    """

    stream = None

    def ready(self):
        import cupy

        if self.stream is None:
            self.buffers = _staging_pair()
            self.done = [None, None]  # the event after which each buffer may be refilled
            self.stream = cupy.cuda.Stream(non_blocking=True)
        return self


_uploader = _Uploader()


class _WindowSlabs:
    """Device arrays for the windows, cut from slabs of SLAB_BYTES (one per device, filled front to back).

    A worker keeps every window it uploaded on the device (runtime.windows'
    device cache), so each new window needed fresh device memory: a
    ``cudaMalloc``, which waits for the work queued on the device (implicit
    synchronization), i.e. for the other task thread's search. In the H100
    profile of a 3.1 Gbp Hamming job, ``cupy.empty`` for the window took
    0.56-0.92 s of each task thread. Cut from a slab, a window costs one
    ``cudaMalloc`` per SLAB_BYTES (about 16 windows). A slab's memory goes back
    to CuPy's pool when the slab is full and its last window is dropped.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.current: dict[int, tuple[object, int, int]] = {}  # device -> (slab pointer, bytes used, size)

    def empty(self, size: int):
        import cupy

        device = cupy.cuda.Device().id
        need = -(-max(int(size), 1) // WINDOW_ALIGN) * WINDOW_ALIGN
        with self.lock:
            slab, used, capacity = self.current.get(device, (None, 0, 0))
            if slab is None or used + need > capacity:
                capacity = max(SLAB_BYTES, need)
                try:
                    slab, used = cupy.cuda.alloc(capacity), 0
                except cupy.cuda.memory.OutOfMemoryError:  # a nearly full device: this window alone
                    capacity = need
                    slab, used = cupy.cuda.alloc(capacity), 0
            self.current[device] = (slab, used + need, capacity)
        return cupy.ndarray(int(size), dtype=cupy.uint8, memptr=slab + used)

    def release(self) -> None:
        """Forget the slabs being filled (their unused ends go back to the pool with their windows)."""
        with self.lock:
            self.current.clear()


_window_slabs = _WindowSlabs()


def upload_and_encode(raw, encode: bool = True, clock=None, into=None):
    """Host bytes -> a new device array; with ``encode``, translated to text codes there.

    ``raw`` is the newline-free FASTA bytes: bytes or a uint8 array, or a
    :class:`FileRange` of a file that holds them as they are (the genome
    cache). They are copied into a pinned buffer slice by slice while the
    previous slice crosses PCIe asynchronously, then ``encode_text_codes``
    (encode/encode.cu) turns the bytes into text codes in place, with
    ``alphabet.TEXT_CODE_ARRAY`` as its table. A FileRange is read with
    ``os.preadv`` straight into the pinned buffer (GIL released, page-cache
    speed) instead of copied from a fresh memory map of the file, which
    page-faults on first touch: about 1.7 GB/s a task thread in the H100
    host's profile (``benchmarks/bench_stage_read.py`` measures both ways).
    Returns when the codes are ready (the caller's kernels run on another
    stream). ``clock(stage)``: a context timing ``transfer`` and ``encode``
    (seqsift.runtime.stages.timed), or None. ``into``: a device array of the
    bytes' size to fill instead of a new window (a temporary one).
    """
    if isinstance(raw, FileRange):
        source, size = raw, raw.length
    else:
        source = np.frombuffer(raw, np.uint8) if isinstance(raw, (bytes, bytearray, memoryview)) else raw
        source = np.ascontiguousarray(source, dtype=np.uint8)
        size = source.size
    up = _uploader.ready()
    device = _window_slabs.empty(size) if into is None else into
    with up.stream, (clock("transfer") if clock else _no_clock()), _filler(source) as fill:
        for slice_index, first in enumerate(range(0, size, STAGE_BYTES)):
            count = min(STAGE_BYTES, size - first)
            which = slice_index % 2
            if up.done[which] is not None:
                up.done[which].synchronize()   # the copy out of this buffer has finished
            staged = up.buffers[which][:count]
            fill(staged, first)
            device[first:first + count].set(staged, stream=up.stream)
            up.done[which] = up.stream.record()
        if clock:
            up.stream.synchronize()
    if encode and size:
        with up.stream, (clock("encode") if clock else _no_clock()):
            encode_text_codes, table = _encoder()
            blocks = min(4096, (size // 4 + ENCODE_THREADS - 1) // ENCODE_THREADS + 1)
            encode_text_codes((blocks,), (ENCODE_THREADS,), (device, np.int64(size), table))  # on up.stream
            up.stream.synchronize()
    up.stream.synchronize()
    return device


def upload_and_encode_packed(raw, group, clock=None):
    """The text of whole records packed together (partitioning.PackedRecords ``group``) on the device.

    ``raw`` (bytes, an array or a FileRange, as for :func:`upload_and_encode`)
    holds the records' bytes back to back, as the genome cache does: they
    cross PCIe in one transfer into a temporary array, then encode.cu's
    ``pack_records`` writes each record's text codes at its place in the
    text, whose separators are the NEVER code. Returns the text (a new window).
    """
    import cupy

    from ..alphabet import NEVER

    size = raw.length if isinstance(raw, FileRange) else len(raw)
    staged = upload_and_encode(raw, encode=False, clock=clock, into=cupy.empty(max(int(size), 1), dtype=cupy.uint8))
    up = _uploader.ready()
    text = _window_slabs.empty(group.text_length)
    with up.stream, (clock("encode") if clock else _no_clock()):
        text.fill(NEVER)
        _, table = _encoder()
        pack = load_module("encode/encode.cu").get_function("pack_records")
        arrays = [cupy.asarray(a) for a in (group.raw_starts, group.text_starts, group.lengths)]
        records = len(group.lengths)
        if records:
            pack((min(records, 65_535),), (ENCODE_THREADS,),
                 (staged, *arrays, np.int64(records), table, text))
        up.stream.synchronize()
    return text


@contextmanager
def _filler(source):
    """``fill(buffer, first)``: puts the source's bytes ``[first, first + len(buffer))`` into ``buffer``."""
    if isinstance(source, FileRange):
        with source.reader() as fill:  # the file's own reads live in seqsift.io
            yield fill
        return
    yield lambda buffer, first: np.copyto(buffer, source[first:first + buffer.size])


@lru_cache(maxsize=None)
def _device_code_table(device: int, table: bytes):
    import cupy

    codes = cupy.asarray(np.frombuffer(table, np.uint8))
    cupy.cuda.get_current_stream().synchronize()  # shared by every thread's upload stream
    return codes


class _ThreadStreams(threading.local):
    """Each thread's CUDA streams, made on first use: ``task`` (:func:`task_stream`) and ``priority``
    (:func:`priority_stream`)."""

    task = None
    priority = None


_thread_streams = _ThreadStreams()


def task_stream():
    """This thread's own CUDA stream (non-blocking), as a context for a task's kernels and copies.

    On the legacy default stream, the two task threads of a GPU worker
    serialised each other's waits: a thread's copy of its hits back to the
    host waited for the other thread's kernel queued before it, and one
    kernel's last wave could not overlap the next kernel. With a stream each,
    a thread waits for its own work only; on the H100 the second search of
    the 312-guide edit job over 3.1 Gbp went from 2.73-2.85 s to 2.47-2.63 s
    (the chunks' kernels alone, one after another: 2.09 s). Arrays the
    threads share are complete before they are handed out
    (:func:`uploaded_once`; uploads synchronise their own stream).
    """
    import cupy

    if _thread_streams.task is None:
        _thread_streams.task = cupy.cuda.Stream(non_blocking=True)
    return _thread_streams.task


_turns: dict[int, threading.Lock] = {}
_turns_lock = threading.Lock()


@contextmanager
def device_turn():
    """The current GPU to this thread's kernels alone, from their launch until their results are back
    on the host: one task thread of a worker at a time, the others doing their host work meanwhile.

    Two task threads whose kernels each fill the GPU share it when launched
    together, and so end together: both then did their host work at once
    (the screen's alignments, its rows) while the GPU idled, and met again at
    the next launch. On the H100 host the issue-26 screen with alignments
    kept the GPU busy 3.4 s of 4.5 s that way (without alignments, whose host
    work is short, 3.4 s of 3.5 s). Taking turns, a thread's host work
    overlaps the other's kernels: that screen went from 5.68-6.31 s to
    5.31-6.05 s (benchmarks/README.md). A turn must cover all the kernels a
    task waits for before its host work: with the flags and the survivors'
    scores in turns of their own, both threads still aligned at once.
    """
    import cupy

    device = cupy.cuda.runtime.getDevice()
    with _turns_lock:
        turn = _turns.setdefault(device, threading.Lock())
    with turn:
        yield


def priority_stream():
    """This thread's own CUDA stream of the device's highest priority (non-blocking), for short kernels
    that the thread waits for between two of its searches (locating a chunk's hits).

    A search kernel fills every SM for tens of milliseconds; a task thread's
    small kernel queued behind the other thread's search on a stream of equal
    priority waited for most of it, and the thread's next search with it. The
    block scheduler hands free SMs to the highest-priority stream's blocks
    first (the CUDA programming guide's stream priorities), so the small
    kernel runs as soon as any blocks of the running search retire.
    """
    import cupy

    if _thread_streams.priority is None:
        # CUDA clamps a priority past the device's range to its greatest (cudaStreamCreateWithPriority).
        _thread_streams.priority = cupy.cuda.Stream(non_blocking=True, priority=-(1 << 16))
    return _thread_streams.priority


def uploaded_once(get, key, build):
    """``get(key, build)`` (a memo.Memo's ``get``, ``PatternBatch.derived``) for device arrays the task
    threads share: the thread that builds them waits for their copies before any other thread can use
    them, since each thread's kernels run on a stream of its own (:func:`task_stream`)."""
    def build_and_wait():
        import cupy

        built = build()
        cupy.cuda.get_current_stream().synchronize()
        return built

    return get(key, build_and_wait)


def _no_clock():
    from contextlib import nullcontext

    return nullcontext()


def compact_hits_buffers(capacity: int):
    """(counter, row int32, end int64, distance int16) on the device for ``capacity`` hits."""
    import cupy

    return (cupy.zeros(1, dtype=cupy.uint64), cupy.empty(capacity, dtype=cupy.int32),
            cupy.empty(capacity, dtype=cupy.int64), cupy.empty(capacity, dtype=cupy.int16))


def compact_hit_args(hit_buffers, capacity: int) -> tuple:
    """:func:`compact_hits_buffers`' arrays as a search kernel's last five arguments (hits.cuh's ``emit``):
    counter, capacity (uint64), row, end and distance arrays."""
    count, out_row, out_end, out_dist = hit_buffers
    return count, np.uint64(capacity), out_row, out_end, out_dist


def launch_into_hit_buffers(launch, capacity: int, buffers=None) -> tuple:
    """Run ``launch`` into fresh hit buffers of ``capacity`` slots, and again with room for all if they overflowed.

    A kernel that finds a hit takes a slot from an atomic counter and writes
    the hit there only if the slot is below the capacity (hits.cuh), so the
    counter ends at the number of hits found, whether or not they fitted.
    The loop every GPU family shares:

    1. ``buffers(capacity)`` allocates ``(counter, *arrays)``: the counter a
       zeroed uint64[1], each array ``capacity`` long (default:
       :func:`compact_hits_buffers`, the search kernels' row, end and
       distance; the crispr kernels pass their own arrays);
    2. ``launch(hit_buffers, capacity)`` queues the kernels that write into
       ``hit_buffers`` (the tuple ``buffers`` returned); it may queue several
       launches, which share the one counter;
    3. the counter is read back (this waits for the kernels); if it is above
       ``capacity``, the capacity becomes exactly the count and steps 1-2
       run again (the kernels find the same hits every time, so the second
       run fits).

    Returns the arrays (counter excluded) cut to the hits found, still where
    ``buffers`` put them (on the device): the caller copies what it needs.
    """
    allocate = compact_hits_buffers if buffers is None else buffers
    while True:
        hit_buffers = allocate(capacity)
        launch(hit_buffers, capacity)
        found = int(hit_buffers[0].get()[0])
        if found <= capacity:
            return tuple(array[:found] for array in hit_buffers[1:])
        capacity = found  # more hits than slots: run again with room for all


def launch_end_hits(launch, capacity: int):
    """:func:`launch_into_hit_buffers` over :func:`compact_hits_buffers`, the hits copied to the host as
    ``EndHits`` (rows as the kernels numbered them). No copy at all when there are none (a one-pattern
    search of random text usually finds none)."""
    from . import EndHits

    row, end, distance = launch_into_hit_buffers(launch, capacity)
    if len(row) == 0:
        return EndHits.empty()
    return EndHits(row.get(), end.get(), distance.get())


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

    _window_slabs.release()
    cupy.get_default_memory_pool().free_all_blocks()
