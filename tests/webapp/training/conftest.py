import pytest

from tests.webapp.training.factories import make_dataset, make_labeled_corpus, make_model_version


@pytest.fixture
def corpus(db):
    return make_labeled_corpus(16)


@pytest.fixture
def model_version(db):
    return make_model_version("smollm2-135m-instruct")


@pytest.fixture
def dataset(corpus, model_version):
    return make_dataset(corpus, model_version)


@pytest.fixture
def user_for(clinician, researcher, admin_user, norole_user):
    return {"clinician": clinician, "researcher": researcher, "admin": admin_user, "norole": norole_user}


@pytest.fixture
def make_run(dataset, model_version, corpus):
    """make_run(kind="dsm", status=..., **fields) -> a TrainingRun launched through the domain."""
    from webapp.training import runs
    from webapp.training.models import CAUSAL_KINDS, TrainingRun

    def make(kind="dsm", preset="", config=None, **fields):
        # The paper's DSM settings on a 12-example dataset are one step, all warmup: no warmup here,
        # else the launch refuses a run that cannot change the model.
        config = config if config is not None else ({"train": {"warmup_ratio": 0.0}} if kind == "dsm" else {})
        spec = runs.RunSpec(
            kind=kind,
            preset=preset,
            model_version=model_version,
            config=config,
            dataset=dataset if kind in CAUSAL_KINDS else None,
            split_corpus=None if kind in CAUSAL_KINDS else corpus,
        )
        run = runs.launch(spec)
        if fields:
            TrainingRun.objects.filter(pk=run.pk).update(**fields)
        return TrainingRun.objects.get(pk=run.pk)

    return make
