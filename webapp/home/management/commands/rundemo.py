"""`make demo`: prepare the embedded default and run the web app with real worker processes.

The first relevance job is sized to finish in under 2 minutes on an idle 2-core machine, from the
relevance worker's start to its last map: demo.DEMO_JOB_NOTES notes x 5 tasks = 30 AttnLRP prompts on
SmolLM2-135M (bf16), in chunks of demo.DEMO_CHUNK_SIZE prompts, so maps reach Review every few seconds
(the review pages read the maps from the database on each request). Measured with
`benchmarks/demo.py` (this job's own prompts, one torch thread, as the relevance worker runs
them here on 2 cores), while a CI run shared the machine:
  * this job, 30 prompts: 69 s (2.3 s a prompt) + 6 s to load the model, load average 3.8-4.2;
  * the first 4 notes, 20 prompts: 1.5 s a prompt at load average 1.0-1.6;
  * 8 notes, 40 prompts: 123 s (3.1 s a prompt) at load average 4.0-5.4: too many.
So about 45-75 s of prompts, plus the model and the worker's start: 1-1.5 minutes, under 2 even on
a busy machine. End to end (a fresh DATA_DIR, venv and model present), this command took 71 s from
its start to the job done, at load average 2.3-3.1: workers ready at 12 s, the model loaded at 19 s,
a chunk's 2 maps every 2-4 s after. Rerun the script to check the figure on another machine.

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

import os
import signal
import socket
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from webapp.home import demo

# One worker process a queue: lxt patches a process for good, so relevance never shares one with
# training, and an import or a dataset build never waits behind a training run.
WORKER_QUEUES = {"relevance": "relevance", "training": "training", "default": "default"}
LISTEN_TIMEOUT = 120  # seconds the web server may take to accept connections


def worker_threads(cores: int | None = None) -> dict[str, int]:
    """torch threads of each worker process (WORKER_TORCH_THREADS). Relevance and training are the
    only torch work, so they split the cores between them (the relevance worker the larger half);
    the default worker's database work gets 1."""
    cores = cores or os.cpu_count() or 1
    training = max(1, cores // 2)
    return {"relevance": max(1, cores - training), "training": training, "default": 1}


def worker_processes(python: str, cores: int | None = None) -> list[tuple[list[str], dict[str, str]]]:
    """(command, environment) of each worker process."""
    threads = worker_threads(cores)
    processes = []
    for name, queues in WORKER_QUEUES.items():
        cmd = [
            python,
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
            f"{name}@%h",
            "--loglevel",
            "INFO",
        ]
        env = {**os.environ, "WORKER_TORCH_THREADS": str(threads[name]), "TOKENIZERS_PARALLELISM": "false"}
        processes.append((cmd, env))
    return processes


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
        # The first job is queued here and run by the relevance worker started below.
        job = demo.seed(notes=notes, stdout=self.stdout, first_job=not no_job)
        if no_serve:
            return
        self._serve(port, job if job is not None and not demo.job_ended(job) else None, started)

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
