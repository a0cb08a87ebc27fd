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

import os


def _identity(value):
    return value


def on_workers(client, value, name: str):
    """A future holding ``value`` on the cluster, rebuilt by Dask if its worker dies."""
    return client.submit(_identity, value, key=f"{name}-{os.urandom(8).hex()}", pure=False)
