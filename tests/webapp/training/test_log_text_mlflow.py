"""What a run's log says of MLflow (webapp.integrations.mlflow_log's lines, runs.mlflow_refusal's) is
recognised by the table that shows run logs in the reader's language, its values kept as stored."""

from types import SimpleNamespace

import pytest

from webapp.integrations import mlflow_log
from webapp.training import log_text

GATE_REASON = (
    "Corpus ward is not de-identified: de-identify it, or a project admin may confirm that its data may leave as it is."
)

LINES = [
    (
        log_text.MLFLOW_HELD_BACK % {"reason": GATE_REASON},
        log_text.MLFLOW_HELD_BACK,
        {"reason": GATE_REASON},
    ),
    (
        mlflow_log.NOT_LOGGED % {"reason": "HTTP 503 from http://mlflow:5000"},
        mlflow_log.NOT_LOGGED,
        {"reason": "HTTP 503 from http://mlflow:5000"},
    ),
    (
        mlflow_log.LOGGED % {"experiment": "decselfmask-ward", "run": "0a1b2c"},
        mlflow_log.LOGGED,
        {"experiment": "decselfmask-ward", "run": "0a1b2c"},
    ),
    (
        mlflow_log.REGISTERED % {"name": "decselfmask-ward-ch", "version": "3", "alias": "run-12"},
        mlflow_log.REGISTERED,
        {"name": "decselfmask-ward-ch", "version": "3", "alias": "run-12"},
    ),
    (
        mlflow_log.NOT_REGISTERED % {"reason": "RESOURCE_ALREADY_EXISTS"},
        mlflow_log.NOT_REGISTERED,
        {"reason": "RESOURCE_ALREADY_EXISTS"},
    ),
]

# a stand-in catalog: each template's "translation" is marked, so the values put back show
UPPER = SimpleNamespace(
    gettext=lambda t: "<<" + t + ">>",
    ngettext=lambda s, p, n: "<<" + (s if n == 1 else p) + ">>",
    pgettext=lambda c, t: "<<" + t + ">>",
)


@pytest.mark.parametrize(("line", "template", "values"), LINES)
def test_each_mlflow_line_is_matched_by_its_own_template_with_its_values(line, template, values):
    known, found = log_text.texts().match(line)
    assert known.template == template
    assert found == values


@pytest.mark.parametrize(("line", "template", "values"), LINES)
def test_a_shown_mlflow_line_is_its_template_s_translation_with_the_values_as_stored(line, template, values):
    assert log_text.texts().render(line, UPPER) == ("<<" + template + ">>") % values


def test_the_gate_s_reason_stays_a_value_and_the_held_back_line_is_matched_before_the_general_one():
    line = log_text.MLFLOW_HELD_BACK % {"reason": GATE_REASON}
    known, found = log_text.texts().match(line)
    assert known.template == log_text.MLFLOW_HELD_BACK and known.words == ()
    assert found["reason"] == GATE_REASON
