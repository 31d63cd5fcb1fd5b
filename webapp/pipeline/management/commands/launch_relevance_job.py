import json
import time

from django.core.management.base import BaseCommand, CommandError

from ml.relevance import DTYPES, NORMALISE, TRUNCATE
from webapp.corpus.access import CorpusNotFound, corpus_named
from webapp.corpus.models import Task
from webapp.pipeline import jobs, planning
from webapp.pipeline.models import ModelVersion, RelevanceJob
from webapp.pipeline.progress import job_progress


class Command(BaseCommand):
    help = "Plan a relevance job and enqueue its chunks for the workers of the relevance queue."

    def add_arguments(self, parser):
        parser.add_argument("corpus", help="corpus name")
        parser.add_argument("--project", default="", help="the corpus's project (slug), when its name is in several")
        parser.add_argument("--model", help="model version name (default: the default model)")
        parser.add_argument("--method", default="attnlrp", choices=RelevanceJob.Method.values)
        parser.add_argument("--template", default="en", help="'en', 'it', 'es' or a custom text with {note} and {task}")
        parser.add_argument(
            "--explain",
            default="next",
            choices=RelevanceJob.Explain.values,
            help="which prediction is explained (ml.relevance): next (reference code), max, target, "
            "span (every token of the task), contrastive (the task minus --neutral)",
        )
        parser.add_argument(
            "--neutral",
            default="",
            help="--explain contrastive: the neutral description (default: the template's, "
            "en 'the patient', it 'il paziente', es 'el paciente')",
        )
        parser.add_argument("--normalise", default="abs", choices=NORMALISE)
        parser.add_argument(
            "--truncate",
            default="right",
            choices=TRUNCATE,
            help="notes longer than the model's context keep their start (right) or end (left)",
        )
        parser.add_argument(
            "--dtype",
            default="auto",
            choices=DTYPES,
            help="auto: the worker's preferred dtype (bf16 where fast, else float32); float32 for "
            "plain grad_input, which is noisy in bf16",
        )
        parser.add_argument("--tasks", default="sample", choices=RelevanceJob.TaskSelection.values)
        parser.add_argument("--task", action="append", default=[], metavar="SLUG", help="a task of the pool (repeat)")
        parser.add_argument("--include-held-out", action="store_true")
        parser.add_argument("--k", type=int, default=9, help="tasks sampled per note (--tasks sample)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--limit", type=int, help="only the first N notes")
        parser.add_argument("--note", action="append", default=[], metavar="ID", help="only this note id (repeat)")
        parser.add_argument(
            "--chunk-size", type=int, default=None, help="prompts a chunk (default: about 30 s at the measured rate)"
        )
        parser.add_argument("--wait", action="store_true", help="print progress until the job ends")
        parser.add_argument(
            "--plan-in-worker",
            action="store_true",
            help="leave the planning to a worker of the default queue, as the web page does",
        )

    def handle(self, *args, **options):
        try:
            corpus = corpus_named(options["corpus"], options["project"])
        except CorpusNotFound as exc:
            raise CommandError(str(exc)) from None
        models = ModelVersion.objects.all()
        model = (
            models.filter(name=options["model"]).first() if options["model"] else models.filter(is_default=True).first()
        )
        if model is None:
            raise CommandError("no such model version (see `manage.py register_model`)")
        tasks = list(Task.objects.filter(slug__in=options["task"]))
        missing = set(options["task"]) - {t.slug for t in tasks}
        if missing:
            raise CommandError(f"no task {', '.join(sorted(missing))}")
        note_filter = {}
        if options["note"]:
            note_filter["external_ids"] = options["note"]
        if options["limit"]:
            note_filter["limit"] = options["limit"]
        spec = jobs.JobSpec(
            corpus=corpus,
            model_version=model,
            method=options["method"],
            template=options["template"],
            explain=options["explain"],
            neutral=options["neutral"],
            normalise=options["normalise"],
            truncate=options["truncate"],
            dtype=options["dtype"],
            task_selection=options["tasks"],
            tasks=tasks,
            include_held_out=options["include_held_out"],
            sample_k=options["k"],
            seed=options["seed"],
            note_filter=note_filter,
            chunk_size=options["chunk_size"],
        )
        try:
            job = jobs.launch(spec, actor="command line", enqueue=options["plan_in_worker"])
        except jobs.JobError as exc:
            raise CommandError(str(exc)) from exc
        if options["plan_in_worker"]:
            self.stdout.write(
                f"Job {job.pk} launched: a worker of the default queue plans it (configuration {job.config_key})."
            )
        else:  # planned here, as the command line has no request to answer quickly
            planning.plan_now(job, "command line", enqueue=True)
            self.stdout.write(
                f"Job {job.pk}: {job.total} prompts in {job.chunk_count} chunks, queued "
                f"(configuration {job.config_key})."
            )
        while options["wait"]:
            job.refresh_from_db()
            progress = job_progress(job)
            self.stdout.write(
                json.dumps(
                    {
                        "job": job.pk,
                        "status": job.status,
                        "done": progress.done,
                        "total": progress.total,
                        "prompts_per_second": progress.prompts_per_second,
                        "errors": progress.errors,
                    }
                )
            )
            if progress.ended:
                break
            time.sleep(5)
