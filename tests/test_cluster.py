"""Clusters: local ones private to their user, joining a running one by scheduler file, and
workers that keep what they read."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pandas as pd
import pytest
from distributed import Client, Security

import fault_injection
import seqsift
from seqsift.cluster import local_cluster
from test_engine import adversarial_genome, engine_frame, write_fasta


def test_second_pattern_set_does_not_reread_the_reference(tmp_path):
    records, patterns = adversarial_genome(4)
    reference = write_fasta(tmp_path / "ref.fa", records)
    cluster = local_cluster("cpu", workers=1)
    try:
        with Client(cluster) as client:
            # The first pattern set has the longest pattern: its chunks read the longest halo.
            seqsift.search(reference, patterns[:2], 1, client=client, chunk_size=200)
            log = tmp_path / "reads.log"
            client.run(fault_injection.count_reads, str(log))
            again = seqsift.search(reference, patterns[2:], 1, client=client, chunk_size=200)
            assert not log.exists(), "the worker read the FASTA again"
            # The cached windows give the same hits as a cold read.
            cold = seqsift.search(reference, patterns[2:], 1, client=client, chunk_size=201)
            assert log.exists()
            pd.testing.assert_frame_equal(engine_frame(again), engine_frame(cold))
    finally:
        cluster.close()


def _dask_tls_environment(security: Security, folder) -> dict:
    """Environment variables that give a Dask client ``security``'s credentials (Dask's own
    configuration, ``distributed.comm.tls.*``), as a user joining a TLS cluster sets them."""
    files = {}
    for name, contents in (("ca.pem", security.tls_ca_file), ("cert.pem", security.tls_client_cert),
                           ("key.pem", security.tls_client_key)):
        files[name] = folder / name
        files[name].write_text(contents)
    return {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(files["ca.pem"]),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(files["cert.pem"]),
            "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(files["key.pem"])}


def test_cli_joins_a_running_cluster_by_scheduler_file(tmp_path, client):
    """The fixture's cluster is a seqsift local cluster, so TLS: the command joins it with the
    credentials given through Dask's configuration."""
    records, patterns = adversarial_genome(5)
    reference = write_fasta(tmp_path / "ref.fa", records)
    scheduler_file = tmp_path / "scheduler.json"
    client.write_scheduler_file(str(scheduler_file))
    out = tmp_path / "hits.tsv"
    result = subprocess.run([sys.executable, "-m", "seqsift", "search", reference, "GGATCCATG", "-k", "1",
                             "--scheduler-file", str(scheduler_file), "--backend", "cpu", "-o", str(out)],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, **_dask_tls_environment(client.security, tmp_path)})
    assert result.returncode == 0, result.stderr
    expected = seqsift.search(reference, ["GGATCCATG"], 1, client=client)
    got = pd.read_csv(out, sep="\t").rename(columns={"#record": "record"})
    assert got["start"].tolist() == expected["start"].tolist() and len(got) > 0
    assert client.scheduler_info()["workers"], "the CLI must leave a cluster it joined running"


def _http_status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_local_cluster_is_tls_on_localhost_without_http_routes(client):
    """The fixture's cluster, as seqsift starts every local one: TLS on 127.0.0.1 for the scheduler
    and the workers, and their HTTP servers answer nothing (no dashboard, health or metrics)."""
    info = client.scheduler_info(n_workers=-1)
    addresses = [client.scheduler.address, *info["workers"]]
    assert all(address.startswith("tls://127.0.0.1:") for address in addresses), addresses
    http_ports = [info["services"]["dashboard"]] + [w["services"]["dashboard"] for w in info["workers"].values()]
    for port in http_ports:
        for path in ("/status", "/health", "/metrics", "/info/main/workers.html", "/json/identity.json"):
            assert _http_status(port, path) == 404, (port, path)


def test_in_process_gpu_cluster_serves_no_http_routes():
    """The one-GPU cluster runs its worker in this process (no network: inproc); its scheduler's
    HTTP server must not take 8787 or answer anything either. (Built here without a GPU:
    only the cluster is checked, no kernel runs.)"""
    from seqsift.cluster import in_process_gpu_cluster

    cluster = in_process_gpu_cluster()
    try:
        with Client(cluster) as own:
            assert own.scheduler.address.startswith("inproc://")
            port = own.scheduler_info()["services"]["dashboard"]
            assert port != 8787
            assert _http_status(port, "/health") == 404
    finally:
        cluster.close()


