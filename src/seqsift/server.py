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
folder, umask and settings (``SEQSIFT_*``, ``XDG_CACHE_HOME``, ``HOME``)
there and only relays what the job prints and its exit status
(server_client.py, the caller's half, says when a run is sent and when not);
the job itself is the same ``cli.main`` run, on the server's cluster
(``cluster.keep_for_jobs``), whose worker keeps the genomes it has read on
the GPU (the chunk caches) for the next job.

This process, its threads and what each does:

* the main thread runs the callers' jobs, one at a time, in arrival order
  (``cli.main`` must run there: Ctrl-C and the job's own interrupt handling
  are the main thread's); it stops after ``--idle-minutes`` without a job
  (default 30: the GPU memory it holds is given back), on ``--stop`` (after
  the job under way) and on Ctrl-C;
* the listening thread accepts connections and hands each to a thread of its
  own, which checks the caller's user id (``SO_PEERCRED``), reads one
  request line within ``REQUEST_SECONDS`` (a silent connection is dropped,
  never waited for), and answers ``status`` and ``stop`` at once or queues a
  ``run``, telling the caller when it waits for another job. A malformed
  request gets a one-line error and is dropped; nothing a caller sends can
  stop the server;
* each job has a watcher thread: a caller that goes away mid-job (Ctrl-C, a
  closed pipe) interrupts the job at once, as Ctrl-C would in the caller's
  own process (SIGINT to the main thread, seen only while that job runs): it
  cleans up (no half-written output) and the server waits for the next.

Privacy: the socket is created in a folder only its user can enter
(``$XDG_RUNTIME_DIR/seqsift`` or ``$TMPDIR/seqsift-<uid>``, mode 700), with
mode 600; a folder that exists but belongs to someone else, or is open to
others, is refused with a one-line error.
"""
from __future__ import annotations

import io
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from . import cli
from .errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, InputError
from .server_client import (FRAME, SERVED_COMMANDS, SOCKET_VARIABLE, ask, caller_setting, command_of, peer_uid,
                            private_problem, socket_path)

DEFAULT_IDLE_MINUTES = 30.0
REQUEST_SECONDS = 10.0
"""How long a connection may take to send its request line before it is dropped."""
MAX_REQUEST_BYTES = 1 << 20


class BadRequest(ValueError):
    """A request the server cannot run; ``str()`` is the one line the caller is told."""


def parse_request(line: bytes) -> dict:
    """The request of one JSON line, checked field by field (BadRequest says what is wrong)."""
    try:
        request = json.loads(line)
    except ValueError:
        raise BadRequest("the request is not one line of JSON") from None
    if not isinstance(request, dict):
        raise BadRequest("the request is not a JSON object")
    kind = request.get("kind")
    if kind in ("status", "stop"):
        return {"kind": kind}
    if kind != "run":
        raise BadRequest(f"unknown request kind {kind!r}")
    argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env", {})
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or not argv:
        raise BadRequest("argv must be a list of strings")
    command = command_of(argv)
    if command not in SERVED_COMMANDS:
        raise BadRequest(f"the server runs only {', '.join(SERVED_COMMANDS)}, not {command!r}")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise BadRequest("cwd must be an absolute path")
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise BadRequest("env must map names to strings")
    if not all(caller_setting(k) for k in env):
        raise BadRequest("env may hold only SEQSIFT_* settings, XDG_CACHE_HOME and HOME")
    umask = request.get("umask", 0o022)
    if isinstance(umask, bool) or not isinstance(umask, int) or not 0 <= umask <= 0o777:
        raise BadRequest("umask must be a whole number from 0 to 0o777")
    return {"kind": "run", "argv": argv, "cwd": cwd, "env": env, "umask": umask,
            "stdout_tty": bool(request.get("stdout_tty")), "stderr_tty": bool(request.get("stderr_tty"))}


def _send_frame(connection: socket.socket, kind: bytes, payload: bytes) -> bool:
    """Send one frame; False if the caller is gone."""
    try:
        connection.sendall(FRAME.pack(kind, len(payload)) + payload)
        return True
    except OSError:
        return False


def _refuse(connection: socket.socket, line: str, code: int) -> None:
    """End a caller's connection without running its job: ``line`` on its stderr, exit status ``code``."""
    _send_frame(connection, b"E", f"{line}\n".encode())
    _send_frame(connection, b"X", str(code).encode())
    connection.close()


# -- a job's standard streams ------------------------------------------------------------------

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
            with self.sending:
                sent = _send_frame(self.connection, self.kind, data)
            if not sent:
                self.gone = True
                if self.kind == b"O":
                    raise BrokenPipeError("the caller stopped reading")
        return len(data)


def _text_stream(connection: socket.socket, kind: bytes, tty: bool, sending: threading.Lock) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BufferedWriter(_FrameStream(connection, kind, tty, sending)), encoding="utf-8",
                            line_buffering=True, write_through=True)


# -- interrupting the job under way ------------------------------------------------------------

class _Interrupts:
    """SIGINT in the server's main thread: the user's own Ctrl-C stops the server; a watcher's
    (its caller went away) interrupts that caller's job only, and only while it runs."""

    def __init__(self):
        self.lock = threading.Lock()
        self.job: _Job | None = None          # the job under way, while it runs
        self.for_job: _Job | None = None      # the job a watcher's SIGINT is meant for
        self.server_stopped = False           # the user pressed Ctrl-C on the server itself

    def install(self) -> None:
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum, frame) -> None:
        meant_for, self.for_job = self.for_job, None
        if meant_for is None:
            self.server_stopped = True  # Ctrl-C on the server itself: the job (if any) stops, then the server
            raise KeyboardInterrupt
        if meant_for is self.job:
            raise KeyboardInterrupt  # the job's caller is gone: stop the job there
        # A watcher's signal that arrived after its job ended: nothing to stop.

    def interrupt(self, job: "_Job") -> None:
        """From a watcher thread: stop ``job`` now if it still runs."""
        with self.lock:
            if self.job is job:
                self.for_job = job
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    def running(self, job: "_Job | None") -> None:
        with self.lock:
            self.job = job


