from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from webapp.pipeline.models import ModelVersion


class Command(BaseCommand):
    help = "Register a local transformers model folder (or a registry name) as a model version."

    def add_arguments(self, parser):
        parser.add_argument("name", help="a short unique name, e.g. llama3-1b-dsm")
        parser.add_argument("path", help="a folder with config.json and the weights, or a registry name")
        parser.add_argument("--parent", help="name of the model version it was trained from")
        parser.add_argument("--default", action="store_true", help="make it the default model")

    def handle(self, *args, **options):
        from transformers import AutoConfig

        from ml.models import ModelError, family_for
        from ml.models.loading import resolve

        path = options["path"]
        if Path(path).expanduser().is_dir():
            path = str(Path(path).expanduser().resolve())
        try:
            source, is_hub = resolve(path)
            if is_hub:
                raise CommandError(f"{path} is neither a folder nor a registered name (hub ids are not accepted here)")
            family = family_for(AutoConfig.from_pretrained(source, local_files_only=True))
        except (ModelError, OSError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        parent = None
        if options["parent"]:
            parent = ModelVersion.objects.filter(name=options["parent"]).first()
            if parent is None:
                raise CommandError(f"no model version named {options['parent']!r}")
        with transaction.atomic():
            if options["default"]:
                ModelVersion.objects.filter(is_default=True).update(is_default=False)
            version, created = ModelVersion.objects.update_or_create(
                name=options["name"],
                defaults={"family": family.name, "path": path, "parent": parent, "is_default": options["default"]},
            )
        verb = "Registered" if created else "Updated"
        self.stdout.write(f"{verb} model version {version.name} ({family.name}) at {path}")
