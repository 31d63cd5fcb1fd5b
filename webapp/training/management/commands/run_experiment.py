"""Run an experiment file headless: `python manage.py run_experiment docs/experiments/smoke.json`.

By default every run executes in this process, one after the other (the worker's code path
without the queue); with --enqueue the runs go to the "training" queue (each as soon as the run
it depends on has finished) and the command waits for them. Prints a JSON summary and a
markdown table. Never run it in a process that computed AttnLRP relevance (lxt patches).
"""

import json

from django.core.management.base import BaseCommand, CommandError

from webapp.deid import gate
from webapp.training import experiments


class Command(BaseCommand):
    help = "Run the training runs described in an experiment JSON file (see docs/experiments/README.md)."

    def add_arguments(self, parser):
        parser.add_argument("config", help="experiment JSON file")
        parser.add_argument(
            "--enqueue", action="store_true", help="send the runs to the training workers instead of running them here"
        )
        parser.add_argument("--check", action="store_true", help="only validate the file")
        parser.add_argument("--timeout", type=float, default=None, help="with --enqueue: give up after N seconds")
        parser.add_argument(
            "--confirm-identifiable",
            action="store_true",
            help="train on corpora that are not de-identified all the same (recorded in the audit log per run)",
        )

    def handle(self, *args, **options):
        try:
            experiment = experiments.load(options["config"])
        except experiments.ExperimentError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(
            f"{len(experiment.runs)} run(s) planned: "
            + ", ".join(f"{r.key} ({r.preset or r.kind})" for r in experiment.runs)
        )
        if options["check"]:
            return

        def said(planned):
            run = planned.run
            self.stderr.write(f"  {planned.key}: {planned.outcome}" + (f" (run {run.pk})" if run else ""))

        confirm = options["confirm_identifiable"]
        try:
            if options["enqueue"]:
                done = experiments.run_enqueued(
                    experiment, timeout=options["timeout"], on_event=said, confirm_identifiable=confirm
                )
            else:
                done = experiments.run_sync(experiment, on_event=said, confirm_identifiable=confirm)
        except experiments.ExperimentError as exc:
            raise CommandError(str(exc)) from None
        except gate.Refused as exc:
            raise CommandError(f"{exc.reason} From the command line: --confirm-identifiable.") from None
        rows = experiments.summary(done)
        self.stdout.write(json.dumps({"experiment": experiment.name, "runs": rows}, indent=2, default=str))
        self.stdout.write(experiments.markdown(rows))
        if any(row["status"] not in ("done",) for row in rows):
            raise CommandError("Not every run finished; see the summary above.")