class _Job:
    """One caller's run in this process: its folder, settings and standard streams, for its duration."""

    def __init__(self, connection: socket.socket, request: dict, interrupts: _Interrupts):
        self.connection, self.request, self.interrupts = connection, request, interrupts
        self.caller_gone = False
        self._saved = None

    def watch_caller(self) -> None:
        """Interrupt the job (as Ctrl-C would) when the caller goes away before it ends."""
        try:
            while self.connection.recv(4096):
                pass
        except OSError:
            pass
        self.caller_gone = True
        self.interrupts.interrupt(self)

    def run(self) -> int:
        """Run the job with the caller's folder, settings, umask and streams; its exit status."""
        request = self.request
        sending = threading.Lock()
        out = _text_stream(self.connection, b"O", request["stdout_tty"], sending)
        err = _text_stream(self.connection, b"E", request["stderr_tty"], sending)
        try:
            os.chdir(request["cwd"])
        except OSError as error:
            err.write(f"seqsift: error: the seqsift server cannot enter the working folder {request['cwd']} "
                      f"({error.strerror or error}); run without the server\n")
            return EXIT_BAD_INPUT
        self._saved = (dict(os.environ), list(sys.argv), sys.stdout, sys.stderr, os.umask(request["umask"]))
        for name in [k for k in os.environ if caller_setting(k)]:
            del os.environ[name]
        os.environ.update(request["env"])
        sys.argv = ["seqsift", *request["argv"]]  # what the output lock records as the command
        sys.stdout, sys.stderr = out, err
        threading.Thread(target=self.watch_caller, name="seqsift-server-caller", daemon=True).start()
        self.interrupts.running(self)
        try:
            return cli.main(list(request["argv"]))
        except SystemExit as exit_request:
            return exit_request.code if isinstance(exit_request.code, int) else EXIT_FAILED
        finally:
            self.interrupts.running(None)
            for stream in (out, err):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass

    def restore(self, home: str) -> None:
        """Put the server's own folder, settings, umask and streams back (idempotent)."""
        os.chdir(home)
        if self._saved is None:
            return
        environment, argv, stdout, stderr, umask = self._saved
        self._saved = None
        os.environ.clear()
        os.environ.update(environment)
        sys.argv, sys.stdout, sys.stderr = argv, stdout, stderr
        os.umask(umask)


