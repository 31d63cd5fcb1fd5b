from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ml.catalog import CatalogError, load_catalog
from webapp.corpus.catalog import CatalogConflict, sync_catalog


class Command(BaseCommand):
    help = "Create or update the classification tasks from the task catalog (default: ml/data/crf_catalog.json)."

    def add_arguments(self, parser):
        parser.add_argument("--file", type=Path, help="a catalog JSON file instead of the shipped one")

    def handle(self, *args, **options):
        try:
            specs = load_catalog(options["file"])
        except CatalogError as exc:
            raise CommandError(str(exc)) from exc
        source = options["file"].name if options["file"] else "crf_catalog.json"
        try:
            report = sync_catalog(specs, source=source)
        except CatalogConflict as exc:
            raise CommandError(str(exc)) from exc
        kept = f", {len(report.kept)} kept (made in the app: {', '.join(report.kept)})" if report.kept else ""
        self.stdout.write(
            f"Task catalog {source}: {len(report.created)} created, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged{kept}."
        )
