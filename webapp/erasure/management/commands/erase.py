"""manage.py erase: erase notes, a patient's notes, a corpus or a project (webapp.erasure)."""

import json

from django.core.management.base import BaseCommand, CommandError

from webapp.corpus.models import Corpus
from webapp.erasure import erasing, planning
from webapp.erasure.models import ErasureRequest
from webapp.projects.models import Project

Scope = ErasureRequest.Scope


class Command(BaseCommand):
    help = (
        "Erase notes (by id), every note of a patient (by a metadata key), a whole corpus or a whole project, "
        "with every row and file made from them; list the trained models that saw them. --dry-run prints the "
        "counts per table and erases nothing. Without --queue the erasure runs in this process."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="the project's slug")
        parser.add_argument("--corpus", default="", help="the corpus's name (not with --whole-project)")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--note", nargs="+", metavar="ID", help="notes by their id in the corpus")
        what.add_argument("--patient", nargs="+", metavar="VALUE", help="every note whose metadata names the patient")
        what.add_argument("--whole-corpus", action="store_true")
        what.add_argument("--whole-project", action="store_true")
        parser.add_argument("--patient-key", default="patient_id", help="the notes' metadata key naming the patient")
        parser.add_argument(
            "--datasets",
            choices=ErasureRequest.Datasets.values,
            default=ErasureRequest.Datasets.WITHDRAW,
            help="dataset versions that held erased notes: withdraw (default), or withdraw and rebuild",
        )
        parser.add_argument("--dry-run", action="store_true", help="print what would be erased; erase nothing")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        parser.add_argument("--queue", action="store_true", help="send the erasure to a worker instead of running it")

    def handle(self, *args, **options):
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"No project with slug {options['project']!r}.")
        scope = (
            Scope.NOTES
            if options["note"]
            else Scope.PATIENT
            if options["patient"]
            else Scope.CORPUS
            if options["whole_corpus"]
            else Scope.PROJECT
        )
        corpus = None
        if scope != Scope.PROJECT:
            corpus = Corpus.objects.filter(project=project, name=options["corpus"]).first()
            if corpus is None:
                raise CommandError(
                    f"No corpus named {options['corpus']!r} in project {project.slug}; name it with --corpus."
                )
        target = {
            "corpus": corpus,
            "notes": options["note"] or (),
            "patient_key": options["patient_key"],
            "patients": options["patient"] or (),
        }
        try:
            if options["dry_run"]:
                counted, _ = erasing.plan(project, scope, **target)
                self._print(counted.as_json(), options["json"], "dry run: nothing was erased")
                return
            erasure = erasing.request(
                project, scope, datasets=options["datasets"], actor=None, send=options["queue"], **target
            )
        except planning.PlanError as exc:
            raise CommandError(str(exc)) from exc
        if options["queue"]:
            self.stdout.write(f"Erasure {erasure.pk} queued: {erasure.described}.")
            return
        self._run_here(erasure, options["json"])

    def _run_here(self, erasure, as_json):
        claimed = erasing.claim(erasure.pk, worker="command line")
        if claimed is None:
            raise CommandError(f"Erasure {erasure.pk} is held by a worker.")
        try:
            status = erasing.run(claimed)
        except Exception as exc:
            raise CommandError(erasing.fail(claimed, exc)) from exc
        claimed.refresh_from_db()
        report = {
            "erasure": claimed.pk,
            "status": status or claimed.status,
            "target": claimed.described,
            "tables": claimed.tables_erased,
            "rows": claimed.rows_erased,
            "files": claimed.files_erased,
            "datasets withdrawn": claimed.withdrawn_names,
            "models trained on erased data": claimed.models_listed_names,
        }
        self._print(report, as_json, f"erasure {claimed.pk}: {status}; the receipt is in the audit log")

    def _print(self, report: dict, as_json: bool, last_line: str) -> None:
        if as_json:
            self.stdout.write(json.dumps(report, indent=1))
            return
        for key, value in report.items():
            if isinstance(value, dict):
                self.stdout.write(f"{key}:{'' if value else ' none'}")
                width = max((len(k) for k in value), default=0)
                for table, rows in value.items():
                    self.stdout.write(f"  {table:<{width}}  {rows:>9}")
            elif isinstance(value, list):
                self.stdout.write(f"{key}: {', '.join(map(str, value)) or 'none'}")
            else:
                self.stdout.write(f"{key}: {value}")
        self.stdout.write(last_line)
