from django.core.management.base import BaseCommand, CommandError
from django.db.models.functions import Now

from webapp.datasets import building
from webapp.datasets.models import DatasetVersion
from webapp.lifecycle.status import HELD, JobStatus


class Command(BaseCommand):
    help = (
        "Build (or rebuild) a dataset version in this process, without a worker: its examples are "
        "deleted and built again from the stored relevance maps."
    )

    def add_arguments(self, parser):
        parser.add_argument("dataset_id", type=int)

    def handle(self, *args, **options):
        pk = options["dataset_id"]
        if not DatasetVersion.objects.filter(pk=pk).exists():
            raise CommandError(f"No dataset with id {pk}.")
        DatasetVersion.objects.filter(pk=pk).exclude(status__in=HELD).update(status=JobStatus.QUEUED, heartbeat=Now())
        dataset = building.claim(pk, worker="command line")
        if dataset is None:
            raise CommandError(f"Dataset {pk} is being built by a worker right now.")
        try:
            stats = building.build(dataset)
        except Exception as exc:
            raise CommandError(building.fail(dataset, exc)) from exc
        if stats is None:
            dataset.refresh_from_db()
            raise CommandError(f"{dataset}: the build stopped before its end ({dataset.status_text()}).")
        self.stdout.write(f"{dataset}: {stats['examples']} examples from {stats['maps']} maps in {stats['seconds']} s.")
