"""Fault drill: kill real workers at random points and restart Redis, then check that every kind of
long work finished with nothing lost and nothing duplicated. Prints one JSON object.

    .venv/bin/python scripts/fault_drill.py              # 3 kills per kind: 5-9 minutes on 2 cores
    .venv/bin/python scripts/fault_drill.py --short      # 1 kill per kind, small sizes (CI): 2-6 minutes
    make drill DRILL_ARGS=--short

(The longer times are with other test runs sharing the 2 cores.)

Everything it uses is its own: a PostgreSQL database (--database, default dsm_drill, dropped and
created, migrated, dropped at the end unless --keep) on DRILL_POSTGRES_URL's server, a redis-server
process on a free localhost port (never the machine's Redis), data, model and log folders in a
temporary folder. Workers are real Celery processes (`celery -A workers worker --pool solo`), two
per queue in use, so a standing worker's recovery sweeper finds a killed one's work, as in a
deployment with several workers; a replacement is started after each kill. The lifecycle runs fast
(a beat every second, lost after 5 s, a sweep every second) and the broker's visibility timeout is
an hour: recovery must come from heartbeats and the sweeper (webapp.lifecycle.recovery), never from
the broker redelivering.

Each round launches one unit of work through the functions the web app calls, waits for a random
point (a seeded fraction of its progress), SIGKILLs the worker holding it and measures the recovery
time: from the kill until another worker has claimed the unit (attempts went up). Then it waits for
the work to end and counts what is missing ("lost") and what is there more than once
("duplicated"):
* relevance: a job (webapp.pipeline.jobs.launch, planned by a `default` worker) of a tiny random
  Llama; exactly one map per planned (note, task) pair, the job done with done == total;
* dataset_build: launch_build over N notes' fabricated relevance maps (a build over the few maps
  a tiny job makes lasts milliseconds, too short to be killed in), compared as a multiset of
  (note, label, char_start) with the same build done once without faults;
* export: a Hugging Face `datasets` folder of that dataset (request_export; the slowest format
  to write, so a kill lands inside it); the folder's example ids against the dataset's;
* training_run: a tiny DSM run with checkpoints (webapp.training.runs.launch); done with
  step == total_steps, one RunMetric per step, one registered model;
* import: a JSONL upload imported as a background job (webapp.corpus.import_jobs.launch); every
  external id once, the job done with created == the file's notes.
Two more rounds restart Redis (SIGKILL) while chunk messages wait in the queue: with persistence
(AOF, fsync always: the messages survive) and without (they are lost; the sweeper sends them
again once the queue is found empty): redis_restart_persistent / redis_restart_volatile, where
"killed" counts restarts and the recovery time runs until a chunk that was waiting is claimed.

Three rounds drill webhook deliveries (an outbox the sweeper re-sends, on a queue of their own),
against a receiver on loopback that the drill runs (OUTBOUND_ALLOWED_NETWORKS=127.0.0.0/8):
* webhook_redis_restart: deliveries whose receiver failed once wait for their retry when Redis is
  restarted without persistence; every one is delivered (lost: not delivered);
* webhook_worker_kill: the `webhooks` workers are SIGKILLed while one attempt hangs on a receiver
  that does not answer and the others' retries are pending; every one is delivered by the
  replacements (duplicated: a delivery the receiver answered 2xx more than twice, once for the
  attempt a kill interrupted and once for the one that recorded it);
* webhook_slow_receiver: an import of DRILL_SLOW_IMPORT notes runs while every delivery worker
  waits on a receiver that sleeps 30 s; it must end in its normal time (measured just before,
  without deliveries: "recovered" when it took at most twice that plus 5 s).

Output: {kind: {"killed", "recovered", "max_recovery_s", "lost", "duplicated"}, ..., "seed",
"rounds", "loadavg", "seconds", "ok"}; a kind that could not be drilled has an "error". Exit status
1 when anything was lost, duplicated or left unfinished (the worker logs' folder is printed).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LIFECYCLE = {  # every process of the drill, workers and this one
    "WORK_HEARTBEAT_SECONDS": "1",
    "WORK_STALL_SECONDS": "5",
    "WORK_SWEEP_SECONDS": "1",
    "WORK_REQUEUE_GRACE_SECONDS": "3",
    "CELERY_VISIBILITY_TIMEOUT": "3600",  # the broker never redelivers within the drill
    "TRAINING_POLL_SECONDS": "0.2",  # a run's step is written often enough to pick a point in it
    "OMP_NUM_THREADS": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"
EXPORT_FORMAT = "hf"  # the slowest to write (Arrow files, then save_to_disk): a kill lands inside it
KINDS = (
    "relevance",
    "redis_restart_persistent",
    "redis_restart_volatile",
    "dataset_build",
    "export",
    "training_run",
    "import",
    "webhook_redis_restart",
    "webhook_worker_kill",
    "webhook_slow_receiver",
)
WEBHOOKS = {  # the drill's workers reach its receiver on loopback; retries come quickly
    "OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8",
    "WEBHOOK_BACKOFF_SECONDS": "2",
    "WEBHOOK_TIMEOUT_SECONDS": "3",
}
WEBHOOK_DELIVERIES = 6  # a round's deliveries
SLOW_RECEIVER_SECONDS = 30
DRILL_SLOW_IMPORT = 2_000  # notes of the import timed beside a sleeping receiver


@dataclass(frozen=True)
class Sizes:
    relevance_notes: int  # x relevance_tasks prompts, chunk_size a chunk
    relevance_tasks: int
    chunk_size: int
    bulk_notes: int  # fabricated notes of the dataset build: 3 maps and 2 examples each
    training_steps: int
    import_notes: int
    timeout: float  # seconds for one unit of work to end


# Each unit lasts a few seconds on 2 cores, so its progress (written with the heartbeats, every
# second) passes several points where the kill may land.
SHORT = Sizes(
    relevance_notes=8,
    relevance_tasks=2,
    chunk_size=2,
    bulk_notes=20_000,
    training_steps=200,
    import_notes=100_000,
    timeout=240,
)
FULL = Sizes(
    relevance_notes=12,
    relevance_tasks=3,
    chunk_size=3,
    bulk_notes=40_000,
    training_steps=400,
    import_notes=200_000,
    timeout=400,
)


class DrillError(Exception):
    """A round that could not be carried out (not a loss: the work was not seen through)."""


# ---------------------------------------------------------------- processes


class Processes:
    """Every process the drill started; all are killed at exit, whatever happened."""

    def __init__(self):
        self.started: list[subprocess.Popen] = []
        atexit.register(self.kill_all)

    def start(self, command: list[str], log: Path, env=None) -> subprocess.Popen:
        with log.open("ab") as out:
            process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )
        self.started.append(process)
        return process

    def kill_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)


def _die_with_parent() -> None:
    """In the child: SIGKILL when the drill dies, even by SIGKILL (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))
    except (OSError, AttributeError):  # not Linux: the atexit handler and the finally blocks remain
        pass


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """The drill's own redis-server. `crash_and_restart` SIGKILLs it and starts it again on the same
    port and folder: with persistence (AOF, fsync always) the queues survive, without they are gone."""

    def __init__(self, processes: Processes, folder: Path, log: Path):
        self.processes, self.folder, self.log = processes, folder, log
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self, persistent: bool = False) -> None:
        command = [
            "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes" if persistent else "no",
            "--appendfsync",
            "always",
            "--dir",
            str(self.folder),
        ]
        self.process = self.processes.start(command, self.log)
        self._wait(lambda: self.client().ping(), "redis-server to answer")

    def client(self):
        import redis

        return redis.Redis(port=self.port, socket_timeout=5)

    def make_persistent(self) -> None:
        """Turn the append-only file on now (its first rewrite holds what the server has)."""
        client = self.client()
        client.config_set("appendfsync", "always")
        client.config_set("appendonly", "yes")
        self._wait(lambda: _aof_ready(client.info("persistence")), "the append-only file to be written")

    def crash_and_restart(self, persistent: bool) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        self.start(persistent)

    def waiting(self, queue: str) -> int:
        return self.client().llen(queue)  # kombu's Redis transport: one list per queue

    def _wait(self, ready, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise DrillError(f"redis-server exited (see {self.log})")
            try:
                if ready():
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.1)
        raise DrillError(f"timed out waiting for {what}")


