"""manage.py retention: one round of retention now (webapp.erasure.retention), or its dry run."""

import json

from django.core.management.base import BaseCommand, CommandError

from webapp.erasure import retention
from webapp.projects.models import Project


class Command(BaseCommand):
    help = (
        "Apply the projects' retention now: request the erasure of notes past their time and remove the files of "
        "exports past theirs (the periodic task does this every RETENTION_INTERVAL_SECONDS). --dry-run prints what "
        "is due and changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="print what is due; change nothing")
        parser.add_argument("--project", default="", help="one project's slug (dry run only); default: every project")

    def handle(self, *args, dry_run=False, project="", **options):
        if project and not dry_run:
            raise CommandError("--project is for --dry-run; a round applies every project's retention.")
        if dry_run:
            projects = Project.objects.filter(slug=project) if project else Project.objects.all()
            if project and not projects.exists():
                raise CommandError(f"No project has the slug {project!r}.")
            rounds = [retention.report(p) for p in projects.order_by("slug")]
        else:
            rounds = retention.apply()
        self.stdout.write(json.dumps([_as_json(due) for due in rounds], indent=2))


def _as_json(due: retention.Due) -> dict:
    return {
        "project": due.project.slug,
        "notes_imported_before": due.notes_before.isoformat() if due.notes_before else None,
        "notes_due": due.notes,
        "exports_made_before": due.exports_before.isoformat() if due.exports_before else None,
        "exports_due": due.exports,
        "left_this_round": due.skipped,
    }
