"""A member of two projects launches a run in one of them: the model must be shared or of the
dataset's (or split's) project, never a model the other project trained."""

from webapp.corpus.models import Corpus
from webapp.pipeline.models import ModelVersion
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role, forget_roles
from webapp.training.forms import LaunchForm
from webapp.training.models import LabeledSplit, TrainingRun


def test_a_run_on_as_dataset_from_bs_trained_model_is_refused(researcher, dataset, model_version):
    theirs = Project.objects.create(name="Oncology", slug="onco")
    Membership.objects.create(project=theirs, user=researcher, role=Role.RESEARCHER)
    forget_roles(researcher)
    split = LabeledSplit.objects.create(corpus=Corpus.objects.create(project=theirs, name="onco", language="en"))
    run = TrainingRun.objects.create(name="onco run", kind="sft", model_version=model_version, split=split)
    run.produced_model = ModelVersion.objects.create(name="onco-dsm", family="llama", path="/o", parent=model_version)
    run.save(update_fields=["produced_model"])
    data = {"preset": "dsm-full", "dataset": dataset.pk}
    refused = LaunchForm({**data, "model_version": run.produced_model.pk}, user=researcher)
    assert not refused.is_valid() and "of the project of the corpus" in refused.errors["model_version"][0]
    shared = LaunchForm({**data, "model_version": model_version.pk}, user=researcher)
    shared.is_valid()
    assert "model_version" not in shared.errors
