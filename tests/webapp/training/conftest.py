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
