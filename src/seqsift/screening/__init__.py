"""The ``screen`` job: Smith-Waterman scores of many sequence pairs.

* ``inputs.py``: FASTA/FASTQ files or lists -> one buffer of text codes;
* ``planning.py``: pairs bucketed by padded length, split into tasks;
* ``task.py``: the worker's task (kernels.sw's face: score, screen, align);
* ``run.py``: :func:`screen` itself: checks, the tasks on Dask, the output.

Beside ``engine/`` (the ``search`` job), it shares only the engine's output
writers and its way of sending data to the workers once.
"""
from .inputs import SequenceSet, read_sequences
from .planning import pad_length, plan_tasks
from .run import screen

__all__ = ["screen", "read_sequences", "SequenceSet", "plan_tasks", "pad_length"]
