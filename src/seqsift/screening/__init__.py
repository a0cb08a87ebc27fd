"""The ``screen`` job: Smith-Waterman scores of many sequence pairs (``run.py``).

Beside ``engine/`` (the ``search`` job), it shares only the engine's output
writers and its way of sending data to the workers once.
"""
from .run import SequenceSet, pad_length, plan_tasks, read_sequences, screen

__all__ = ["screen", "read_sequences", "SequenceSet", "plan_tasks", "pad_length"]
