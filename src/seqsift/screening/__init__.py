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
__all__ = ["screen", "read_sequences", "SequenceSet", "plan_tasks", "pad_length"]

_FROM = {"screen": ".run", "read_sequences": ".inputs", "SequenceSet": ".inputs", "plan_tasks": ".planning",
         "pad_length": ".planning"}


def __getattr__(name: str):
    """The package's face, imported on first use: ``seqsift screen --help`` (cli.py imports this
    package's cli.py) loads no kernels, NumPy or pandas."""
    if name not in _FROM:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(_FROM[name], __name__), name)
    globals()[name] = value
    return value
