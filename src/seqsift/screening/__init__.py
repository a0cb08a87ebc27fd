"""The ``screen`` job: Smith-Waterman scores of many sequence pairs.

* ``inputs.py``: FASTA/FASTQ files or lists -> one buffer of text codes;
* ``planning.py``: pairs bucketed by padded length, split into tasks;
* ``task.py``: the job (its side of the runtime's protocol) and the worker's
  task (kernels.sw's face: score, screen, align);
* ``output.py``: the client's collectors (strands folded, pair order) and writers;
* ``run.py``: :func:`screen` itself: checks, the inputs, the job run by the
  runtime (``seqsift.runtime``, as search and crispr are);
* ``cli.py``: the ``seqsift screen`` subcommand.
"""
from .inputs import SequenceSet, read_sequences
from .planning import pad_length, plan_tasks
from .run import screen

__all__ = ["screen", "read_sequences", "SequenceSet", "plan_tasks", "pad_length"]
