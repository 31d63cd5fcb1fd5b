"""ml.training's refusals (English, one template of ml.training.refusals each) are recognised by
webapp.training.refusal_text, alone and inside a run's error (log_text), and shown translated with
every value as stored: settings as the config spells them, ids, labels, counts and folders."""

import re

import pytest

from ml.training import refusals
from ml.training.config import CausalLMConfig, PromptingConfig
from ml.training.data import LabeledItem
from ml.training.errors import TrainingError, TrainingInputError
from webapp.training import log_text, refusal_text

PLACEHOLDER = re.compile(r"%\((\w+)\)s")


class Marked:
    """A translation that marks each template it translates and keeps its placeholders."""

    @staticmethod
    def gettext(text):
        return f"<{text}>"

    @staticmethod
    def ngettext(singular, plural, number):
        return f"<{singular if number == 1 else plural}>"

    @staticmethod
    def pgettext(context, text):
        return f"<{text}>"


def _sample(template: str) -> dict[str, str]:
    """Values unlike any template's words, each its own, so a match that split them wrongly shows."""
    return {name: f"v{n}-{name}" for n, name in enumerate(dict.fromkeys(PLACEHOLDER.findall(template)))}


def test_the_table_lists_every_template_of_ml_training():
    assert set(refusal_text.REFUSALS) == set(refusals.TEMPLATES)
    assert len(refusal_text.REFUSALS) == len(refusals.TEMPLATES)


@pytest.mark.parametrize("template", refusals.TEMPLATES)
@pytest.mark.parametrize("table", [refusal_text.texts, log_text.texts], ids=["refusals", "run log"])
def test_each_refusal_is_recognised_as_its_own_template_with_its_values(table, template):
    values = _sample(template)
    known, found = table().match(template % values)
    assert known.template == template
    assert found == values


REFUSED = [
    (lambda: CausalLMConfig(effective_batch_size=130, micro_batch_size=4), refusals.MULTIPLE),
    (lambda: PromptingConfig(max_length=10), refusals.AT_LEAST),
    (lambda: CausalLMConfig(precision="fp8"), refusals.ONE_OF),
    (lambda: LabeledItem("n3-t1", "3", "fever", "Fever?", ["yes", "no"], "text", "maybe"), refusals.ITEM_LABEL),
]


@pytest.mark.parametrize("make, template", REFUSED)
def test_a_raised_refusal_is_shown_translated_with_its_values_as_ml_wrote_them(make, template):
    with pytest.raises(TrainingInputError) as caught:
        make()
    stored = str(caught.value)
    assert refusal_text.texts().render(stored, Marked) == f"<{template}>" % caught.value.values


def test_a_failed_run_s_error_translates_the_frame_and_the_refusal_and_keeps_ids_and_folders():
    """The executor stores log_text.REFUSED around a TrainingInputError, and a TrainingError as it is."""
    item = LabeledItem("n3-t1", "3", "fever", "Fever?", ["yes", "no"], "text", None)
    reason = str(TrainingInputError(refusals.NO_GOLD, count=2, item=repr(item.item_id)))
    stored = log_text.REFUSED % {"reason": reason}
    assert stored == "ml.training refused the run: 2 items have no gold label (e.g. 'n3-t1')"
    shown = log_text.texts().render(stored, Marked)
    assert shown == "<ml.training refused the run: <2 items have no gold label (e.g. 'n3-t1')>>"
    folder = "/srv/dsm/training/run-7-0a1b2c3d4e5f/checkpoint-last"
    stored = str(TrainingError(refusals.OTHER_DATA, folder=folder))
    shown = log_text.texts().render(stored, Marked)
    assert shown == f"<{folder} was written for other training data; use resume=False to start over>"


def test_a_text_no_template_matches_is_shown_as_stored():
    assert refusal_text.texts().render("CUDA out of memory", Marked) == "CUDA out of memory"
