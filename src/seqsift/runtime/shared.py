"""What every task of a job needs (the job, the sequences), held on the workers.

``client.scatter`` would put the value on the workers as data the scheduler
cannot rebuild: if the worker holding it dies (the only worker of a one-GPU
machine, say), every task that needs it fails. :func:`on_workers` instead
makes the value the result of a trivial task, which Dask recomputes
elsewhere when its worker is lost; the value travels in that task once and
from worker to worker as tasks need it. On task threads in this process
(``cluster.TaskThreads``) that task ends at once and the tasks are handed
the value itself.
"""
from __future__ import annotations

import contextlib
import os
import sys


def _identity(value):
    return value


def on_workers(client, value, name: str):
    """A future holding ``value`` on the cluster, rebuilt by Dask if its worker dies.

    Sending the value in the task is the point, so Dask's warning about a large graph (a screen's
    sequences, tens of MB, once per job) would only alarm the user: it is off for this submit.
    """
    dask = sys.modules.get("dask")   # imported by any Dask client; task threads in this process never import it
    quiet = (dask.config.set({"distributed.admin.large-graph-warning-threshold": "1 PB"}) if dask is not None
             else contextlib.nullcontext())
    with quiet:
        return client.submit(_identity, value, key=f"{name}-{os.urandom(8).hex()}", pure=False)
