import json
import time

from django.core.management.base import BaseCommand, CommandError
from django.db.models import F

from ml.faithfulness import PASSES_PER_PAIR
from ml.relevance import EXPLAIN, METHODS
from webapp.corpus.access import CorpusNotFound, corpus_named
from webapp.corpus.models import Task
from webapp.evaluation import evaluations, running
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import ModelVersion, PeakProfile


class Command(BaseCommand):
    help = (
        "Compare relevance configurations (methods x explain variants) on a corpus: localisation against annotated "
        "evidence, task-specificity, and with --faithfulness faithfulness (no gold needed): "
        "queue the evaluation for the relevance workers, or run it here (--inline)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--corpus", required=True, help="corpus name (its annotations with evidence are the gold)")
        parser.add_argument("--project", default="", help="the corpus's project (slug), when its name is in several")
        parser.add_argument("--model", help="model version name (default: the default model)")
        parser.add_argument("--methods", default="attnlrp", help=f"comma-separated, of {', '.join(METHODS)}")
        parser.add_argument("--explain", default="next", help=f"comma-separated, of {', '.join(EXPLAIN)}")
        parser.add_argument(
            "--template",
            default="auto",
            help="'auto' (the corpus language's), a built-in name or a custom text with {note} and {task}",
        )
        parser.add_argument("--task", action="append", default=[], metavar="SLUG", help="only this task (repeat)")
        parser.add_argument("--profile", help="peak profile name, its latest version (default: the default profile)")
        parser.add_argument("--max-pairs", type=int, help="at most N annotated pairs, drawn with --seed")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--pairs-from",
            choices=["evidence", "notes"],
            default="evidence",
            help="evidence: annotated pairs with evidence spans; notes: drawn notes x every --task (any corpus)",
        )
        parser.add_argument(
            "--faithfulness",
            action="store_true",
            help=f"also measure faithfulness (no gold needed; {PASSES_PER_PAIR} forward passes per pair and "
            "configuration)",
        )
        how = parser.add_mutually_exclusive_group()
        how.add_argument("--wait", action="store_true", help="queue it, then print progress until it ends")
        how.add_argument(
            "--inline",
            action="store_true",
            help="run it in this process, no worker needed (AttnLRP patches this process)",
        )

    def handle(self, *args, **options):
        corpus = self._corpus(options["corpus"], options["project"])
        spec = evaluations.EvaluationSpec(
            corpus=corpus,
            model_version=self._model(options["model"]),
            methods=_split(options["methods"]),
            explains=_split(options["explain"]),
            template=options["template"],
            profile=self._profile(options["profile"], corpus.project_id),
            tasks=self._tasks(options["task"]),
            max_pairs=options["max_pairs"],
            seed=options["seed"],
            pairs_from=options["pairs_from"],
            faithfulness=options["faithfulness"],
        )
        try:
            evaluation = evaluations.launch(spec, actor="command line", enqueue=not options["inline"])
        except evaluations.EvaluationError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Evaluation {evaluation.pk}: {evaluation.n_pairs} pairs x {len(evaluation.configs)} "
            f"configurations = {evaluation.total} prompts{'' if options['inline'] else ', queued'}."
        )
        if options["inline"]:
            self._run_here(evaluation)
        elif options["wait"]:
            self._wait(evaluation)
        else:
            return
        evaluation.refresh_from_db()
        if evaluation.status != "done":
            raise CommandError(f"Evaluation {evaluation.pk} ended {evaluation.status}: {evaluation.error}")
        self.stdout.write(json.dumps(evaluation.result, indent=2))
        self.stdout.write(f"Recommended: {evaluation.recommendation.get('reason', '')}")

    def _run_here(self, evaluation):
        from webapp.pipeline.modelcache import loaded_model

        claimed = evaluations.claim(evaluation.pk, worker="command line")
        if claimed is None:
            raise CommandError(f"Evaluation {evaluation.pk} was taken by a worker meanwhile")
        try:
            outcome = running.execute(claimed, lambda: loaded_model(claimed.model_version))
        except evaluations.EvaluationError as exc:
            evaluations.fail(claimed, str(exc))
            raise CommandError(str(exc)) from exc
        except BaseException as exc:
            evaluations.fail(
                claimed, f"Stopped ({type(exc).__name__}); maps already stored are kept: Resume continues."
            )
            raise
        self.stdout.write(f"Evaluation {evaluation.pk}: {outcome}.")

    def _wait(self, evaluation):
        while True:
            evaluation = RelevanceEvaluation.objects.defer("pairs").get(pk=evaluation.pk)
            self.stdout.write(
                json.dumps(
                    {
                        "evaluation": evaluation.pk,
                        "status": evaluation.status,
                        "phase": evaluation.phase,
                        "done": evaluation.done,
                        "total": evaluation.total,
                        "error": evaluation.error,
                    }
                )
            )
            if not evaluation.is_active:
                return
            time.sleep(5)

    def _corpus(self, name, project=""):
        try:
            return corpus_named(name, project)
        except CorpusNotFound as exc:
            raise CommandError(str(exc)) from None

    def _model(self, name):
        models = ModelVersion.objects.all()
        model = models.filter(name=name).first() if name else models.filter(is_default=True).first()
        if model is None:
            raise CommandError("no such model version (see `manage.py register_model`)")
        return model

    def _profile(self, name, project_id):
        """The corpus's project's profile of that name (its latest version), else a shared one."""
        if not name:
            return None
        named = PeakProfile.objects.of_project(project_id).filter(name=name)
        profile = named.order_by(F("project").asc(nulls_last=True), "-version").first()
        if profile is None:
            raise CommandError(f"no peak profile named {name!r}")
        return profile

    def _tasks(self, slugs):
        tasks = list(Task.objects.filter(slug__in=slugs))
        missing = set(slugs) - {t.slug for t in tasks}
        if missing:
            raise CommandError(f"no task {', '.join(sorted(missing))}")
        return tasks


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]
