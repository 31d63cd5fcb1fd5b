from django.core.management.base import BaseCommand, CommandError

from webapp.corpus.importing import import_notes
from webapp.corpus.sources import FORMATS


class Command(BaseCommand):
    help = (
        "Import notes into a corpus from a JSONL file (id, text, metadata), a CSV file (id, text, other "
        "columns -> metadata) or a brat folder (.txt + .ann). The whole file is validated first; "
        "on any problem nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a .jsonl/.csv file (optionally .gz) or a brat folder")
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--language", default="", help="ISO 639 code; required with --create")
        parser.add_argument("--create", action="store_true", help="create the corpus if it does not exist")
        parser.add_argument("--update", action="store_true", help="replace the text and metadata of notes whose text changed")
        parser.add_argument("--format", choices=FORMATS, default="", help="override the format guessed from the path")

    def handle(self, *args, **options):
        report = import_notes(
            options["path"], options["corpus"], language=options["language"], create=options["create"],
            update=options["update"], fmt=options["format"],
        )
        if not report.ok:
            lines = "\n".join(report.problem_lines())
            raise CommandError(f"nothing imported, {report.problem_count} problem(s):\n{lines}")
        self.stdout.write(
            f"Notes imported into {options['corpus']!r}: {report.created} created, "
            f"{report.updated} updated, {report.unchanged} unchanged."
        )

