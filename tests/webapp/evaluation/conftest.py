import pytest

from tests.webapp.evaluation.factories import make_annotated_corpus, make_model_version


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama model and tokenizer, saved once per session (no download)."""
    from tests.ml.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama-evaluation")
    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def annotated(db):
    """(corpus, tasks): 6 notes x 2 tasks, 7 annotated pairs with evidence."""
    return make_annotated_corpus()


@pytest.fixture
def model_version(db, tiny_model_dir):
    return make_model_version(str(tiny_model_dir))


@pytest.fixture
def user_for(clinician, researcher, admin_user, norole_user):
    return {"clinician": clinician, "researcher": researcher, "admin": admin_user, "norole": norole_user}


@pytest.fixture
def no_queue(monkeypatch):
    """Launches record the ids they would send instead of reaching a broker."""
    from webapp.lifecycle import queue

    sent = []

    def send(task_name, *ids):
        assert task_name == "workers.evaluation.run_evaluation"
        sent.extend(ids)
        return len(ids)

    monkeypatch.setattr(queue, "send", send)
    return sent
