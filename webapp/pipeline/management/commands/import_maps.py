"""python manage.py import_maps --model-version ID --corpus ID FILE.jsonl: relevance maps computed
elsewhere into a model version's maps (webapp.pipeline.mapimport; format in docs/ml-cli.md)."""

from django.core.management.base import BaseCommand, CommandError

from ml.relevance import EXPLAIN
from webapp.corpus.models import Corpus
from webapp.pipeline.mapimport import MapImportError, import_maps
from webapp.pipeline.models import ModelVersion


class Command(BaseCommand):
    help = (
        "Import relevance maps computed outside the product (JSONL: note, task, tokens + scores or character "
        "spans) into a model version's maps, method 'imported'. The whole file is checked against the model's "
        "tokenizer first; any bad line refuses it, naming the line, and nothing is written."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the JSONL file")
        parser.add_argument("--model-version", required=True, help="id or name of the model version")
        parser.add_argument("--corpus", required=True, help="id or name of the corpus the notes are in")
        parser.add_argument(
            "--template", default="en", help="the prompt template the maps explain (tokens are aligned in it)"
        )
        parser.add_argument("--explain", default="next", choices=EXPLAIN, help="the explain variant they stand for")
        parser.add_argument("--source", default="", help="where the maps come from, e.g. 'captum IG' (shown)")
        parser.add_argument("--replace", action="store_true", help="replace imported maps of the same notes and tasks")

    def handle(self, *args, **options):
        model_version = _get(ModelVersion, options["model_version"], "model version")
        corpus = _get(Corpus, options["corpus"], "corpus")
        verbose = options["verbosity"] >= 1

        def progress(lines):
            if verbose:
                self.stdout.write(f"checked {lines} lines")

        try:
            outcome = import_maps(
                options["file"],
                corpus=corpus,
                model_version=model_version,
                template=options["template"],
                explain=options["explain"],
                source=options["source"],
                replace=options["replace"],
                progress=progress,
            )
        except MapImportError as exc:
            raise CommandError(str(exc)) from None
        made = outcome.map_import
        if not outcome.created:
            self.stdout.write(
                f"This file was imported already (import {made.pk}, {made.maps} maps, {made.created:%Y-%m-%d %H:%M}): "
                "nothing written."
            )
            return
        self.stdout.write(
            f"Imported {made.maps} maps into model version {model_version.name} as configuration {made.config_key} "
            f"(import {made.pk})."
        )


def _get(model, value: str, what: str):
    found = model.objects.filter(pk=int(value)).first() if value.isdigit() else None
    found = found or model.objects.filter(name=value).first()
    if found is None:
        raise CommandError(f"no {what} {value!r}")
    return found
