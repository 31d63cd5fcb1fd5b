from django.core.management.base import BaseCommand, CommandError

from webapp.audit.log import record_refused_import
from webapp.corpus.importing import import_annotations
from webapp.lib.validators import printable


class Command(BaseCommand):
    help = (
        'Import gold annotations from JSONL lines {"note_id", "task", "label", "evidence": [[start, end], ...]} '
        "(task: slug or description). The whole file is validated first; on any problem nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="a .jsonl file (optionally gzip, bz2 or xz compressed)")
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--annotator", default="", help="annotator name (default: import:<file name>)")
        parser.add_argument(
            "--update", action="store_true", help="replace the label and evidence of changed annotations"
        )

    def handle(self, *args, **options):
        report = import_annotations(
            options["path"], options["corpus"], annotator=options["annotator"], update=options["update"]
        )
        for line in report.warning_lines():
            self.stderr.write(self.style.WARNING(f"warning: {line}"))
        if not report.ok:
            # printable: an argument whose bytes are not UTF-8 holds surrogates, which jsonb refuses
            record_refused_import(
                None, printable(options["corpus"]), "annotations", report.problem_count, report.problems
            )
            lines = "\n".join(report.problem_lines())
            raise CommandError(f"nothing imported, {report.problem_count} problem(s):\n{lines}")
        self.stdout.write(
            f"Annotations imported into {options['corpus']!r}: {report.created} created, "
            f"{report.updated} updated, {report.unchanged} unchanged."
        )
