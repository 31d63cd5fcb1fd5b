from django.core.management.base import BaseCommand, CommandError

from webapp.audit.log import record_refused_import
from webapp.corpus.gold import import_gold
from webapp.corpus.importing import import_annotations
from webapp.lib.formats import span_readers
from webapp.lib.validators import printable


class Command(BaseCommand):
    help = (
        'Import gold annotations from JSONL lines {"note_id", "task", "label", "evidence": [[start, end], ...]} '
        "(task: slug or description), or with --format the gold spans of an annotation tool's files through "
        "--map entries. The whole input is validated first; on any problem nothing is imported."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path", help="a .jsonl file (optionally gzip, bz2 or xz compressed); with --format its file, folder or zip"
        )
        parser.add_argument("--corpus", required=True, help="corpus name")
        parser.add_argument("--project", default="", help="the project's slug (needed when there are several)")
        parser.add_argument(
            "--annotator",
            default="",
            help="whose annotations these are, a person or a source (default: JSONL, import:<file name>; "
            "with --format, the annotator each span carries in the file, as our exports write it)",
        )
        parser.add_argument(
            "--update", action="store_true", help="replace the label and evidence of changed annotations"
        )
        parser.add_argument(
            "--format",
            default="",
            metavar="FORMAT",
            help=f"read gold evidence from an annotation tool's files: {', '.join(f.name for f in span_readers())}",
        )
        parser.add_argument(
            "--map",
            action="append",
            default=[],
            metavar="LABEL=TASK:VALUE",
            help="with --format: LABEL=TASK:VALUE, LABEL[attr=value]=TASK:VALUE, LABEL=TASK (evidence only), "
            "LABEL=- (skip), *=- (skip every other label); repeat for each label",
        )
        parser.add_argument("--layer", default="", help="XMI: the annotation layer to read (default: every custom one)")
        parser.add_argument("--feature", default="", help="XMI: the feature holding the label (default: the layer)")
        parser.add_argument(
            "--missing-feature",
            choices=["refuse", "skip", "default"],
            default="refuse",
            help="XMI: an annotation without the --feature: refuse the file (default), skip the span, or give it "
            "--feature-default as its label; the preview counts them",
        )
        parser.add_argument("--feature-default", default="", help="XMI: the label of spans without the --feature")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="with --format: validate and show what would be imported; write nothing",
        )

    def handle(self, *args, **options):
        preview = []
        if options["format"]:
            gold = import_gold(
                options["path"],
                options["corpus"],
                project=options["project"],
                fmt=options["format"],
                mapping=options["map"],
                layer=options["layer"],
                feature=options["feature"],
                missing_feature=options["missing_feature"],
                feature_default=options["feature_default"],
                annotator=options["annotator"],
                update=options["update"],
                dry_run=options["dry_run"],
            )
            report, preview = gold.report, gold.preview
        elif any(options[name] for name in ("map", "dry_run", "layer", "feature", "feature_default")) or (
            options["missing_feature"] != "refuse"
        ):
            raise CommandError("--map, --dry-run, --layer, --feature and --missing-feature go with --format")
        else:
            report = import_annotations(
                options["path"],
                options["corpus"],
                project=options["project"],
                annotator=options["annotator"],
                update=options["update"],
            )
        for line in preview:
            self.stdout.write(line)
        for line in report.warning_lines():
            self.stderr.write(self.style.WARNING(f"warning: {line}"))
        if not report.ok:
            # printable: an argument whose bytes are not UTF-8 holds surrogates, which jsonb refuses
            record_refused_import(
                None, printable(options["corpus"]), "annotations", report.problem_count, report.problems
            )
            lines = "\n".join(report.problem_lines())
            raise CommandError(f"nothing imported, {report.problem_count} problem(s):\n{lines}")
        if options["dry_run"]:
            self.stdout.write(f"Dry run: nothing was written to {options['corpus']!r}.")
            return
        self.stdout.write(
            f"Annotations imported into {options['corpus']!r}: {report.created} created, "
            f"{report.updated} updated, {report.unchanged} unchanged."
        )
