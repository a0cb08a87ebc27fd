"""seqsift's cache directory: ``$SEQSIFT_CACHE``, else ``$XDG_CACHE_HOME/seqsift``, else ``~/.cache/seqsift``.

It holds the references' decompressed or normalised copies and indexes
(``reference/``, see reference.py) and the algorithm tables ``seqsift bench``
measures on this machine (kernels/planner.py). On a cluster it must be on a
filesystem the workers share.
"""
from __future__ import annotations

import os
from pathlib import Path

from .errors import InputError


def cache_directory(create: bool = True) -> Path:
    """seqsift's cache directory, created unless ``create=False``."""
    if os.environ.get("SEQSIFT_CACHE"):
        directory = Path(os.path.expanduser(os.environ["SEQSIFT_CACHE"]))
    elif os.environ.get("XDG_CACHE_HOME"):
        directory = Path(os.environ["XDG_CACHE_HOME"]) / "seqsift"
    else:
        directory = Path.home() / ".cache" / "seqsift"
    if create:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise InputError(f"cannot create seqsift's cache directory {directory} ({err.strerror or err}); "
                             f"set SEQSIFT_CACHE to a writable directory") from None
    return directory