def test_local_cluster_refuses_clients_without_its_credentials(client):
    """Another user on the machine can reach 127.0.0.1 but cannot submit work: neither in plain
    TCP nor with TLS credentials of their own."""
    address = client.scheduler.address
    with pytest.raises((OSError, TimeoutError)):
        Client(address.replace("tls://", "tcp://"), timeout=5)
    with pytest.raises((OSError, TimeoutError)):
        Client(address, security=Security.temporary(), timeout=5)
    # The cluster's own credentials do connect: the refusals above are not a broken cluster.
    with Client(address, security=client.security, timeout=30) as own:
        assert own.submit(sum, [1, 2], pure=False).result() == 3


def test_dashboard_when_asked():
    """--dashboard: the scheduler serves its dashboard routes (on 8787 when free)."""
    from seqsift.cluster import local_cluster

    cluster = local_cluster("cpu", workers=1, dashboard=True)
    try:
        with Client(cluster) as own:
            port = own.scheduler_info()["services"]["dashboard"]
            assert _http_status(port, "/health") == 200
            assert _http_status(port, "/status") == 200
    finally:
        cluster.close()


def test_no_port_warning_when_another_cluster_holds_8787(tmp_path):
    """Another Dask cluster's dashboard on 8787 (here a plain listener, or whoever holds it)
    must not make every run print Dask's four-line 'Port 8787 is already in use' warning."""
    console_script = shutil.which("seqsift")
    if console_script is None:
        pytest.skip("the seqsift console script is not installed (pip install .)")
    reference = write_fasta(tmp_path / "ref.fa", [("chr1", "ACGTTGCAAGGCTAGCTAGGATCCATGCAAATTTGG" * 50)])
    with socket.socket() as holder:
        try:
            holder.bind(("127.0.0.1", 8787))
            holder.listen()
        except OSError:  # already held by someone else: the situation this test needs
            pass
        result = subprocess.run([console_script, "search", reference, "GGATCCATG", "-k", "1", "--backend", "cpu",
                                 "--workers", "1", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.count("\n") > 1


def _watch_connections(monkeypatch):
    """Record, for every cluster a job starts, the thread that started it and whether it was shut down."""
    import contextlib
    import threading

    import seqsift.cluster as cluster_module

    started = []
    real_connect = cluster_module.connect

    @contextlib.contextmanager
    def watched_connect(backend, **options):
        entry = {"thread": threading.current_thread().name, "closed": False}
        started.append(entry)
        with real_connect(backend, **options) as client:
            try:
                yield client
            finally:
                entry["closed"] = True

    monkeypatch.setattr(cluster_module, "connect", watched_connect)
    return started


def test_a_cluster_started_ahead_runs_the_job_it_was_started_for(tmp_path, monkeypatch, capsys):
    """The one-GPU path (the cluster lives in this process, so it starts while the reference is
    read), taken here by a CPU cluster of one worker: same hits as the oracle, and the cluster was
    started on its own thread and shut down with the job."""
    from naive_search import expected_rows
    from seqsift.runtime.clients import JobClient

    started = _watch_connections(monkeypatch)
    monkeypatch.setattr(JobClient, "ahead_backend", lambda self, backend: "cpu")
    records, patterns = adversarial_genome(3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    got = seqsift.search(str(reference), patterns, 2, metric="edit", backend="cpu", workers=1)
    expected = expected_rows(records, patterns, 2, "edit", "best")
    assert len(expected) > 10
    pd.testing.assert_frame_equal(engine_frame(got).reset_index(drop=True),
                                  engine_frame(expected).reset_index(drop=True), check_dtype=False)
    assert started == [{"thread": "seqsift-cluster-start", "closed": True}]
    assert "shutting down its cluster failed" not in capsys.readouterr().err  # closed from the job's thread


@pytest.mark.parametrize("fails", [False, True])
def test_a_cluster_started_ahead_runs_its_prepare_on_the_start_thread_once_up(monkeypatch, fails):
    """``prepare`` runs on the start thread after the cluster is up, and the job gets its client
    without waiting for it (here prepare waits for the job to hold the client); what it raises is
    dropped (the job meets the same error itself). ``wait_prepared`` returns once prepare has ended (a
    thread that waits on it notes when), and at once for a connection not started ahead."""
    import contextlib
    import threading

    import seqsift.cluster as cluster_module

    events = []
    job_has_client, prepared = threading.Event(), threading.Event()

    @contextlib.contextmanager
    def fake_connect(backend, **options):
        events.append(("up", threading.current_thread().name))
        yield "the client"
        events.append(("down", threading.current_thread().name))

    def prepare():
        assert job_has_client.wait(60)
        events.append(("prepare", threading.current_thread().name))
        prepared.set()
        if fails:
            raise RuntimeError("no device")

    monkeypatch.setattr(cluster_module, "connect", fake_connect)
    connection = cluster_module.Connection("cuda", ahead=True, prepare=prepare)
    waiter = threading.Thread(target=lambda: (connection.wait_prepared(), events.append(("waited",))))
    waiter.start()
    with connection as client:
        assert client == "the client"
        job_has_client.set()
        assert prepared.wait(60)
        waiter.join(60)
        assert events == [("up", "seqsift-cluster-start"), ("prepare", "seqsift-cluster-start"), ("waited",)]
    assert events[-1] == ("down", threading.current_thread().name)
    cluster_module.Connection("cpu").wait_prepared()   # not started ahead: nothing to wait for


@pytest.mark.parametrize("problem", ["missing reference", "pattern longer than every record", "output locked"])
def test_a_job_that_fails_before_it_runs_shuts_down_the_cluster_started_for_it(tmp_path, monkeypatch, problem):
    from seqsift.errors import InputError
    from seqsift.runtime.clients import JobClient
    from seqsift.runtime.lock import OutputLock

    started = _watch_connections(monkeypatch)
    monkeypatch.setattr(JobClient, "ahead_backend", lambda self, backend: "cpu")
    records, patterns = adversarial_genome(3)
    reference = write_fasta(tmp_path / "ref.fa", records)
    output = tmp_path / "hits.tsv"
    holder = None
    if problem == "missing reference":
        reference = tmp_path / "absent.fa"
    elif problem == "pattern longer than every record":
        patterns = [("long", "ACGT" * 400)]
    else:
        holder = OutputLock(os.path.realpath(output))  # another job is writing the output
    try:
        with pytest.raises(InputError):
            seqsift.search(str(reference), patterns, 1, backend="cpu", workers=1, output=str(output))
    finally:
        if holder is not None:
            holder.release()
    # A locked output is found before anything starts; the others fail while the cluster starts.
    expected = [] if problem == "output locked" else [{"thread": "seqsift-cluster-start", "closed": True}]
    assert started == expected
    assert not output.exists()


def test_a_jobs_writer_imports_wait_for_what_the_cluster_readies_ahead(monkeypatch):
    """JobRun's import thread (pandas, pyarrow) first waits for the cluster started ahead to ready the
    device (JobClient.ahead_prepared), so that the two imports do not take turns at the GIL on the way
    to the first kernel; without a cluster started ahead it waits for nothing."""
    from seqsift.runtime import clients
    from seqsift.runtime import run as run_module

    order = []
    monkeypatch.setattr(run_module.importlib, "import_module", order.append)
    run_module._import_all(("pandas", "pyarrow"), lambda: order.append("device ready"))
    assert order == ["device ready", "pandas", "pyarrow"]
    job_client = clients.JobClient()
    assert job_client.ahead_prepared()() is None   # nothing started ahead (a CPU job)


@pytest.mark.parametrize("gpus, have, fragment", [
    ([0, 2], 2, "no GPU 2 (it has GPUs 0 to 1)"),
    ([1], 1, "no GPU 1 (it has GPU 0 alone)"),
    ([0], 0, "no GPU 0 (it has no GPU at all)"),
    ([-1], 4, "no GPU -1"),
    ([1, 1], 4, "a GPU is named twice"),
])
def test_gpu_indices_the_machine_lacks_are_input_errors(monkeypatch, gpus, have, fragment):
    """--gpus is checked before dask-cuda starts a worker for each index (one for a missing GPU dies at
    its first CUDA call, and the job waits for it)."""
    from seqsift import cluster
    from seqsift.errors import InputError
    from seqsift.runtime.clients import check_gpu_indices

    monkeypatch.setattr(cluster, "machine_gpus", lambda: have)
    with pytest.raises(InputError, match=re.escape(fragment)):
        check_gpu_indices(gpus)
    check_gpu_indices(None)
    check_gpu_indices(list(range(have)))
