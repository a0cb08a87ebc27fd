"""The caller's half of ``seqsift serve``: find this user's server, trust it or not, relay a run through it.

This module imports only the standard library (and ``errors``, which does
too), so a run handed to a server starts in tens of milliseconds; server.py
is the other half, and the frame format below is their whole protocol.

A run goes to a server only if every one of these holds; otherwise the
command runs in the calling process, as without a server:

* the command is ``search``, ``crispr`` or ``screen``, reads nothing from
  our standard input (``-``, ``/dev/stdin``) and names no cluster of its own
  (:func:`served`);
* a socket exists at :func:`socket_path`;
* its folder is a real folder (not a link) owned by this user and closed to
  others (no group or other permission bits), and the socket file itself is
  a socket owned by this user and closed to others; on a shared login node
  ``/tmp`` is everyone's, and another user could have made
  ``/tmp/seqsift-<uid>`` first to receive our arguments, folder and
  environment and answer with rows of their own;
* the process listening there runs as this user (``SO_PEERCRED``).

When a socket is there but fails a check, the command says so in one
``seqsift: note:`` line and runs here.

The wire format: the caller sends one JSON line (the request); the server
answers with frames, ``<kind: 1 byte><length: uint32 LE><payload>``, of
kind ``O`` (the job's standard output), ``E`` (its standard error), ``W``
(the server is busy with another caller's job: a note to show while
waiting) and finally ``X`` (the exit status, as decimal text).
"""
from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
import tempfile
from pathlib import Path

from .errors import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, discard_standard_output, note

SOCKET_VARIABLE = "SEQSIFT_SERVER_SOCKET"
"""Overrides where the server listens (tests, or two servers for two GPU sets)."""
SERVED_COMMANDS = ("search", "crispr", "screen")
OWN_CLUSTER_OPTIONS = ("--scheduler", "--scheduler-file", "--gpus", "--workers")
STANDARD_INPUT_NAMES = ("-", "/dev/stdin", "/proc/self/fd/0", "/dev/fd/0")
"""Arguments that name the caller's standard input, which the server cannot read."""
CALLER_SETTINGS = ("XDG_CACHE_HOME", "HOME")
"""Environment variables besides ``SEQSIFT_*`` that a served job takes from its caller (the cache folder)."""
FRAME = struct.Struct("<cI")
"""A frame's header: kind (b"O", b"E", b"W", b"X") and payload length."""
CONNECT_SECONDS = 2.0


def socket_path() -> Path:
    """``$SEQSIFT_SERVER_SOCKET``, else ``$XDG_RUNTIME_DIR/seqsift/server.sock``, else ``$TMPDIR/seqsift-<uid>/server.sock``."""
    explicit = os.environ.get(SOCKET_VARIABLE)
    if explicit:
        return Path(explicit)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime) / "seqsift" if runtime else Path(tempfile.gettempdir()) / f"seqsift-{os.getuid()}"
    return folder / "server.sock"


def caller_setting(name: str) -> bool:
    """Whether the environment variable ``name`` is one a served job takes from its caller:
    ``SEQSIFT_*`` (except :data:`SOCKET_VARIABLE`, the server's own) and :data:`CALLER_SETTINGS`."""
    return (name.startswith("SEQSIFT_") and name != SOCKET_VARIABLE) or name in CALLER_SETTINGS


def command_of(argv: list[str]) -> str | None:
    """The subcommand in ``argv``: its first argument not starting with ``-`` (None if there is none)."""
    return next((a for a in argv if not a.startswith("-")), None)


def served(argv: list[str]) -> bool:
    """Whether a run with these arguments may go to a server (module docstring)."""
    if command_of(argv) not in SERVED_COMMANDS:
        return False
    if any(a in STANDARD_INPUT_NAMES for a in argv):  # our standard input: the server cannot read it
        return False
    return not any(a == option or a.startswith(option + "=") for a in argv for option in OWN_CLUSTER_OPTIONS)


