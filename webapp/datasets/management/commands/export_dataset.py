from django.core.management.base import BaseCommand, CommandError

from webapp.datasets.export import FORMATS, ExportError, write_export
from webapp.datasets.models import DatasetVersion
from webapp.deid import gate


class Command(BaseCommand):
    help = (
        "Export a finished dataset version into a new folder in a format of the table (webapp.datasets.formats): "
        "examples.jsonl or examples.parquet, or a Hugging Face datasets folder (datasets.load_from_disk), each "
        "with a manifest.json, its text scanned for identifiers left (counts per type). Audited. A dataset of a "
        "corpus that is not de-identified is refused unless --confirm-identifiable (audited)."
    )

    def add_arguments(self, parser):
        parser.add_argument("dataset_id", type=int)
        parser.add_argument("--format", required=True, help=f"one of {', '.join(FORMATS)}")
        parser.add_argument("--out", required=True, help="a folder that does not exist yet (or is empty)")
        parser.add_argument("--as-user", default="", help="name recorded in the audit log and manifest")
        parser.add_argument(
            "--confirm-identifiable",
            action="store_true",
            help="let it be written although its corpus is not de-identified (recorded in the audit log)",
        )

    def handle(self, *args, **options):
        try:
            dataset = DatasetVersion.objects.select_related("corpus", "model_version", "profile").get(
                pk=options["dataset_id"]
            )
        except DatasetVersion.DoesNotExist:
            raise CommandError(f"No dataset with id {options['dataset_id']}.") from None
        actor = f"command:{options['as_user']}" if options["as_user"] else "command line"
        passage = gate.gate_for([dataset.corpus], actor)
        try:
            confirmed = passage.check(actor, options["confirm_identifiable"], "dataset export")
        except gate.Refused as exc:
            raise CommandError(f"{exc.reason} From the command line: --confirm-identifiable.") from None
        try:
            result = write_export(dataset, options["format"], options["out"], actor=actor)
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        if confirmed:
            passage.record(actor, "dataset export", dataset, format=options["format"])
        self.stdout.write(f"{dataset}: {result.rows} rows written to {result.path} ({result.size_bytes:,} bytes).")
        self.stdout.write(f"Residual scan: {_said(result.residual)}.")


def _said(residual: dict | None) -> str:
    """The counts per identifier type in a line, never a value."""
    if not residual:
        return "none"
    if residual.get("skipped"):
        return residual["skipped"]
    counts = residual.get("counts") or {}
    return ", ".join(f"{kind} {n}" for kind, n in counts.items()) or "no identifier found"