# -- the server --------------------------------------------------------------------------------

class _Server:
    """The listening socket's state: the queue of callers and what ``status`` reports."""

    def __init__(self, listener: socket.socket, backend: str):
        self.listener, self.backend = listener, backend
        self.jobs: queue.Queue = queue.Queue()   # (connection, request), or None: stop
        self.served = 0
        self.started = time.time()
        self.busy_since: float | None = None
        self.stopping = threading.Event()

    def status(self) -> dict:
        return {"pid": os.getpid(), "backend": self.backend, "jobs": self.served, "since": self.started,
                "running": self.busy_since is not None, "waiting": self.jobs.qsize()}

    def listen(self) -> None:
        """The listening thread: one short-lived thread per connection, until the socket closes."""
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed at shutdown
                return
            threading.Thread(target=self.take_request, args=(connection,), name="seqsift-server-request",
                             daemon=True).start()

    def take_request(self, connection: socket.socket) -> None:
        """Check the caller, read its request, then answer it or queue its job (never raises)."""
        try:
            if peer_uid(connection) not in (None, os.getuid()):
                connection.close()
                return
            connection.settimeout(REQUEST_SECONDS)
            line = connection.makefile("rb").readline(MAX_REQUEST_BYTES)
            connection.settimeout(None)
            request = parse_request(line)
        except BadRequest as bad:
            _refuse(connection, f"seqsift: error: bad request to the seqsift server: {bad}", EXIT_BAD_INPUT)
            return
        except (OSError, ValueError):  # silent past the timeout, gone, or an over-long line
            connection.close()
            return
        if request["kind"] in ("status", "stop"):
            try:
                connection.sendall(json.dumps(self.status()).encode() + b"\n")
            except OSError:
                pass  # a caller that hung up before the answer
            connection.close()
            if request["kind"] == "stop":
                self.stopping.set()
                self.jobs.put(None)
            return
        if self.busy_since is not None or not self.jobs.empty():
            ahead = self.jobs.qsize() + (self.busy_since is not None)
            _send_frame(connection, b"W", f"the seqsift server (pid {os.getpid()}) is running another job; "
                                          f"waiting for {ahead} job{'s' if ahead != 1 else ''} ahead".encode())
        self.jobs.put((connection, request))

    def run_jobs(self, idle_seconds: float, interrupts: _Interrupts) -> None:
        """The main thread: run queued jobs until idle, stopped, or Ctrl-C (KeyboardInterrupt)."""
        home = os.getcwd()
        while True:
            try:
                item = self.jobs.get(timeout=idle_seconds)
            except queue.Empty:
                return
            if item is None:
                return
            connection, request = item
            job = _Job(connection, request, interrupts)
            self.busy_since = time.time()
            try:
                code = job.run()
            except KeyboardInterrupt:
                if interrupts.server_stopped or not job.caller_gone:
                    # Before the last frame, not only in the finally below: a thread the job left running
                    # (note(), a warning) must no longer write frames, which could split this unlocked one.
                    job.restore(home)
                    _send_frame(connection, b"E", b"seqsift: error: the seqsift server was stopped\n")
                    connection.close()
                    raise
                code = EXIT_INTERRUPTED
            finally:
                self.busy_since = None
                job.restore(home)
            self.served += 1
            _send_frame(connection, b"X", str(int(code or 0)).encode())
            connection.close()
            if interrupts.server_stopped:  # the job caught the user's Ctrl-C (cli.main does): now stop
                raise KeyboardInterrupt

    def refuse_waiting(self) -> None:
        """Tell callers still queued that the server stopped (their command fails; they may run it again)."""
        while True:
            try:
                item = self.jobs.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                connection, _ = item
                _refuse(connection, "seqsift: error: the seqsift server stopped before this job ran; "
                                    "run the command again", EXIT_FAILED)


