"""The job runtime: how search, crispr and screen run, written once.

A job (``searching.SearchJob``, ``crispr.task.CrisprJob``,
``screening.task.ScreenJob``) says what its tasks are and how their rows
become output (``job.py``, the protocol); the runtime does the rest, the
same way for all three (``run.py``: checks, output lock, writer, task store
and resume, cluster, tasks, ordered output, the end, abort). Its pieces:

====================  =================================================================
``run.py``            ``JobRun``: one job's run, start to end; ``run_tasks``
``job.py``            the job protocol (``Plan``, ``Collector``, ``Writer``)
``clients.py``        which backend, and where the tasks run (a Dask client, task threads)
``lock.py``           one job at a time per output file
``store.py``          finished tasks saved beside the output, for ``--resume``
``output.py``         output files (TSV, BED, Parquet, ``.gz``), whole or not at all
``order.py``          the one stable sort of output rows
``windows.py``        a worker's reference windows (host and GPU), kept between jobs
``background.py``     writes on a thread of their own
``shared.py``         a value sent to the workers once
``progress.py``       the progress line on stderr
``stages.py``         where a job's time goes (benchmarks)
====================  =================================================================

Nothing here knows what a kernel or a hit is; the jobs import the runtime,
never the other way round.
"""