def _aof_ready(info: dict) -> bool:
    return (
        info.get("aof_enabled") == 1
        and not info.get("aof_rewrite_in_progress")
        and not info.get("aof_rewrite_scheduled")
    )


class Worker:
    def __init__(self, processes: Processes, number: int, queues: str, env: dict, logs: Path):
        self.name = f"drill-{number}"
        self.queues = queues
        self.killed = False  # by the drill (or found dead and reported once)
        self.log = logs / f"worker-{number}-{queues.replace(',', '+')}.log"
        self.process = processes.start(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "workers",
                "worker",
                "--queues",
                queues,
                "--pool",
                "solo",
                "--hostname",
                f"{self.name}@%h",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
            ],
            self.log,
            env,
        )

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.killed = True
                raise DrillError(f"worker {self.name} exited at start (see {self.log})")
            if b"ready." in self.log.read_bytes():
                return
            time.sleep(0.2)
        raise DrillError(f"worker {self.name} not ready after {timeout:.0f} s (see {self.log})")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def holds(self, hostname: str) -> bool:
        return hostname.split("@", 1)[0] == self.name

    def kill(self) -> None:
        """SIGKILL: the worker dies mid-task, like a lost machine."""
        self.killed = True
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


class Workers:
    """The drill's workers by queue. A killed one is replaced at once, without waiting for the
    replacement to be ready (a supervisor restarting it); each round first tops every queue in use
    up to its count of ready workers."""

    def __init__(self, processes: Processes, env: dict, logs: Path):
        self.processes, self.env, self.logs = processes, env, logs
        self.all: list[Worker] = []

    def ensure(self, queues: str, count: int) -> None:
        live = [w for w in self.all if w.queues == queues and w.alive]
        live += [self._start(queues) for _ in range(count - len(live))]
        for worker in live:
            worker.wait_ready()

    def _start(self, queues: str) -> Worker:
        worker = Worker(self.processes, len(self.all) + 1, queues, self.env, self.logs)
        self.all.append(worker)
        return worker

    def check(self) -> None:
        """A worker the drill did not kill has exited (it could not start, it crashed): say so
        once, rather than waiting for work nobody will take."""
        for worker in self.all:
            if not worker.killed and not worker.alive:
                worker.killed = True
                raise DrillError(
                    f"worker {worker.name} exited by itself with code {worker.process.returncode} (see {worker.log})"
                )

    def holding(self, hostname: str) -> Worker:
        for worker in self.all:
            if worker.alive and worker.holds(hostname):
                return worker
        raise DrillError(f"the unit is held by {hostname!r}, which is not a live drill worker")

    def kill_and_replace(self, worker: Worker) -> float:
        """SIGKILL the worker, start another on its queues; returns when it was killed (monotonic)."""
        worker.kill()
        killed_at = time.monotonic()
        self._start(worker.queues)
        return killed_at

    def stop(self, queues: str) -> None:
        for worker in self.all:
            if worker.queues == queues and worker.alive:
                worker.kill()


# ---------------------------------------------------------------- results