JOB_MODULES = ("numpy", "pandas", "pyarrow", "pyarrow.csv", "pyarrow.parquet", "pyarrow.compute", "numba",
               "seqsift.searching.task", "seqsift.searching.merge", "seqsift.searching.output",
               "seqsift.crispr.task", "seqsift.crispr.output", "seqsift.crispr.merge",
               "seqsift.screening.run", "seqsift.screening.task", "seqsift.screening.output",
               "seqsift.runtime.run", "seqsift.runtime.store", "seqsift.runtime.windows", "seqsift.runtime.order",
               "seqsift.kernels.locate.cpu", "seqsift.kernels.encode", "seqsift.kernels.sw")
"""What the jobs import as they run, imported before the first caller: a caller's Ctrl-C interrupts its job
with a SIGINT wherever that job is, and one that lands inside a first import can leave a module half made
for every later job (seen: numpy's ``multiarray failed to import``). Imported here, no job imports them."""


def import_job_stack() -> None:
    from importlib import import_module

    for name in JOB_MODULES:
        import_module(name)


def private_socket(path: Path) -> socket.socket:
    """Listen at ``path``, in a folder only this user can enter; a stale socket file is replaced."""
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot make the server's folder {folder} ({err.strerror or err})") from None
    problem = private_problem(folder, want_socket=False)
    if problem is not None:
        raise InputError(f"the server's folder {folder} must belong to you and be closed to others "
                         f"(chmod 700): {problem}; or set {SOCKET_VARIABLE} to a socket path in such a folder")
    if os.path.lexists(path):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # the socket is born 600: no instant in which others may connect
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    listener.listen(64)
    return listener


def serve(backend: str = "auto", idle_minutes: float = DEFAULT_IDLE_MINUTES, dashboard: bool = False) -> int:
    """Start the cluster, then run callers' jobs one at a time until idle, stopped or interrupted."""
    from . import cluster
    from .searching import resolve_backend

    path = socket_path()
    status = ask("status", quiet=True)
    if status is not None:
        raise InputError(f"a seqsift server is already running (pid {status.get('pid')}, {path})")
    chosen = resolve_backend(backend)
    interrupts = _Interrupts()
    with cluster.connect(chosen, dashboard=dashboard) as client:
        listener = private_socket(path)
        server = _Server(listener, chosen)
        try:
            with cluster.keep_for_jobs(client, chosen):
                import_job_stack()
                interrupts.install()
                threading.Thread(target=server.listen, name="seqsift-server-listen", daemon=True).start()
                print(f"seqsift server: listening on {path} ({chosen}; stops after {idle_minutes:g} idle minutes)",
                      flush=True)
                try:
                    server.run_jobs(idle_minutes * 60, interrupts)
                except KeyboardInterrupt:
                    pass
        finally:
            server.stopping.set()
            listener.close()
            path.unlink(missing_ok=True)
            server.refuse_waiting()
    print("seqsift server: stopped", flush=True)
    return 0


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
    s.add_argument("--stop", action="store_true",
                   help="stop the running server (after its current job); prints its status as it stops")
    s.add_argument("--status", action="store_true",
                   help="print the running server's pid, backend, jobs run, and whether one runs or waits (JSON)")
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