def private_problem(path: Path, want_socket: bool) -> str | None:
    """Why ``path`` (the server's folder, or with ``want_socket`` its socket) cannot be trusted; None if it can.

    Trusted: not a symbolic link, of the right kind, owned by this user, and
    with no permission bit for the group or others.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return "it does not exist"
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if want_socket and not stat.S_ISSOCK(info.st_mode):
        return "it is not a socket"
    if not want_socket and not stat.S_ISDIR(info.st_mode):
        return "it is not a folder"
    if info.st_uid != os.getuid():
        return f"it belongs to user id {info.st_uid}, not to you ({os.getuid()})"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"others may use it (mode {stat.S_IMODE(info.st_mode):o}; it must be {'600' if want_socket else '700'})"
    return None


def peer_uid(connection: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket (None where the system cannot tell)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)[1]


def connect(path: Path, quiet: bool = False) -> socket.socket | None:
    """A connection to this user's own server at ``path``, or None (no server, or one not to be trusted:
    a note says why unless ``quiet``)."""
    if not os.path.lexists(path):
        return None
    problem = None
    for place, is_socket in ((path.parent, False), (path, True)):
        reason = private_problem(place, is_socket)
        if reason is not None:
            problem = f"{place}: {reason}"
            break
    connection = None
    if problem is None:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(CONNECT_SECONDS)
        try:
            connection.connect(str(path))
        except OSError:  # a stale socket file: no server listens
            connection.close()
            return None
        uid = peer_uid(connection)
        if uid not in (None, os.getuid()):
            problem = f"{path}: the process listening there runs as user id {uid}, not as you ({os.getuid()})"
            connection.close()
            connection = None
    if problem is not None:
        if not quiet:
            note(f"not using the seqsift server socket ({problem}); running here")
        return None
    connection.settimeout(None)
    return connection


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def request_for(argv: list[str]) -> dict:
    """What a served job needs of this process: arguments, folder, settings, and whether its streams are terminals."""
    environment = {k: v for k, v in os.environ.items() if caller_setting(k)}
    return {"kind": "run", "argv": list(argv), "cwd": os.getcwd(), "env": environment, "umask": _current_umask(),
            "stdout_tty": sys.stdout.isatty(), "stderr_tty": sys.stderr.isatty()}


def run_on_server(argv: list[str]) -> int | None:
    """Run ``argv`` on this user's server; its exit status, or None when no server takes it (run here)."""
    if not served(argv):
        return None
    connection = connect(socket_path())
    if connection is None:
        return None
    try:
        connection.sendall(json.dumps(request_for(argv)).encode() + b"\n")
        return _relay(connection)
    except KeyboardInterrupt:
        connection.close()  # the server sees the caller gone and interrupts the job there
        print("seqsift: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as err:  # the server went away before it answered
        print(f"seqsift: error: the seqsift server stopped answering ({err.strerror or err})", file=sys.stderr)
        return EXIT_FAILED
    finally:
        connection.close()


def read_frame(reader) -> tuple[bytes, bytes] | None:
    """(kind, payload) of the next frame, or None if the stream ended first."""
    header = reader.read(FRAME.size)
    if len(header) < FRAME.size:
        return None
    kind, length = FRAME.unpack(header)
    payload = reader.read(length)
    return (kind, payload) if len(payload) == length else None


def _relay(connection: socket.socket) -> int:
    """Copy the job's output frames to our stdout and stderr until its exit status arrives."""
    reader = connection.makefile("rb")
    while True:
        frame = read_frame(reader)
        if frame is None:
            print("seqsift: error: the seqsift server ended during the job (its own output says why)",
                  file=sys.stderr)
            return EXIT_FAILED
        kind, payload = frame
        if kind == b"X":
            return int(payload.decode())
        if kind == b"W":
            note(payload.decode(errors="replace"))
            continue
        stream = sys.stdout if kind == b"O" else sys.stderr
        try:
            stream.buffer.write(payload)
            stream.flush()
        except BrokenPipeError:  # `seqsift search ... | head`: stop the job, stay quiet
            connection.close()
            discard_standard_output()
            return EXIT_BROKEN_PIPE


def ask(kind: str, quiet: bool = False) -> dict | None:
    """A ``status`` or ``stop`` request to the server; its answer, or None when none listens (or none
    to be trusted: a note says why unless ``quiet``)."""
    connection = connect(socket_path(), quiet=quiet)
    if connection is None:
        return None
    with connection:
        connection.sendall(json.dumps({"kind": kind}).encode() + b"\n")
        line = connection.makefile("rb").readline()
    try:
        answer = json.loads(line) if line else None
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None
