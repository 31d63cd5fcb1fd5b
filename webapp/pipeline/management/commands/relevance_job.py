import json

from django.core.management.base import BaseCommand, CommandError

from webapp.pipeline import jobs
from webapp.pipeline.models import RelevanceJob
from webapp.pipeline.progress import job_progress


class Command(BaseCommand):
    help = "Show, cancel or resume a relevance job."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["status", "cancel", "resume"])
        parser.add_argument("job", type=int)

    def handle(self, *args, **options):
        job = RelevanceJob.objects.filter(pk=options["job"]).first()
        if job is None:
            raise CommandError(f"no relevance job {options['job']}")
        try:
            if options["action"] == "cancel":
                jobs.cancel(job, actor="command line")
            elif options["action"] == "resume":
                self.stdout.write(f"{jobs.resume(job, actor='command line')} chunks queued again.")
        except jobs.JobError as exc:
            raise CommandError(str(exc)) from exc
        job.refresh_from_db()
        progress = job_progress(job)
        self.stdout.write(
            json.dumps(
                {
                    "job": job.pk,
                    "status": job.status,
                    "done": progress.done,
                    "total": progress.total,
                    "chunks": progress.chunks,
                    "prompts_per_second": progress.prompts_per_second,
                    "eta_seconds": progress.eta.total_seconds() if progress.eta else None,
                    "errors": progress.errors,
                },
                indent=2,
            )
        )
