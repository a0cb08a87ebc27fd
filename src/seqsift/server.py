"""A warm seqsift for one user's command-line runs: ``seqsift serve`` (opt-in).

A ``seqsift search`` (or ``crispr``, ``screen``) run spends seconds before and
after its kernels: the interpreter imports NumPy, CuPy, pandas, pyarrow and
Dask (about 2 s on the H100 machine), initialises CUDA, starts a local
cluster, reads the genome from the page cache and sends it to the GPU, and
at the end tears all of that down. A user who runs many jobs in a row (a
guide-design session, a pipeline's many small steps) can keep one process
that has done all of that once:

    seqsift serve &            # this user's server, on this machine
    seqsift search ...         # runs in the server when one is listening
    seqsift serve --stop

While a server listens, the ``seqsift`` command sends its arguments, working
folder and ``SEQSIFT_*`` environment there and only relays what the job
prints and its exit status; the job itself is the same ``cli.main`` run, on
the server's cluster (``cluster.keep_for_jobs``), whose worker keeps the
genomes it has read on the GPU (``engine.task``'s chunk caches) for the next
job. Without a server nothing changes. Runs that read standard input, or
that name their own cluster (``--scheduler``, ``--scheduler-file``,
``--gpus``, ``--workers``), run in the calling process as before.

Privacy and lifetime. The socket is a Unix socket in a folder only its user
can enter (``$XDG_RUNTIME_DIR/seqsift`` or ``$TMPDIR/seqsift-<uid>``), and
the server also checks each caller's user id (``SO_PEERCRED``). It runs one
job at a time (a second caller waits), exits after ``--idle-minutes``
without a job (default 30: the GPU memory it holds is given back), and on
``--stop`` or Ctrl-C. A caller that goes away mid-job (Ctrl-C, a closed
pipe) interrupts the job in the server, which cleans up as the command
line does (no half-written output) and waits for the next.

This module's client half imports only the standard library, so that a run
through the server starts in tens of milliseconds.
"""
from __future__ import annotations

import io
import json
import os
import socket
import stat
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from .console import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, discard_standard_output

SOCKET_VARIABLE = "SEQSIFT_SERVER_SOCKET"
"""Overrides where the server listens (tests, or two servers for two GPU sets)."""
SERVED_COMMANDS = ("search", "crispr", "screen")
OWN_CLUSTER_OPTIONS = ("--scheduler", "--scheduler-file", "--gpus", "--workers")
DEFAULT_IDLE_MINUTES = 30.0
_FRAME = struct.Struct("<cI")  # kind (b"O" stdout, b"E" stderr, b"X" exit status), payload length


def socket_path() -> Path:
    explicit = os.environ.get(SOCKET_VARIABLE)
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "seqsift" if runtime else Path(tempfile.gettempdir()) / f"seqsift-{os.getuid()}"
    return folder / "server.sock"


# -- the caller's side ------------------------------------------------------------------------

