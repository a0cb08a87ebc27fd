"""Values built once per key and kept with the object that holds the :class:`Memo`.

What a worker derives from a job's inputs and would otherwise redo for every
chunk task (a pattern range's oriented rows, the bit vectors or device copies
a launcher makes of them) is kept in a Memo on the object it derives from:
``PatternSet`` (its batches), ``PatternBatch`` (what launchers derive),
``GuideRows`` (its device words), ``CrisprJob`` (its guide rows). The two
task threads of a worker ask together, so a build runs under a lock, once.
A Memo pickles empty: a job sent to a worker arrives without the sender's
values (device arrays, among them, belong to the process that made them).
"""
from __future__ import annotations

import threading

_MISSING = object()


class Memo:
    def __init__(self):
        self._values: dict = {}
        self._lock = threading.RLock()  # re-entrant: a build may ask the same Memo for another key

    def get(self, key, build):
        """The value kept for ``key``; ``build()`` makes it the first time (once, however many threads ask)."""
        value = self._values.get(key, _MISSING)
        if value is _MISSING:
            with self._lock:
                value = self._values.get(key, _MISSING)
                if value is _MISSING:
                    value = self._values[key] = build()
        return value

    def items(self):
        return list(self._values.items())

    def __reduce__(self):
        return (Memo, ())
