"""`make demo`: prepare the embedded default and run the web app with real worker processes."""
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from webapp.pipeline.models import RelevanceJob

DEMO_CORPUS = "demo-ed"

# A first relevance job so the review pages have maps to show: tasks with synthetic gold labels.
DEMO_TASKS = ["heart-rate", "blood-pressure", "spo2", "anticoagulants-or-antiplatelet-drug-therapy", "chest-pain"]
DEMO_JOB_NOTES = 20

# Two worker processes: lxt patches a process for good, so relevance never shares one with training.
WORKER_QUEUES = {"relevance": "relevance", "cpu": "default,training"}


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
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write(f"Database ready ({settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}).")
        call_command("load_task_catalog", stdout=self.stdout)
        call_command("load_demo_corpus", corpus=DEMO_CORPUS, notes=notes, stdout=self.stdout)
        call_command("create_demo_users", stdout=self.stdout)
        if not no_job and not RelevanceJob.objects.filter(corpus__name=DEMO_CORPUS).exists():
            # Queued now, run by the relevance worker started below (a minute or two on a laptop CPU).
            call_command("launch_relevance_job", DEMO_CORPUS, tasks="list", task=DEMO_TASKS,
                         limit=DEMO_JOB_NOTES, chunk_size=10, stdout=self.stdout)
        if no_serve:
            return
        self._serve(port)

    def _serve(self, port):
        python = sys.executable
        # Stop the children on SIGTERM too, not only on Ctrl+C.
        signal.signal(signal.SIGTERM, _interrupt)
        processes = []
        for name, queues in WORKER_QUEUES.items():
            cmd = [python, "-m", "celery", "-A", "workers", "worker", "--queues", queues, "--pool", "solo",
                   "--hostname", f"{name}@%h", "--loglevel", "INFO"]
            processes.append(subprocess.Popen(cmd))
        processes.append(subprocess.Popen([python, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]))
        self.stdout.write(self.style.SUCCESS(f"\nDecSelfMask Studio is running at http://127.0.0.1:{port}/  (Ctrl+C stops it)\n"))
        try:
            while all(p.poll() is None for p in processes):
                time.sleep(1)
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