def served(argv: list[str]) -> bool:
    """Whether a run with these arguments may go to a server (module docstring)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in SERVED_COMMANDS:
        return False
    if "-" in argv:  # a pattern list or query on standard input: the server cannot read ours
        return False
    return not any(a == option or a.startswith(option + "=") for a in argv for option in OWN_CLUSTER_OPTIONS)


def _connect(path: Path, timeout: float | None = 2.0) -> socket.socket | None:
    """A connection to a listening server at ``path``, or None (no socket, or a stale one)."""
    if not path.exists():
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        return None
    connection.settimeout(None)
    return connection


def run_on_server(argv: list[str]) -> int | None:
    """Run ``argv`` on this user's server; its exit status, or None when no server takes it (run here)."""
    if not served(argv):
        return None
    connection = _connect(socket_path())
    if connection is None:
        return None
    request = {"kind": "run", "argv": argv, "cwd": os.getcwd(),
               "env": {k: v for k, v in os.environ.items() if k.startswith("SEQSIFT_") and k != SOCKET_VARIABLE},
               "stdout_tty": sys.stdout.isatty(), "stderr_tty": sys.stderr.isatty()}
    try:
        connection.sendall(json.dumps(request).encode() + b"\n")
        return _relay(connection)
    except KeyboardInterrupt:
        connection.close()  # the server sees the caller gone and interrupts the job
        print("seqsift: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        connection.close()


def _relay(connection: socket.socket) -> int:
    """Copy the job's output frames to our stdout and stderr until its exit status arrives."""
    reader = connection.makefile("rb")
    while True:
        header = reader.read(_FRAME.size)
        if len(header) < _FRAME.size:
            print("seqsift: error: the seqsift server ended during the job (its own output says why)",
                  file=sys.stderr)
            return EXIT_FAILED
        kind, length = _FRAME.unpack(header)
        payload = reader.read(length)
        if kind == b"X":
            return int(payload.decode())
        stream = sys.stdout if kind == b"O" else sys.stderr
        try:
            stream.buffer.write(payload)
            stream.flush()
        except BrokenPipeError:  # `seqsift search ... | head`: stop the job, stay quiet
            connection.close()
            discard_standard_output()
            return EXIT_BROKEN_PIPE


def ask(kind: str) -> dict | None:
    """A ``status`` or ``stop`` request to the server; its answer, or None when none listens."""
    connection = _connect(socket_path())
    if connection is None:
        return None
    with connection:
        connection.sendall(json.dumps({"kind": kind}).encode() + b"\n")
        line = connection.makefile("rb").readline()
    return json.loads(line) if line else None


# -- the server's side ------------------------------------------------------------------------

class _FrameStream(io.RawIOBase):
    """A write-only stream that sends what is written as frames of one kind; silent once the caller is gone."""

    def __init__(self, connection: socket.socket, kind: bytes, tty: bool, sending: threading.Lock):
        self.connection, self.kind, self.tty, self.gone = connection, kind, tty, False
        self.sending = sending  # shared by the job's two streams: a frame goes out whole (the writer
        # thread's stdout and the client thread's stderr notes would otherwise interleave mid-frame)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.tty

    def write(self, data) -> int:
        data = bytes(data)
        if not self.gone and data:
            try:
                with self.sending:
                    self.connection.sendall(_FRAME.pack(self.kind, len(data)) + data)
            except OSError:
                self.gone = True
                if self.kind == b"O":
                    raise BrokenPipeError("the caller stopped reading") from None
        return len(data)


def _text_stream(connection: socket.socket, kind: bytes, tty: bool, sending: threading.Lock) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BufferedWriter(_FrameStream(connection, kind, tty, sending)), encoding="utf-8",
                            line_buffering=True, write_through=True)


class _Job:
    """One caller's run in this process: its folder, environment and standard streams, for its duration."""

    def __init__(self, connection: socket.socket, request: dict):
        self.connection, self.request = connection, request
        self.lock = threading.Lock()
        self.running = True
        self.interrupted_by_caller = False

    def watch_caller(self) -> None:
        """Interrupt the job (as Ctrl-C would) when the caller goes away before it ends."""
        try:
            while self.connection.recv(4096):
                pass
        except OSError:
            pass
        with self.lock:
            if self.running:
                self.interrupted_by_caller = True
                import _thread

                _thread.interrupt_main()

    def run(self) -> int:
        from .cli import main

        saved_cwd, saved_env = os.getcwd(), dict(os.environ)
        saved_streams = sys.stdout, sys.stderr
        sending = threading.Lock()
        out = _text_stream(self.connection, b"O", bool(self.request.get("stdout_tty")), sending)
        err = _text_stream(self.connection, b"E", bool(self.request.get("stderr_tty")), sending)
        threading.Thread(target=self.watch_caller, name="seqsift-server-caller", daemon=True).start()
        code = EXIT_FAILED
        try:
            os.chdir(self.request["cwd"])
            for name in [k for k in os.environ if k.startswith("SEQSIFT_") and k != SOCKET_VARIABLE]:
                del os.environ[name]
            os.environ.update(self.request.get("env", {}))
            sys.stdout, sys.stderr = out, err
            code = main(list(self.request["argv"]))
        except SystemExit as exit_request:
            code = exit_request.code if isinstance(exit_request.code, int) else EXIT_FAILED
        except KeyboardInterrupt:  # arrived outside cli.main's own handling
            code = EXIT_INTERRUPTED
        finally:
            with self.lock:
                self.running = False
            for stream in (out, err):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            sys.stdout, sys.stderr = saved_streams
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return int(code or 0)


def _peer_uid(connection: socket.socket) -> int | None:
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)[1]


