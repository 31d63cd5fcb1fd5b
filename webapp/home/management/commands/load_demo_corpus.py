"""Generate the synthetic emergency-department corpus and import it through the normal import path."""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from ml.synthetic import write_corpus
from webapp.home.demo import demo_project


class Command(BaseCommand):
    help = "Create a synthetic ED corpus (Italian and English notes with gold labels). Idempotent."

    def add_arguments(self, parser):
        parser.add_argument("--corpus", default="demo-ed")
        parser.add_argument("--notes", type=int, default=300)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--language", default="mixed", choices=["en", "it", "mixed"])

    def handle(self, *args, corpus, notes, seed, language, **options):
        folder = settings.DATA_DIR / "demo"
        folder.mkdir(parents=True, exist_ok=True)
        notes_path = folder / f"{corpus}-{language}-{seed}-{notes}.notes.jsonl"
        annotations_path = folder / f"{corpus}-{language}-{seed}-{notes}.annotations.jsonl"
        if not (notes_path.exists() and annotations_path.exists()):
            write_corpus(notes_path, annotations_path, notes, seed=seed, language=language)
        # ISO 639-2 "mul" (multiple languages) for the mixed Italian/English corpus.
        corpus_language = "mul" if language == "mixed" else language
        project = demo_project()
        call_command(
            "import_notes",
            str(notes_path),
            corpus=corpus,
            project=project.slug,
            language=corpus_language,
            create=True,
            stdout=self.stdout,
        )
        call_command(
            "import_annotations",
            str(annotations_path),
            corpus=corpus,
            project=project.slug,
            annotator="synthetic-gold",
            stdout=self.stdout,
        )
