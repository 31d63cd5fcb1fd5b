from django.core.management.base import BaseCommand, CommandError

from webapp.audit.log import record_refused_import
from webapp.corpus.importing import import_notes
from webapp.lib.formats import readers
from webapp.lib.validators import printable


class Command(BaseCommand):
    help = (
        "Import notes into a corpus from a file of any format of the table (webapp.lib.formats): JSONL (id, "
        "text, metadata), CSV (id, text, other columns -> metadata), a brat or XMI folder or a zip of one, "
        "Label Studio JSON, doccano JSONL; each document becomes a note. The whole file is validated first; "
        "on any problem nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path",
            help="a file (JSONL and CSV optionally gzip, bz2 or xz compressed), or a folder of brat or XMI files "
            "or a zip of one",
        )
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--project", default="", help="the project's slug (needed when there are several)")
        parser.add_argument("--language", default="", help="ISO 639 code; required with --create")
        parser.add_argument("--create", action="store_true", help="create the corpus if it does not exist")
        parser.add_argument(
            "--update", action="store_true", help="replace the text and metadata of notes whose text changed"
        )
        parser.add_argument(
            "--format",
            choices=[f.name for f in readers()],
            default="",
            help="the format to read (default: the one the name of the file, or of the files in it, tells)",
        )
        parser.add_argument(
            "--deidentify",
            action="store_true",
            help="de-identify each note with the project's policy before it is stored (the original is never kept)",
        )

    def handle(self, *args, **options):
        report = import_notes(
            options["path"],
            options["corpus"],
            project=options["project"],
            language=options["language"],
            create=options["create"],
            update=options["update"],
            fmt=options["format"],
            deidentify=options["deidentify"],
        )
        for line in report.warning_lines():
            self.stderr.write(self.style.WARNING(f"warning: {line}"))
        if not report.ok:
            # printable: an argument whose bytes are not UTF-8 holds surrogates, which jsonb refuses
            record_refused_import(None, printable(options["corpus"]), "notes", report.problem_count, report.problems)
            lines = "\n".join(report.problem_lines())
            raise CommandError(f"nothing imported, {report.problem_count} problem(s):\n{lines}")
        self.stdout.write(
            f"Notes imported into {options['corpus']!r}: {report.created} created, "
            f"{report.updated} updated, {report.unchanged} unchanged."
        )
        if options["deidentify"]:
            found = ", ".join(f"{kind} {n}" for kind, n in report.deid_counts.items()) or "none"
            self.stdout.write(f"De-identified on the way in; identifiers replaced: {found}.")
