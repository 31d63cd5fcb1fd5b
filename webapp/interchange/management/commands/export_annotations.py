from django.core.management.base import BaseCommand, CommandError

from webapp.corpus.access import CorpusNotFound, corpus_named
from webapp.deid import gate
from webapp.interchange.exporting import ExportChoice, ExportChoiceError, export_corpus, peak_source
from webapp.lib.formats import UnsupportedFormat, get_writer, writers


class Command(BaseCommand):
    help = (
        "Export a corpus's notes with their gold spans, and optionally a model's peaks (as pre-annotations) and "
        "the review decisions, in an annotation tool's format; its text is scanned for identifiers left (counts per "
        "type, in the audit log). A corpus that is not de-identified is refused unless --confirm-identifiable."
    )

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--project", default="", help="the corpus's project (slug), when its name is in several")
        parser.add_argument(
            "--format", required=True, metavar="FORMAT", help=f"one of {', '.join(f.name for f in writers())}"
        )
        parser.add_argument("--out", required=True, help="the file (or, for brat and xmi, the folder) to write")
        parser.add_argument("--no-gold", action="store_true", help="leave the gold spans out")
        parser.add_argument("--peaks", default="", metavar="MODEL_VERSION", help="add this model version's peaks")
        parser.add_argument("--method", default="attnlrp", help="relevance method of the maps (with --peaks)")
        parser.add_argument("--template", default="", help="prompt template of the maps (default: the language)")
        parser.add_argument("--config", default="", help="relevance configuration key (default: the default one)")
        parser.add_argument("--profile", default="", help="peak profile name (default: the default profile)")
        parser.add_argument("--decisions", action="store_true", help="add the review decisions and adjudications")
        parser.add_argument(
            "--confirm-identifiable",
            action="store_true",
            help="let it be written although the corpus is not de-identified (recorded in the audit log)",
        )

    def handle(self, *args, **options):
        try:
            get_writer(options["format"])
        except UnsupportedFormat as exc:
            raise CommandError(str(exc)) from None
        try:
            corpus = corpus_named(options["corpus"], options["project"])
        except CorpusNotFound as exc:
            raise CommandError(str(exc)) from None
        try:
            peaks = (
                peak_source(
                    corpus,
                    options["peaks"],
                    method=options["method"],
                    template=options["template"],
                    config_key=options["config"],
                    profile_name=options["profile"],
                )
                if options["peaks"]
                else None
            )
        except ExportChoiceError as exc:
            raise CommandError(str(exc)) from None
        choice = ExportChoice(gold=not options["no_gold"], peaks=peaks, decisions=options["decisions"])
        try:
            notes = export_corpus(
                corpus, options["format"], options["out"], choice, confirm_identifiable=options["confirm_identifiable"]
            )
        except gate.Refused as exc:
            raise CommandError(f"{exc.reason} From the command line: --confirm-identifiable.") from None
        self.stdout.write(f"{notes} note(s) of {corpus.name!r} written to {options['out']} ({options['format']}).")
