"""`make demo`: prepare the embedded default and run the web app with real worker processes.

The first relevance job is sized from this machine's measured rate, not from a figure taken on
other hardware: while the corpus is seeded, `python -m ml rate` computes a few of the job's own
prompts with the relevance worker's torch threads (a CPU without native bf16 runs them in
float32, about twice as slowly), and demo.first_job_size fits the job to demo.DEMO_JOB_SECONDS of
prompts (1 to demo.DEMO_JOB_NOTES notes x 5 tasks) in chunks of about demo.DEMO_CHUNK_SECONDS, so
maps reach Review every few seconds (the review pages read the maps from the database on each
request). The command prints the measured rate with the hardware and load it comes from, and the
size it chose. If the measurement fails, it says why and queues the default size.

Workers: one process a queue (relevance, training, default), so an import never waits behind a
training run. Relevance and training are the torch work and split the cores between them
(settings.WORKER_TORCH_THREADS, set per process here: on 2 cores 1 thread each); the default
worker's database work gets 1. Oversubscribed, the first 10 prompts took 150 s.

The URL is printed once the web server accepts connections, so a browser opened on it at once
gets the page.

The seeding (catalog, corpus, users, first job) is `webapp.home.demo.seed`, which the browser
test of the demo's first job calls too. While serving, this command watches the first job and
prints one line when it ends, "First relevance job done in N s ..." (N: seconds since this
command started; no note text), the signal `scripts/time_demo.py` waits for.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from ml.synthetic.tasks import CATALOG
from webapp.home import demo

# One worker process a queue: lxt patches a process for good, so relevance never shares one with
# training, an import or a dataset build never waits behind a training run, and no webhook
# receiver, however slow, holds up either (deliveries wait on the network: a few threads).
WORKER_QUEUES = {"relevance": "relevance", "training": "training", "default": "default", "webhooks": "webhooks"}
WORKER_POOLS = {"webhooks": ["--pool", "threads", "--concurrency", "4"]}  # the others: --pool solo
BEAT_WORKER = "default"  # runs Celery beat embedded (retention's rounds): one beat, no process more
LISTEN_TIMEOUT = 120  # seconds the web server may take to accept connections
PROBE_TIMEOUT = 600  # seconds the rate measurement may take (a busy machine loads the model slowly)


def worker_threads(cores: int | None = None) -> dict[str, int]:
    """torch threads of each worker process (WORKER_TORCH_THREADS). Relevance and training are the
    only torch work, so they split the cores between them (the relevance worker the larger half);
    the default worker's database work gets 1."""
    cores = cores or os.cpu_count() or 1
    training = max(1, cores // 2)
    return {"relevance": max(1, cores - training), "training": training, "default": 1, "webhooks": 1}


def worker_nice() -> list[str]:
    """The prefix that starts a worker at a lower CPU priority than the web server (nice
    settings.WORKER_NICE, 19 by default; 0: none): reviewers first (docs/operations.md)."""
    level = settings.WORKER_NICE
    return ["nice", "-n", str(level)] if level and shutil.which("nice") else []


def worker_processes(python: str, cores: int | None = None) -> list[tuple[list[str], dict[str, str]]]:
    """(command, environment) of each worker process."""
    threads = worker_threads(cores)
    processes = []
    for name, queues in WORKER_QUEUES.items():
        cmd = [
            *worker_nice(),
            python,
            "-m",
            "celery",
            "-A",
            "workers",
            "worker",
            "--queues",
            queues,
            *WORKER_POOLS.get(name, ["--pool", "solo"]),
            *(["--beat", "--schedule", str(settings.DATA_DIR / "celerybeat-schedule")] if name == BEAT_WORKER else []),
            "--hostname",
            f"{name}@%h",
            "--loglevel",
            "INFO",
        ]
        env = {**os.environ, "WORKER_TORCH_THREADS": str(threads[name]), "TOKENIZERS_PARALLELISM": "false"}
        processes.append((cmd, env))
    return processes


def start_rate_probe(python: str) -> subprocess.Popen:
    """`python -m ml rate` on the demo's own prompts, with the relevance worker's torch threads."""
    threads = worker_threads()["relevance"]
    cmd = [python, "-m", "ml", "rate", "--model-dir", str(settings.MODEL_DIR), "--threads", str(threads)]
    for slug in demo.DEMO_TASKS:
        cmd += ["--task", CATALOG[slug].description]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_rate_probe(probe: subprocess.Popen, timeout: float = PROBE_TIMEOUT) -> tuple[dict | None, str]:
    """(the probe's JSON, "") or (None, why it gave none)."""
    try:
        out, err = probe.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        probe.kill()
        probe.communicate()
        return None, f"no answer within {timeout:.0f} s"
    if probe.returncode != 0:
        last = (err.strip().splitlines() or ["no output"])[-1]
        return None, f"the measurement failed: {last[:300]}"
    try:
        return json.loads(out.strip().splitlines()[-1]), ""
    except (IndexError, ValueError):
        return None, "the measurement printed no result"


def hardware(measured: dict) -> str:
    """Which hardware a figure comes from, in words."""
    bf16 = "native bf16" if measured.get("native_bf16") else "no native bf16"
    return (
        f"{measured['model']}, {measured['dtype']}, {measured['torch_threads']} torch thread(s) on "
        f"{measured.get('cpu') or 'an unknown CPU'} ({measured['cores']} cores, {bf16}), "
        f"load average {measured['load_average']}"
    )


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_until_listening(port: int, server: subprocess.Popen, timeout: float = LISTEN_TIMEOUT) -> bool:
    """True once 127.0.0.1:port accepts a connection; False if `server` exits or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while server.poll() is None and time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def _interrupt(signum, frame):
    raise KeyboardInterrupt


class Command(BaseCommand):
    help = "Migrate, create demo users, load the task catalog and a synthetic corpus, then run web + workers."

    def add_arguments(self, parser):
        parser.add_argument("--notes", type=int, default=300, help="synthetic notes in the demo corpus")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-serve", action="store_true", help="prepare everything, start nothing")
        parser.add_argument("--no-job", action="store_true", help="do not queue the first relevance job")

    def handle(self, *args, notes, port, no_serve, no_job, **options):
        started = time.monotonic()
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write(f"Database ready ({settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}).")
        # The rate is measured while the corpus is seeded; the first job is sized from it, queued
        # here and run by the relevance worker started below.
        probe = start_rate_probe(sys.executable) if not no_job and demo.first_demo_job() is None else None
        try:
            job = demo.seed(notes=notes, stdout=self.stdout, first_job=not no_job, size=lambda: self._sized(probe))
        finally:
            if probe is not None and probe.poll() is None:  # the seeding failed before reading it
                probe.kill()
                probe.communicate()
        if no_serve:
            return
        self._serve(port, job if job is not None and not demo.job_ended(job) else None, started)

    def _sized(self, probe) -> demo.JobSize:
        """The first job's size from the probe's measurement, said with the hardware it belongs to."""
        measured, problem = read_rate_probe(probe) if probe else (None, "not started")
        size = demo.first_job_size(measured and measured["seconds_per_prompt"])
        if measured is None:
            self.stdout.write(
                f"The relevance rate was not measured ({problem}): the first job has the default "
                f"{size.notes} notes x {len(demo.DEMO_TASKS)} tasks."
            )
            return size
        self.stdout.write(
            f"Measured here: {measured['seconds_per_prompt']:.2f} s a prompt ({hardware(measured)}). First job: "
            f"{size.notes} note{'' if size.notes == 1 else 's'} x {len(demo.DEMO_TASKS)} tasks = {size.prompts} "
            f"prompts, about {size.seconds:.0f} s, {size.chunk_size} a chunk."
        )
        return size

    def _report_first_job(self, job, started):
        job.refresh_from_db()
        self.stdout.write(
            f"First relevance job {job.status} in {time.monotonic() - started:.0f} s "
            f"(job {job.pk}: {job.done} of {job.total} prompts, since the demo started)."
        )

    def _serve(self, port, job, started):
        """Run the workers and the web server until Ctrl+C; `job`: the first job to watch, if any."""
        python = sys.executable
        if not port_is_free(port):
            # Checked first: otherwise whatever holds the port would answer for the demo.
            raise CommandError(f"Port {port} is in use: stop what listens there or choose another (--port N).")
        # Stop the children on SIGTERM too, not only on Ctrl+C.
        signal.signal(signal.SIGTERM, _interrupt)
        processes = []
        for cmd, env in worker_processes(python):
            processes.append(subprocess.Popen(cmd, env=env))
        server = subprocess.Popen([python, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"])
        processes.append(server)
        try:
            # The URL only once the server accepts connections: a browser opened on it at once works.
            if not wait_until_listening(port, server):
                self.stderr.write(f"The web server did not start on port {port}; its output above says why.")
                return
            self.stdout.write(
                self.style.SUCCESS(f"\nDecSelfMask Studio is running at http://127.0.0.1:{port}/  (Ctrl+C stops it)\n")
            )
            while all(p.poll() is None for p in processes):
                time.sleep(1)
                if job is not None and demo.job_ended(job):
                    self._report_first_job(job, started)
                    job = None
        except KeyboardInterrupt:
            pass
        finally:
            for p in processes:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in processes:
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
