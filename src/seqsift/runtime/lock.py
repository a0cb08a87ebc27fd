"""One job at a time per output file: an exclusive lock beside it.

Two jobs writing the same ``-o`` would share its task store
(``.FILE.seqsift-tasks/``) and mix each other's rows, or delete the store the
other one still writes. :class:`OutputLock` takes an exclusive ``flock`` on
``.FILE.seqsift-lock`` for the whole job; a second job either stops with a
one-line error naming the first (pid, host, start time, command), or, asked
to wait (``--wait-for-lock``, ``wait_for_lock=True``), blocks until the
first one is done.

The lock file holds the holder's details as JSON, so that the error can
name it. The holder deletes the file when it is done, while still holding
the lock; a job that was waiting on the deleted file then sees that its
file is no longer the one at the path (different inode, or no link left)
and locks afresh. A killed job's lock is released by the kernel: a stale
file with no holder never blocks anyone.

``flock`` is per open file, so it also separates two jobs in one Python
process; on Linux NFS clients it is carried out as a POSIX lock, which the
server honours across hosts.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from ..errors import InputError


def lock_path_for(output: str | os.PathLike) -> Path:
    """``dir/hits.tsv`` -> ``dir/.hits.tsv.seqsift-lock`` (a dataset folder's trailing / dropped)."""
    output = Path(str(output).rstrip("/" + os.sep))
    return output.parent / f".{output.name}.seqsift-lock"


def _holder_description(path: Path) -> str:
    """'pid 123 on node7, started 2026-11-23 20:01:02 UTC: seqsift search ...', or why not known."""
    try:
        holder = json.loads(path.read_text())
        return (f"pid {holder['pid']} on {holder['host']}, started {holder['started']}: "
                f"{holder['command']}")
    except (OSError, ValueError, KeyError, TypeError):
        return "its details are not written yet"


class OutputLock:
    """An exclusive lock on one output path, held from :meth:`acquire` to :meth:`release`."""

    def __init__(self, output: str | os.PathLike, *, wait: bool = False, note=None):
        self.output = output
        self.path = lock_path_for(output)
        self._fd: int | None = None
        self._acquire(wait, note)

    def _acquire(self, wait: bool, note) -> None:
        announced = False
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            except OSError as err:  # /proc, a read-only mount, a folder we may not write
                raise InputError(f"{self.output}: cannot write there ({err.strerror or err})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise InputError(f"{self.output}: cannot lock the output ({err.strerror or err})") from None
                holder = _holder_description(self.path)
                if not wait:
                    os.close(fd)
                    raise InputError(f"{self.output}: another seqsift job is writing this output ({holder}); "
                                     "wait for it to finish, or add --wait-for-lock to wait for it") from None
                if not announced and note is not None:
                    note(f"waiting for another seqsift job writing {self.output} ({holder})")
                    announced = True
                fcntl.flock(fd, fcntl.LOCK_EX)   # blocks until the other job is done
            if self._still_at_path(fd):
                break
            os.close(fd)   # the holder deleted the file we waited on: lock the new one
        self._fd = fd
        details = {"pid": os.getpid(), "host": socket.gethostname(),
                   "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                   "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else "python"}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(details).encode(), 0)

    def _still_at_path(self, fd: int) -> bool:
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return held.st_nlink > 0 and (held.st_dev, held.st_ino) == (at_path.st_dev, at_path.st_ino)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Delete the lock file, then unlock (in that order: see the module docstring). Idempotent."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)   # closing the last descriptor releases the flock
            self._fd = None

    def __enter__(self) -> "OutputLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()
