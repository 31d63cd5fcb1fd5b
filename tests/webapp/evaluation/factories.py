"""Builders for evaluation tests (also used by tests/workers): the pipeline's short English notes
with gold annotations whose evidence spans are the phrases of EVIDENCE, found in the text."""

from django.utils import timezone

from ml.relevance import RelevanceConfig
from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks
from webapp.corpus.models import Annotation
from webapp.evaluation import evaluations
from webapp.evaluation.evaluations import EvaluationSpec
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import JobStatus

EVIDENCE = {
    "heart-rate": "heart rate 130 bpm",
    "presence-of-pacemaker": "pacemaker",
    "body-temperature": "Temperature 38.5 C",
    "pneumonia": "pneumonia",
}


def make_annotated_corpus(n_notes: int = 6, n_tasks: int = 2, sentences: int = 3, name: str = "ward"):
    """(corpus, tasks): every note whose text holds a task's phrase gets a gold annotation with it as evidence."""
    corpus = make_corpus(n_notes, name=name, sentences=sentences)
    tasks = make_tasks(n_tasks)
    for note in corpus.notes.order_by("pk"):
        for task in tasks:
            start = note.text.find(EVIDENCE[task.slug])
            if start >= 0:
                Annotation.objects.create(
                    note=note,
                    task=task,
                    label=task.options[0],
                    annotator_name="import:gold",
                    evidence=[[start, start + len(EVIDENCE[task.slug])]],
                )
    return corpus, tasks


def annotated_pairs_count(corpus) -> int:
    return Annotation.objects.filter(note__corpus=corpus).exclude(evidence=[]).values("note", "task").distinct().count()


def spec(corpus, model_version, **changes) -> EvaluationSpec:
    values = dict(corpus=corpus, model_version=model_version, methods=["grad_input"], explains=["next"], template="en")
    values.update(changes)
    return EvaluationSpec(**values)


# ---------------------------------------------------------------- finished evaluations with a given result


def group(method, explain, auc, low, high, f1=0.3, n=40):
    """A result group as ml.localisation writes it, with the AUC and its interval given."""
    config = RelevanceConfig(method=method, explain=explain)
    return {
        "method": method,
        "explain": explain,
        "template": "en",
        "config_key": config.key,
        "n_pairs": n,
        "n_undefined": 1,
        "n_mass_ratio_undefined": 1,
        "auc": auc,
        "auc_ci": [low, high],
        "mass_ratio": 1.8,
        "mass_ratio_ci": [1.5, 2.1],
        "mass_ratio_median": 1.7,
        "peak_precision": 0.4,
        "peak_precision_ci": [0.3, 0.5],
        "peak_recall": 0.6,
        "peak_recall_ci": [0.5, 0.7],
        "peak_f1": f1,
        "peak_f1_ci": [f1 - 0.1, f1 + 0.1],
        "peaks": {"tp": 1, "fp": 1, "fn": 1},
    }


def baseline(auc, low, high):
    return {
        "n_pairs": 40,
        "n_undefined": 1,
        "auc": auc,
        "auc_ci": [low, high],
        "mass_ratio": 1.0,
        "mass_ratio_ci": [0.95, 1.05],
        "peak_precision": 0.1,
        "peak_precision_ci": [0.08, 0.12],
        "peak_recall": 0.9,
        "peak_recall_ci": [0.85, 0.95],
        "peak_f1": 0.18,
        "peak_f1_ci": [0.15, 0.2],
    }


def finished(corpus, model_version, groups, choice=None, reason="because"):
    """An evaluation launched (not run) and then marked done with this result (groups as `group` builds)."""
    evaluation = evaluations.launch(spec(corpus, model_version, methods=["attention", "attnlrp"]), enqueue=False)
    configs = [
        {
            "key": RelevanceConfig(method=g["method"], explain=g["explain"]).key,
            **RelevanceConfig(method=g["method"], explain=g["explain"]).to_dict(),
        }
        for g in groups
    ]
    result = {
        "groups": groups,
        "baselines": {"uniform": baseline(0.5, 0.5, 0.5), "random": baseline(0.5, 0.47, 0.53)},
        "recommended": {"choice": choice, "reason": reason},
        "configs": configs,
        "profile": "paper-default v1",
        "bootstrap": {"n_resamples": 1000, "confidence": 0.95, "seed": 0},
        "problems": [],
        "missing": {},
        "pairs_without_gold": 0,
        "n_pairs": 40,
    }
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(
        status=JobStatus.DONE, result=result, finished=timezone.now(), done=evaluation.total
    )
    return RelevanceEvaluation.objects.get(pk=evaluation.pk)


__all__ = [
    "EVIDENCE",
    "annotated_pairs_count",
    "baseline",
    "finished",
    "group",
    "make_annotated_corpus",
    "make_model_version",
    "spec",
]