@dataclass
class Tally:
    """One kind's figures. `killed`: kills that landed while the worker held the unit (or Redis
    restarts); `recovered`: those units claimed again and finished whole."""

    killed: int = 0
    recovered: int = 0
    recovery_s: list[float] = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    unfinished: list[str] = field(default_factory=list)
    error: str = ""

    def as_json(self) -> dict:
        result = {
            "killed": self.killed,
            "recovered": self.recovered,
            "max_recovery_s": round(max(self.recovery_s), 1) if self.recovery_s else None,
            "lost": self.lost,
            "duplicated": self.duplicated,
        }
        if self.unfinished:
            result["unfinished"] = self.unfinished
        if self.error:
            result["error"] = self.error
        return result

    @property
    def ok(self) -> bool:
        return (
            not self.error
            and not self.unfinished
            and self.lost == 0
            and self.duplicated == 0
            and self.killed > 0
            and self.recovered == self.killed
        )

    def add(self, checked: tuple[int, int, str], recovery: float | None) -> None:
        """A unit that ended: its check (lost, duplicated, problem) and, if it was killed, its recovery."""
        lost, duplicated, problem = checked
        self.lost += lost
        self.duplicated += duplicated
        if problem:
            self.unfinished.append(problem)
        elif recovery is not None:
            self.recovered += 1
            self.recovery_s.append(recovery)


@dataclass
class Kill:
    worker: str
    killed_at: float  # time.monotonic()
    units: dict[int, int]  # pk -> attempts when its worker was killed
    progress: float  # the share of the work done when it was killed

    def say(self, what: str, recovery: float, ended) -> None:
        print(
            f"  {what}: killed {self.worker} at {self.progress:.0%} of the work, claimed again after "
            f"{recovery:.1f} s, ended {ended.status} {time.monotonic() - self.killed_at:.1f} s after the kill",
            file=sys.stderr,
            flush=True,
        )


def multiset_difference(expected: Counter, found: Counter) -> tuple[int, int]:
    """(lost, duplicated): items expected but missing, items found more often than expected."""
    return sum((expected - found).values()), sum((found - expected).values())


# ---------------------------------------------------------------- the drill


