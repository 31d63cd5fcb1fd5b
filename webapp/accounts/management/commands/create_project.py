from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from webapp.accounts.membership import create_project


class Command(BaseCommand):
    help = "Create a project (what a site admin does first; its members are added with add_member)."

    def add_arguments(self, parser):
        parser.add_argument(
            "slug", help="stable short name: letters, digits, hyphens (used by --project and OIDC_GROUP_ROLES)"
        )
        parser.add_argument("--name", default="", help="the name shown (default: the slug)")
        parser.add_argument("--description", default="")

    def handle(self, *args, slug, name, description, **options):
        try:
            project = create_project(name=name or slug, slug=slug, description=description, actor="command line")
        except ValidationError as exc:
            raise CommandError("; ".join(f"{field}: {' '.join(m)}" for field, m in exc.message_dict.items())) from None
        self.stdout.write(f"Project {project.slug!r} created ({project.name}).")