def _private_socket(path: Path) -> socket.socket:
    """Listen at ``path``, in a folder only this user can enter; a stale socket file is replaced."""
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        from .errors import InputError

        raise InputError(f"the server's folder {folder} must belong to you and be closed to others (chmod 700)")
    if path.exists() or path.is_symlink():
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(8)
    return listener


def serve(backend: str = "auto", idle_minutes: float = DEFAULT_IDLE_MINUTES, dashboard: bool = False) -> int:
    """Start the cluster, then run callers' jobs one at a time until idle, stopped or interrupted."""
    from . import cluster
    from .engine import resolve_backend

    path = socket_path()
    status = ask("status")
    if status is not None:
        from .errors import InputError

        raise InputError(f"a seqsift server is already running (pid {status['pid']}, {path})")
    chosen = resolve_backend(backend)
    with cluster.connect(chosen, dashboard=dashboard) as client:
        listener = _private_socket(path)
        try:
            with cluster.keep_for_jobs(client, chosen):
                import seqsift.cli  # noqa: F401  (everything a job imports, before the first caller)

                print(f"seqsift server: listening on {path} ({chosen}; stops after {idle_minutes:g} idle minutes)",
                      flush=True)
                _accept_jobs(listener, idle_minutes, chosen)
        finally:
            listener.close()
            path.unlink(missing_ok=True)
    print("seqsift server: stopped", flush=True)
    return 0


def _accept_jobs(listener: socket.socket, idle_minutes: float, backend: str) -> None:
    served_jobs, started = 0, time.time()
    listener.settimeout(idle_minutes * 60)
    while True:
        try:
            connection, _ = listener.accept()
        except socket.timeout:
            return
        except KeyboardInterrupt:
            return
        with connection:
            if _peer_uid(connection) not in (None, os.getuid()):
                continue
            line = connection.makefile("rb").readline()
            try:
                request = json.loads(line)
            except ValueError:
                continue
            kind = request.get("kind")
            if kind in ("status", "stop"):
                answer = {"pid": os.getpid(), "backend": backend, "jobs": served_jobs, "since": started}
                connection.sendall(json.dumps(answer).encode() + b"\n")
                if kind == "stop":
                    return
                continue
            if kind != "run":
                continue
            job = _Job(connection, request)
            try:
                code = job.run()
            except KeyboardInterrupt:
                if not job.interrupted_by_caller:
                    return  # Ctrl-C on the server itself
                code = EXIT_INTERRUPTED
            served_jobs += 1
            try:
                connection.sendall(_FRAME.pack(b"X", len(str(code))) + str(code).encode())
            except OSError:
                pass


# -- the ``seqsift serve`` subcommand ---------------------------------------------------------

def add_serve_parser(subcommands) -> None:
    """Add ``serve`` to ``subcommands`` (argparse subparsers)."""
    s = subcommands.add_parser(
        "serve", help="keep a warm seqsift for this user's next runs (opt-in; see --help)",
        description="Start this user's seqsift server on this machine and run the seqsift commands given "
                    "meanwhile (search, crispr, screen) in it: no start-up per run, the cluster started "
                    "once, and the genomes already read kept on the GPU. Runs in the foreground (use & or a "
                    "service manager); stops after --idle-minutes without a job, on --stop, or on Ctrl-C.")
    s.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"],
                   help="cuda when a GPU is visible (auto, default), else cpu")
    s.add_argument("--idle-minutes", type=float, default=DEFAULT_IDLE_MINUTES,
                   help=f"stop after this long without a job (default {DEFAULT_IDLE_MINUTES:g})")
    s.add_argument("--dashboard", action="store_true", help="serve the Dask dashboard on 127.0.0.1:8787")
    s.add_argument("--stop", action="store_true", help="stop the running server (after its current job)")
    s.add_argument("--status", action="store_true", help="print the running server's pid, backend and job count")
    s.set_defaults(handler=cmd_serve)


def cmd_serve(args) -> int:
    if args.stop or args.status:
        answer = ask("stop" if args.stop else "status")
        if answer is None:
            print(f"seqsift: no server is listening at {socket_path()}", file=sys.stderr)
            return 1
        print(json.dumps(answer))
        return 0
    return serve(args.backend, args.idle_minutes, args.dashboard)