class Drill:
    """The rounds of each kind: launch through the app's functions, kill at a random point, wait,
    check. Waits fail after one unit's timeout, or at once when a worker exits by itself."""

    def __init__(self, args, sizes: Sizes, redis_server: RedisServer, workers: Workers):
        self.sizes, self.redis, self.workers = sizes, redis_server, workers
        self.rng = random.Random(args.seed)
        self.counter = 0
        self.bulk_corpus = self.baseline = self.training_dataset = None

    def target(self) -> float:
        """The random point of a kill: the share of the unit's work done by then."""
        return self.rng.uniform(0.15, 0.7)

    def unique(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    # ------------------------------------------------------------ waiting

    def wait(self, predicate, what: str, interval: float = 0.05):
        """predicate()'s first true value; fails after the unit timeout, or at once if a worker died by itself."""
        deadline = time.monotonic() + self.sizes.timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            self.workers.check()
            time.sleep(interval)
        raise DrillError(f"timed out after {self.sizes.timeout:.0f} s waiting for {what}")

    def wait_ended(self, model, pk: int):
        def ended():
            row = model.objects.get(pk=pk)
            return row if row.is_ended else None

        return self.wait(ended, f"{model.__name__} {pk} to end", interval=0.1)

    def recovery_seconds(self, model, kill: Kill) -> float:
        """Seconds from the kill until every unit the killed worker held is claimed again (or ended)."""
        from webapp.lifecycle.status import ENDED

        def claimed_again():
            rows = model.objects.filter(pk__in=kill.units).values_list("pk", "attempts", "status")
            return all(attempts > kill.units[pk] or status in ENDED for pk, attempts, status in rows)

        self.wait(claimed_again, f"{model.__name__} {sorted(kill.units)} to be claimed again")
        return time.monotonic() - kill.killed_at

    # ------------------------------------------------------------ shared inputs

    def prepare(self) -> None:
        from tests.ml.conftest import build_model, build_tokenizer
        from webapp.corpus.models import Task
        from webapp.pipeline.models import ModelVersion, PeakProfile

        folder = Path(os.environ["MODEL_DIR"]) / "drill-tiny-llama"
        tokenizer = build_tokenizer("chatml")
        build_model("llama", len(tokenizer)).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        self.model = ModelVersion.objects.create(name="drill-tiny-llama", family="llama", path=str(folder))
        self.relevance_tasks = [
            Task.objects.create(slug=slug, description=description, options=options)
            for slug, description, options in RELEVANCE_TASKS[: self.sizes.relevance_tasks]
        ]
        self.map_tasks = {
            slug: Task.objects.create(slug=f"drill-map-{slug}", description=f"{slug} described", options=["y", "n"])
            for slug in PEAKS
        }
        self.profile = PeakProfile.objects.create(name="drill-sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)

    # ------------------------------------------------------------ relevance

    def launch_relevance_job(self):
        from benchmarks.projects import default_project
        from webapp.corpus.models import Corpus, Note
        from webapp.pipeline import jobs

        corpus = Corpus.objects.create(project=default_project(), name=self.unique("drill-relevance"), language="en")
        for i in range(self.sizes.relevance_notes):
            Note.objects.create(corpus=corpus, external_id=f"n{i:03d}", text=relevance_note(i))
        spec = jobs.JobSpec(
            corpus=corpus,
            model_version=self.model,
            task_selection="list",
            tasks=self.relevance_tasks,
            chunk_size=self.sizes.chunk_size,
            method="attnlrp",
            template="en",
        )
        return jobs.launch(spec)  # planned by a `default` worker, as from the web page

    def drill_relevance(self, tally: Tally) -> None:
        from webapp.pipeline.models import RelevanceChunk, RelevanceJob

        for _ in range(3):  # a job that ended before its random point is replaced by another
            job = self.launch_relevance_job()
            kill = self.kill_during_job(job, self.target())
            recovery = None
            if kill is not None:
                tally.killed += 1
                recovery = self.recovery_seconds(RelevanceChunk, kill)
            job = self.wait_ended(RelevanceJob, job.pk)
            tally.add(check_relevance_job(job), recovery)
            if kill is not None:
                kill.say(f"relevance job {job.pk}, chunks {sorted(kill.units)}", recovery, job)
                return
        raise DrillError("three jobs ended before their random point; nothing was killed")

    def kill_during_job(self, job, target: float) -> Kill | None:
        """Once `target` of the job's prompts are done, SIGKILL the worker of one of its running
        chunks, chosen at random. None if the job ended first."""
        from webapp.lifecycle.status import JobStatus
        from webapp.pipeline.models import RelevanceChunk, RelevanceJob

        def holders():
            return sorted(
                set(
                    RelevanceChunk.objects.filter(job=job, status=JobStatus.RUNNING)
                    .exclude(worker="")
                    .values_list("worker", flat=True)
                )
            )

        def reached():
            row = RelevanceJob.objects.get(pk=job.pk)
            return row if row.is_ended or (row.total and row.done >= target * row.total and holders()) else None

        while True:
            row = self.wait(reached, f"job {job.pk} to reach {target:.0%}", interval=0.02)
            if row.is_ended:
                return None
            holder = self.rng.choice(holders() or [""])
            if not holder:
                continue
            worker = self.workers.holding(holder)
            killed_at = self.workers.kill_and_replace(worker)
            orphans = dict(
                RelevanceChunk.objects.filter(job=job, status=JobStatus.RUNNING, worker=holder).values_list(
                    "pk", "attempts"
                )
            )
            if orphans:  # else its chunk ended in the instant before the kill: try again
                return Kill(worker.name, killed_at, orphans, row.done / row.total)

    def drill_redis_restart(self, tally: Tally, persistent: bool) -> None:
        """Restart Redis (SIGKILL) while chunk messages wait in the queue."""
        from webapp.lifecycle.status import JobStatus
        from webapp.pipeline.models import RelevanceChunk, RelevanceJob

        if persistent:
            self.redis.make_persistent()
        job = self.launch_relevance_job()

        def messages_wait():
            return (
                RelevanceChunk.objects.filter(job=job, status=JobStatus.DONE).exists()
                and self.redis.waiting("relevance") >= 2
            )

        self.wait(messages_wait, f"job {job.pk}'s chunks to wait in the queue", interval=0.02)
        self.redis.crash_and_restart(persistent)
        restarted_at = time.monotonic()
        tally.killed += 1
        # No worker takes a message until it has reconnected: the chunks queued now are those
        # whose messages were in the queue (kept, or lost with a volatile Redis).
        waiting = dict(RelevanceChunk.objects.filter(job=job, status=JobStatus.QUEUED).values_list("pk", "attempts"))
        kept = self.redis.waiting("relevance")
        print(
            f"  redis restarted ({'persistent' if persistent else 'volatile'}): {len(waiting)} chunks queued, "
            f"{kept} messages kept",
            file=sys.stderr,
            flush=True,
        )
        if not waiting or (kept > 0) != persistent:
            raise DrillError(
                f"after the restart {len(waiting)} chunks were queued and {kept} messages kept; "
                f"expected chunks queued and {'their' if persistent else 'no'} messages kept"
            )

        def one_waiting_claimed():
            rows = RelevanceChunk.objects.filter(pk__in=waiting).values_list("pk", "attempts")
            return any(attempts > waiting[pk] for pk, attempts in rows)

        self.wait(one_waiting_claimed, "a chunk that waited to be claimed after the restart")
        recovery = time.monotonic() - restarted_at
        job = self.wait_ended(RelevanceJob, job.pk)
        tally.add(check_relevance_job(job), recovery)
        print(
            f"  relevance job {job.pk}: a waiting chunk claimed {recovery:.1f} s after the restart, "
            f"ended {job.status} after {time.monotonic() - restarted_at:.1f} s",
            file=sys.stderr,
            flush=True,
        )

    # ------------------------------------------------------------ dataset build, export

    def bulk(self):
        """The corpus of fabricated maps the builds read (made once)."""
        from webapp.corpus.models import Corpus

        if self.bulk_corpus is None:
            from benchmarks.projects import default_project

            # synthetic notes with no identifier: marked de-identified, so builds, exports and
            # training pass the gate (webapp.deid.gate) as a hospital's de-identified corpus would
            self.bulk_corpus = Corpus.objects.create(
                project=default_project(), name="drill-bulk", language="en", deidentified=True
            )
            fabricate_notes_with_maps(self.bulk_corpus, self.map_tasks, self.model, self.sizes.bulk_notes)
        return self.bulk_corpus

    def launch_build(self, name: str, **fields):
        from webapp.datasets.launch import launch_build

        return launch_build(name=name, corpus=self.bulk(), model_version=self.model, profile=self.profile, **fields)

    def baseline_dataset(self):
        """The same build without faults: what every drilled build must equal."""
        from webapp.datasets.models import DatasetVersion

        if self.baseline is None:
            dataset = self.wait_ended(DatasetVersion, self.launch_build("drill-baseline").pk)
            if not dataset.is_done:
                raise DrillError(f"the build without faults ended {dataset.status}: {dataset.error}")
            self.baseline = dataset
        return self.baseline

    def drill_dataset_build(self, tally: Tally) -> None:
        from webapp.datasets.models import DatasetVersion

        expected = example_keys(self.baseline_dataset())
        self.drill_unit(
            tally,
            DatasetVersion,
            lambda: self.launch_build(self.unique("drill-build")),
            lambda row: row.maps_done / row.maps_total if row.maps_total else 0.0,
            lambda dataset: check_dataset(dataset, expected),
        )

    def drill_export(self, tally: Tally) -> None:
        from webapp.datasets.launch import request_export
        from webapp.datasets.models import DatasetExport

        dataset = self.baseline_dataset()
        expected = Counter(dataset.examples.values_list("pk", flat=True))
        self.drill_unit(
            tally,
            DatasetExport,
            lambda: request_export(dataset, EXPORT_FORMAT),
            lambda row: (row.rows or 0) / len(expected),
            lambda export: check_export(export, expected),
        )

    # ------------------------------------------------------------ training

    def drill_training_run(self, tally: Tally) -> None:
        from webapp.datasets.models import DatasetVersion
        from webapp.training import runs
        from webapp.training.models import RunKind, TrainingRun

        if self.training_dataset is None:  # a small build: 2 examples of each of 24 notes
            first = list(self.bulk().notes.order_by("pk").values_list("pk", flat=True)[:24])
            dataset = self.wait_ended(DatasetVersion, self.launch_build("drill-training", filters={"notes": first}).pk)
            if not dataset.is_done:
                raise DrillError(f"the training dataset ended {dataset.status}: {dataset.error}")
            self.training_dataset = dataset
        train = {
            "max_steps": self.sizes.training_steps,
            "epochs": 1000.0,
            "effective_batch_size": 2,
            "micro_batch_size": 1,
            "max_length": 64,
            "checkpoint_every": 10,
        }

        def launch():
            return runs.launch(
                runs.RunSpec(
                    kind=RunKind.DSM,
                    preset="dsm-full",
                    model_version=self.model,
                    dataset=self.training_dataset,
                    config={"train": train},
                )
            )

        self.drill_unit(
            tally,
            TrainingRun,
            launch,
            lambda row: row.step / row.total_steps if row.total_steps else 0.0,
            check_training_run,
        )

    # ------------------------------------------------------------ import

    def drill_import(self, tally: Tally) -> None:
        from django.core.files.uploadedfile import SimpleUploadedFile

        from benchmarks.projects import default_project
        from webapp.corpus import import_jobs
        from webapp.corpus.models import ImportJob

        count = self.sizes.import_notes
        content = "".join(
            json.dumps(
                {"id": f"n{i}", "text": f"Patient {i}: heart rate {60 + i % 90} bpm, blood pressure 120/80, afebrile."}
            )
            + "\n"
            for i in range(count)
        ).encode()

        def launch():
            return import_jobs.launch(
                SimpleUploadedFile("drill-notes.jsonl", content),
                project=default_project(),
                kind="notes",
                corpus=self.unique("drill-import"),
                language="en",
                update=False,
                actor=None,
            )

        def progress(row):  # validation, then the write: each half of the way
            done = row.records_done or 0
            return (done if row.phase == ImportJob.Phase.VALIDATING else count + done) / (2 * count)

        self.drill_unit(tally, ImportJob, launch, progress, lambda job: check_import(job, count))

    # ------------------------------------------------------------ one unit, one kill

    def drill_unit(self, tally: Tally, model, launch, progress, check) -> None:
        """Launch a unit, kill its worker at a random point, wait for the unit to end, check it."""
        for _ in range(3):  # a unit that ended before its random point is replaced by another
            unit = launch()
            kill = self.kill_at_random_point(model, unit.pk, progress, self.target())
            recovery = None
            if kill is not None:
                tally.killed += 1
                recovery = self.recovery_seconds(model, kill)
            unit = self.wait_ended(model, unit.pk)
            if unit.is_done:
                tally.add(check(unit), recovery)
            else:
                tally.add((0, 0, f"{model.__name__} {unit.pk} ended {unit.status}: {unit.error}"), recovery)
            if kill is not None:
                kill.say(f"{model.__name__} {unit.pk}", recovery, unit)
                return
        raise DrillError(f"three {model.__name__} units ended before their random point; nothing was killed")

    def kill_at_random_point(self, model, pk: int, progress, target: float) -> Kill | None:
        """Wait until the unit runs with progress(row) >= target, SIGKILL the worker holding it.
        None when the unit ended first, or in the instant before the kill (nothing was killed mid-work)."""
        from webapp.lifecycle.status import JobStatus

        def reached():
            row = model.objects.get(pk=pk)
            if row.is_ended or (row.status == JobStatus.RUNNING and row.worker and progress(row) >= target):
                return row
            return None

        row = self.wait(reached, f"{model.__name__} {pk} to reach {target:.0%}", interval=0.02)
        if row.is_ended:
            return None
        worker = self.workers.holding(row.worker)
        killed_at = self.workers.kill_and_replace(worker)
        after = model.objects.get(pk=pk)
        if (after.status, after.attempts, after.worker) != (JobStatus.RUNNING, row.attempts, row.worker):
            return None
        return Kill(worker.name, killed_at, {pk: row.attempts}, progress(row))

    # ------------------------------------------------------------ webhook deliveries

    def webhook(self):
        """A webhook of the drill's project pointing at a fresh receiver (made per round)."""
        from benchmarks.projects import default_project
        from webapp.integrations.models import Webhook

        self.receiver = Receiver()
        return Webhook.objects.create(
            project=default_project(), url=self.receiver.url, secret="drill-secret-of-some-length", events=[]
        )

    def send_deliveries(self, hook, count: int = WEBHOOK_DELIVERIES) -> list[int]:
        from webapp.integrations import webhooks

        return [webhooks.send_test(hook).pk for _ in range(count)]  # queued at once: no transaction here

    def wait_delivered(self, pks: list[int]) -> None:
        from webapp.integrations.models import WebhookDelivery

        def ended():
            return not WebhookDelivery.objects.filter(pk__in=pks, status="pending").exists()

        self.wait(ended, f"deliveries {pks} to end", interval=0.1)

    def drill_webhook_redis_restart(self, tally: Tally) -> None:
        """Retries pending (the receiver failed each delivery once) when Redis restarts, volatile."""
        from webapp.integrations.models import WebhookDelivery

        hook = self.webhook()
        self.receiver.script = [500] * WEBHOOK_DELIVERIES
        pks = self.send_deliveries(hook)
        self.wait(
            lambda: WebhookDelivery.objects.filter(pk__in=pks, attempts__gte=1).count() == len(pks),
            "every delivery's first (failed) attempt",
        )
        self.redis.crash_and_restart(persistent=False)
        restarted_at = time.monotonic()
        tally.killed += 1
        self.wait_delivered(pks)
        tally.add(check_deliveries(pks, self.receiver), time.monotonic() - restarted_at)
        self.receiver.stop()

    def drill_webhook_worker_kill(self, tally: Tally) -> None:
        """One attempt hangs on the receiver, the others wait for their retry: every `webhooks`
        worker is SIGKILLed and replaced."""
        hook = self.webhook()
        self.receiver.script = [("sleep", 3600)] + [500] * (WEBHOOK_DELIVERIES - 1)
        pks = self.send_deliveries(hook)
        self.wait(lambda: len(self.receiver.received) >= WEBHOOK_DELIVERIES, "every delivery's first attempt")
        killed_at = None
        for worker in [w for w in self.workers.all if w.queues == "webhooks" and w.alive]:
            killed_at = self.workers.kill_and_replace(worker)
        tally.killed += 1
        self.wait_delivered(pks)
        tally.add(check_deliveries(pks, self.receiver), time.monotonic() - killed_at)
        self.receiver.stop()

    def drill_webhook_slow_receiver(self, tally: Tally) -> None:
        """An import beside deliveries that each wait SLOW_RECEIVER_SECONDS for their receiver."""
        alone, _ = self.timed_import()
        hook = self.webhook()
        self.receiver.script = [("sleep", SLOW_RECEIVER_SECONDS)] * (2 * WEBHOOK_DELIVERIES)
        self.send_deliveries(hook, 2 * WEBHOOK_DELIVERIES)
        self.wait(lambda: self.receiver.received, "a delivery to wait on the receiver")
        tally.killed += 1
        beside, job = self.timed_import()
        print(
            f"  import of {DRILL_SLOW_IMPORT} notes: {alone:.1f} s alone, {beside:.1f} s while deliveries "
            f"wait {SLOW_RECEIVER_SECONDS} s on their receiver",
            file=sys.stderr,
            flush=True,
        )
        lost, duplicated, problem = check_import(job, DRILL_SLOW_IMPORT)
        if not problem and beside > 2 * alone + 5:
            problem = f"the import took {beside:.1f} s beside waiting deliveries, {alone:.1f} s alone"
        tally.add((lost, duplicated, problem), beside)
        self.receiver.stop()

    def timed_import(self):
        """(seconds, job) of an import of DRILL_SLOW_IMPORT notes, from launch to its end."""
        from django.core.files.uploadedfile import SimpleUploadedFile

        from benchmarks.projects import default_project
        from webapp.corpus import import_jobs
        from webapp.corpus.models import ImportJob

        content = "".join(
            json.dumps({"id": f"n{i}", "text": f"Patient {i}: heart rate {60 + i % 90} bpm."}) + "\n"
            for i in range(DRILL_SLOW_IMPORT)
        ).encode()
        started = time.monotonic()
        job = import_jobs.launch(
            SimpleUploadedFile("drill-slow.jsonl", content),
            project=default_project(),
            kind="notes",
            corpus=self.unique("drill-slow"),
            language="en",
            update=False,
            actor=None,
        )
        job = self.wait_ended(ImportJob, job.pk)
        return time.monotonic() - started, job


class Receiver:
    """A webhook receiver on loopback in the drill's process: answers in turn what `script` holds
    (a status, or ("sleep", s) then 200), then 200; keeps each request's (delivery id, status)."""

    def __init__(self):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                step = receiver.script.pop(0) if receiver.script else 200
                receiver.received.append((self.headers["X-DSM-Delivery"], step))
                if isinstance(step, tuple):
                    time.sleep(step[1])
                    step = 200
                try:
                    self.send_response(step)
                    self.end_headers()
                except OSError:  # the worker gave up or was killed
                    pass

            def log_message(self, *args):
                pass

        self.script: list = []
        self.received: list[tuple[str, object]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------- checks: (lost, duplicated, problem)


def check_deliveries(pks: list[int], receiver: Receiver) -> tuple[int, int, str]:
    """A delivery not delivered is lost; one answered 2xx more than twice by the receiver (once for
    an attempt a kill cut short, once for the attempt that recorded it) is duplicated."""
    from webapp.integrations.models import WebhookDelivery

    statuses = dict(WebhookDelivery.objects.filter(pk__in=pks).values_list("pk", "status"))
    answered = Counter(delivery for delivery, step in receiver.received if isinstance(step, tuple) or 200 <= step < 300)
    lost = sum(1 for pk in pks if statuses.get(pk) != "delivered")
    duplicated = sum(1 for pk in pks if answered[str(pk)] > 2)
    problem = "" if lost == 0 else f"deliveries not delivered: {[pk for pk in pks if statuses.get(pk) != 'delivered']}"
    return lost, duplicated, problem


def check_relevance_job(job) -> tuple[int, int, str]:
    """Planned pairs without a map are lost; maps beyond one per pair (or a pair planned twice) duplicated."""
    from webapp.lifecycle.status import JobStatus
    from webapp.pipeline.models import RelevanceMap

    planned = Counter(tuple(pair) for pairs in job.chunks.values_list("pairs", flat=True) for pair in pairs)
    maps = Counter(
        RelevanceMap.objects.for_config(job.method, job.template, job.config_key)
        .filter(note__corpus=job.corpus, model_version=job.model_version)
        .values_list("note_id", "task_id")
    )
    lost, duplicated = multiset_difference(Counter(set(planned)), maps)
    duplicated += sum(n - 1 for n in planned.values())
    problem = ""
    if job.status != JobStatus.DONE or not (job.done == job.total == len(planned) > 0):
        problem = f"job {job.pk} ended {job.status} with {job.done}/{job.total} prompts: {job.error}"
    elif job.chunks.exclude(status=JobStatus.DONE).exists():
        problem = f"job {job.pk} is done but some of its chunks are not"
    return lost, duplicated, problem


def example_keys(dataset) -> Counter:
    return Counter(dataset.examples.values_list("note_id", "label", "char_start"))


def check_dataset(dataset, expected: Counter) -> tuple[int, int, str]:
    """Against the build without faults, as a multiset of (note, label, char_start)."""
    found = example_keys(dataset)
    problem = (
        ""
        if dataset.stats.get("examples") == sum(found.values())
        else f"dataset {dataset.pk} says {dataset.stats.get('examples')} examples but holds {sum(found.values())}"
    )
    return *multiset_difference(expected, found), problem


def check_export(export, expected: Counter) -> tuple[int, int, str]:
    """The example ids in the export's folder (a Hugging Face `datasets` folder, or JSON Lines)."""
    from webapp.datasets.export import export_folder

    folder = export_folder(export)
    if export.format == "hf":
        import datasets

        found = Counter(datasets.load_from_disk(str(folder))["example_id"])
    else:
        with (folder / "examples.jsonl").open(encoding="utf-8") as rows:
            found = Counter(json.loads(line)["example_id"] for line in rows if line.strip())
    problem = (
        ""
        if export.rows == sum(found.values())
        else f"export {export.pk} says {export.rows} rows but its folder holds {sum(found.values())}"
    )
    return *multiset_difference(expected, found), problem


def check_training_run(run) -> tuple[int, int, str]:
    """A step without its metric is lost, a step twice duplicated; the run must reach its steps
    and register one model."""
    from webapp.pipeline.models import ModelVersion
    from webapp.training.models import RunMetric

    steps = Counter(RunMetric.objects.filter(run=run, phase="train").values_list("step", flat=True))
    lost, duplicated = multiset_difference(Counter(range(1, run.total_steps + 1)), steps)
    models = ModelVersion.objects.filter(produced_by=f"training run {run.pk}").count()
    duplicated += max(0, models - 1)
    problem = ""
    if not run.step == run.total_steps > 0 or models == 0:
        problem = f"run {run.pk} is done at step {run.step}/{run.total_steps} with {models} models registered"
    return lost, duplicated, problem


def check_import(job, count: int) -> tuple[int, int, str]:
    """Every external id of the file once in the corpus, and the job's count of created notes right."""
    from webapp.corpus.models import Note

    found = Counter(Note.objects.filter(corpus__name=job.corpus_name).values_list("external_id", flat=True))
    problem = "" if job.created_count == count else f"import {job.pk} created {job.created_count} of {count} notes"
    return *multiset_difference(Counter(f"n{i}" for i in range(count)), found), problem


# ---------------------------------------------------------------- inputs

RELEVANCE_TASKS = [
    ("drill-heart-rate", "heart rate", ["bradycardic", "normocardic", "tachycardic", "unknown"]),
    ("drill-pacemaker", "presence of pacemaker", ["y", "n", "unknown"]),
    ("drill-temperature", "body temperature", ["hypothermic", "normothermic", "febrile", "unknown"]),
]
# A note of one token per word for the fabricated maps; a task's map peaks at these words. The
# `drill-sharp` profile gives 2 examples a note ("pacemaker" and "bp"), as in the dataset tests.
MAP_TEXT = "pt alert hr 120 bpm then pacemaker in situ and bp low"
PEAKS = {"heart": {3, 6}, "pacemaker": {3, 6, 10}, "pressure": {10}}


def relevance_note(i: int) -> str:
    from tests.webapp.pipeline.factories import note_text  # the same short notes as the worker tests

    return note_text(i, sentences=3)


def fabricate_notes_with_maps(corpus, tasks: dict, model, count: int) -> None:
    """`count` notes "MAP_TEXT bulkN" with the three maps of PEAKS each, written by SQL on the
    server: a build long enough to be killed in its middle, made in seconds."""
    import re

    import numpy as np
    from django.db import connection

    from webapp.corpus.models import Note
    from webapp.pipeline.models import RelevanceMap

    width = len(str(count))
    offsets = np.array([m.span() for m in re.finditer(r"\S+", f"{MAP_TEXT} bulk{0:0{width}d}")], np.int32)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Note._meta.db_table} (corpus_id, external_id, text, content_hash, metadata, created) "
            "SELECT %s, name, text, encode(sha256(convert_to(text, 'UTF8')), 'hex'), '{}'::jsonb, now() FROM "
            "(SELECT 'bulk' || lpad(i::text, %s, '0') AS name, %s || ' bulk' || lpad(i::text, %s, '0') AS text "
            " FROM generate_series(0, %s - 1) AS i) AS made",
            [corpus.pk, width, MAP_TEXT, width, count],
        )
        for slug, peaked in PEAKS.items():
            scores = np.zeros(len(offsets), np.float32)
            scores[list(peaked)] = 0.9
            RelevanceMap.objects.fill_notes(
                Note.objects.filter(corpus=corpus),
                task_id=tasks[slug].pk,
                model_version_id=model.pk,
                method="attnlrp",
                template="en",
                offsets=offsets,
                scores=scores,
            )


# ---------------------------------------------------------------- set-up and main


def prepare_database(server_url: str, name: str) -> str:
    import psycopg

    from benchmarks.database import create_statement

    with psycopg.connect(server_url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(create_statement(name))  # a migrated template's copy where the tests name one
    return server_url.rsplit("/", 1)[0] + "/" + name


def drop_database(database_url: str) -> None:
    import psycopg

    server, name = database_url.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def drill_environment(database_url: str, broker_url: str, folder: Path) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "PYTEST_CURRENT_TEST")}
    env.update(
        LIFECYCLE,
        **WEBHOOKS,
        DJANGO_SETTINGS_MODULE="webapp.settings",
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        DATA_DIR=str(folder / "data"),
        MODEL_DIR=str(folder / "models"),
        PYTHONUNBUFFERED="1",
    )
    return env


