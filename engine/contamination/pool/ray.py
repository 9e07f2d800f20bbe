"""The Ray backend: shards scanned by Ray actors, on this machine or a cluster.

Ray is an optional extra (``pip install 'sealdesk[ray]'``) imported only
here, only when ``--backend ray`` is asked for. The job (eval index,
fields, embedding plan) is put in the object store once (``ray.put``) and
every actor is constructed from that one object: each worker deserializes
it once, and loads the embedding model once. A shard task returns only its
``ShardOutcome`` (matches, hash piece, ids, top-k), never the shard's rows.

Where Ray runs: ``--ray-address auto`` joins the cluster running on this
machine (``ray start --head``), ``--ray-address ray://HOST:PORT`` a remote
one through Ray Client; without an address a local Ray is started for the
run with ``--ray-num-cpus`` CPUs and shut down after it. On a cluster the
engine's code is shipped with the job (``runtime_env`` ``py_modules``);
the nodes need sealdesk's dependencies installed, and every shard URL must
be readable from every node (a shared file system or object store).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.contamination.inputs.shards import Shard
from engine.contamination.pool.base import ProgressReport, ShardCrash
from engine.contamination.pool.shard_scan import (
    ShardAttemptFailed,
    ShardJob,
    ShardReply,
    one_line,
    prepare_worker,
    scan_shard,
)
from engine.errors import SealdeskError

OBJECT_STORE_BYTES = 256 * 1024 * 1024


class RayUnavailable(SealdeskError):
    """--backend ray was asked for but Ray is not installed."""

    exit_code = 2


def import_ray() -> Any:
    """Gives the ray module, or raises the one-line error saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            "--backend ray needs Ray: pip install 'sealdesk[ray]' (or use --backend local)"
        ) from exc
    return ray


def check_reachable(address: str) -> None:
    """Refuses, in seconds, a HOST:PORT nobody answers on (Ray itself waits minutes)."""
    import socket

    hostport = address.split("://", 1)[-1]
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(
            f"cannot join Ray at {address}: expected auto, HOST:PORT or ray://HOST:PORT"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise RayUnavailable(
            f"cannot join Ray at {address}: nothing answers there ({exc.strerror or exc})"
        ) from exc


class ShardActor:
    """A Ray worker holding the job and, for the paraphrase channel, its own model."""

    def __init__(self, job: ShardJob, progress: Any) -> None:
        self.job = job
        self.progress = progress
        self.embedder = prepare_worker(job)  # one model per actor, loaded at its first miss

    def ready(self) -> bool:
        """Gives True once constructed (the job deserialized, the model loaded)."""
        return True

    def scan(self, shard: Shard, rescan: bool) -> ShardReply:
        """Gives the reply for one shard (``rescan`` ignores its record)."""
        job = replace(self.job, done=frozenset()) if rescan else self.job
        report = ProgressReport(
            shard.position, lambda position, count: self.progress.add.remote(position, count)
        )
        reply = scan_shard(job, shard, report, self.embedder)
        report.flush()
        return reply


class ProgressBox:
    """Documents done per shard, collected from the actors for the driver."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def add(self, position: int, count: int) -> None:
        """Counts documents a worker finished."""
        self.counts[position] = self.counts.get(position, 0) + count

    def take(self) -> dict[int, int]:
        """Gives the counts since the last take."""
        counts, self.counts = self.counts, {}
        return counts


class RayBackend:
    """Shards on Ray actors; one actor per CPU unless told otherwise."""

    name = "ray"

    def __init__(
        self, address: str | None = None, num_cpus: int | None = None, workers: int | None = None
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.workers = workers or 0
        self.ray = import_ray()
        self._started_here = False
        self._actors: list[Any] = []
        self._load: dict[int, int] = {}  # actor slot -> tasks in flight
        self._slot_of: dict[Any, int] = {}  # task ref -> actor slot
        self._progress: Any = None
        self._job_ref: Any = None
        self._replaced = 0

    def connect(self) -> None:
        """Joins or starts Ray (a session already open in this process is used as is)."""
        ray = self.ray
        if ray.is_initialized():
            return
        options: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.ERROR,
        }
        if self.address and self.address != "auto":
            check_reachable(self.address)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the error below says it in one line
                if self.address:
                    # the cluster's workers run the engine code of this driver
                    options["runtime_env"] = {
                        "py_modules": [str(Path(__file__).resolve().parents[2])]
                    }
                    ray.init(address=self.address, **options)
                else:
                    ray.init(
                        num_cpus=self.num_cpus, object_store_memory=OBJECT_STORE_BYTES, **options
                    )
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError...
            where = f"join Ray at {self.address}" if self.address else "start a local Ray"
            raise RayUnavailable(f"cannot {where}: {one_line(exc)}") from exc
        self._started_here = True

    def start(self, job: ShardJob) -> None:
        ray = self.ray
        self.connect()
        if not self.workers:
            self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._job_ref = ray.put(job)
        self._progress = ray.remote(num_cpus=0)(ProgressBox).remote()
        self._actor_class = ray.remote(num_cpus=1, max_restarts=0)(ShardActor)
        self._actors = [self._new_actor() for _ in range(self.workers)]
        self._load = {slot: 0 for slot in range(self.workers)}
        waiting = list(range(self.workers))
        for _ in range(3):  # an actor that dies while starting is replaced, twice at most
            failed = []
            for slot in waiting:
                try:
                    ray.get(self._actors[slot].ready.remote())
                except ray.exceptions.RayError as exc:
                    failed.append(slot)
                    reason = one_line(exc)
            if not failed:
                return
            for slot in failed:
                self._actors[slot] = self._new_actor()
            waiting = failed
        self.close()
        raise RayUnavailable(f"the Ray workers could not start: {reason}")

    def _new_actor(self) -> Any:
        return self._actor_class.remote(self._job_ref, self._progress)

    def submit(self, shard: Shard, rescan: bool) -> Any:
        slot = min(self._load, key=lambda s: (self._load[s], s))
        ref = self._actors[slot].scan.remote(shard, rescan)
        self._load[slot] += 1
        self._slot_of[ref] = slot
        return ref

    def wait(self, handles: list[Any], timeout: float) -> list[Any]:
        ray = self.ray
        ready, rest = ray.wait(handles, num_returns=1, timeout=timeout)
        if ready and rest:
            more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
            ready += more
        return ready

    def result(self, handle: Any) -> ShardReply:
        ray = self.ray
        slot = self._slot_of.pop(handle)
        self._load[slot] -= 1
        try:
            return ray.get(handle)
        except ray.exceptions.RayActorError as exc:
            self._replace(slot)
            raise ShardCrash("its Ray worker died (killed, or out of memory)") from exc
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            raise ShardCrash(
                str(cause) if isinstance(cause, ShardAttemptFailed) else one_line(cause or exc)
            ) from exc

    def _replace(self, slot: int) -> None:
        """Puts a fresh actor in a dead one's place (a bounded number of times)."""
        self._replaced += 1
        if self._replaced <= 4 * self.workers:
            self._actors[slot] = self._new_actor()

    def progress(self) -> dict[int, int]:
        return self.ray.get(self._progress.take.remote())

    def close(self) -> None:
        ray = self.ray
        for actor in self._actors:
            ray.kill(actor)
        if self._progress is not None:
            ray.kill(self._progress)
        self._actors = []
        if self._started_here:
            ray.shutdown()
            self._started_here = False
