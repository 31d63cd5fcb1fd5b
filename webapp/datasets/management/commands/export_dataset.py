from django.core.management.base import BaseCommand, CommandError

from webapp.datasets.export import FORMATS, ExportError, write_export
from webapp.datasets.models import DatasetVersion


class Command(BaseCommand):
    help = (
        "Export a finished dataset version into a new folder: examples.jsonl or examples.parquet, or a "
        "Hugging Face datasets folder (datasets.load_from_disk), each with a manifest.json. Audited."
    )

    def add_arguments(self, parser):
        parser.add_argument("dataset_id", type=int)
        parser.add_argument("--format", choices=FORMATS, required=True)
        parser.add_argument("--out", required=True, help="a folder that does not exist yet (or is empty)")
        parser.add_argument("--as-user", default="", help="name recorded in the audit log and manifest")

    def handle(self, *args, **options):
        try:
            dataset = DatasetVersion.objects.select_related("corpus", "model_version", "profile").get(
                pk=options["dataset_id"]
            )
        except DatasetVersion.DoesNotExist:
            raise CommandError(f"No dataset with id {options['dataset_id']}.") from None
        actor = f"command:{options['as_user']}" if options["as_user"] else "command line"
        try:
            result = write_export(dataset, options["format"], options["out"], actor=actor)
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{dataset}: {result.rows} rows written to {result.path} ({result.size_bytes:,} bytes).")