def run_drill(args, sizes: Sizes, folder: Path, processes: Processes) -> dict:
    redis_server = RedisServer(processes, folder / "redis", folder / "logs" / "redis.log")
    redis_server.start()
    database_url = prepare_database(args.postgres, args.database)
    env = drill_environment(database_url, redis_server.url, folder)
    os.environ.pop("REDIS_URL", None)
    os.environ.update(env)
    try:
        migrate = subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        if migrate.returncode:
            raise DrillError(f"migrate failed:\n{migrate.stdout}{migrate.stderr}")
        import django

        django.setup()
        return drill_every_kind(args, sizes, redis_server, Workers(processes, env, folder / "logs"))
    finally:
        from django.db import connections

        connections.close_all()
        processes.kill_all()
        if not args.keep:
            drop_database(database_url)


QUEUE_OF_KIND = {
    "relevance": "relevance",
    "redis_restart_persistent": "relevance",
    "redis_restart_volatile": "relevance",
    "training_run": "training",
    "webhook_redis_restart": "webhooks",
    "webhook_worker_kill": "webhooks",
    "webhook_slow_receiver": "webhooks",
}  # the others: default


def drill_every_kind(args, sizes: Sizes, redis_server: RedisServer, workers: Workers) -> dict:
    drill = Drill(args, sizes, redis_server, workers)
    drill.prepare()
    kinds = [kind for kind in KINDS if kind in args.kinds]
    tallies = {kind: Tally() for kind in kinds}
    for position, kind in enumerate(kinds):
        queue = QUEUE_OF_KIND.get(kind)
        rounds = 1 if kind.startswith(("redis_restart", "webhook_")) else args.rounds
        started = time.monotonic()
        try:
            for _ in range(rounds):
                workers.ensure("default", 2)  # planning, dataset builds, exports, imports
                if queue:
                    workers.ensure(queue, 2)
                if kind.startswith("redis_restart"):
                    drill.drill_redis_restart(tallies[kind], persistent=kind == "redis_restart_persistent")
                else:
                    getattr(drill, f"drill_{kind}")(tallies[kind])
        except Exception as exc:  # noqa: BLE001 - said in the output; the other kinds still run
            tallies[kind].error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            traceback.print_exc(file=sys.stderr)
        print(
            f"{kind}: {json.dumps(tallies[kind].as_json())} in {time.monotonic() - started:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        if queue and queue not in {QUEUE_OF_KIND.get(later) for later in kinds[position + 1 :]}:
            workers.stop(queue)  # their memory and sweepers are not needed any more
    return tallies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="kills per kind (default 3; --short: 1)")
    parser.add_argument("--short", action="store_true", help="one kill per kind and small sizes (CI)")
    parser.add_argument("--seed", type=int, default=12, help="seeds the random points of the kills")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {','.join(KINDS)}")
    parser.add_argument("--database", default="dsm_drill", help="the drill's own database (dropped and created)")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("DRILL_POSTGRES_URL", DEFAULT_POSTGRES),
        help="a URL of the PostgreSQL server (its database part is not used)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the database and the temporary folder")
    args = parser.parse_args()
    args.kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    unknown = set(args.kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}; the kinds are {', '.join(KINDS)}")
    if "drill" not in args.database:  # it is dropped: never someone else's
        parser.error(f"the drill's database name must contain 'drill', not {args.database!r}")
    if args.short:
        args.rounds = 1
    sizes = SHORT if args.short else FULL
    if not shutil.which("redis-server"):
        raise SystemExit("the fault drill needs redis-server on the PATH")

    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="fault-drill-"))
    for sub in ("data", "models", "redis", "logs"):
        (folder / sub).mkdir()
    processes = Processes()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the finally blocks stop everything
    tallies, error = {}, ""
    try:
        tallies = run_drill(args, sizes, folder, processes)
    except Exception as exc:  # noqa: BLE001 - reported in the JSON
        error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
    finally:
        processes.kill_all()
    ok = not error and bool(tallies) and all(tally.ok for tally in tallies.values())
    result = {kind: tally.as_json() for kind, tally in tallies.items()}
    if error:
        result["error"] = error
    result.update(
        seed=args.seed,
        rounds=args.rounds,
        loadavg=[round(x, 2) for x in os.getloadavg()],
        seconds=round(time.monotonic() - started),
        ok=ok,
    )
    print(json.dumps(result), flush=True)
    if ok and not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        print(f"worker and redis logs: {folder / 'logs'}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
