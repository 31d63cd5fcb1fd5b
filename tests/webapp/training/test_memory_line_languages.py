"""The launch form's memory line, which ml.training.memory writes in English, is shown in the reader's
language (webapp.training.estimates.MEMORY), its figures and the change it suggests as ml wrote them.
The page test reads the compiled catalogs."""

import re

import pytest
from django.urls import reverse
from django.utils import translation

from ml.training import memory
from tests.webapp.training.test_refusal_text import Marked
from tests.webapp.training.test_views_run_new_estimate import three_steps  # noqa: F401 (fixture)
from tests.webapp.training.test_views_run_new_memory import tiny_folder  # noqa: F401 (fixture)
from webapp.training import estimates

PLACEHOLDER = re.compile(r"%\((\w+)\)s")


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


def test_the_table_lists_every_template_of_the_memory_line():
    listed = [known.template for known in estimates.MEMORY.known]
    assert sorted(listed) == sorted(memory.SUMMARY_TEMPLATES)


@pytest.mark.parametrize("template", memory.SUMMARY_TEMPLATES)
def test_each_template_is_recognised_as_itself(template):
    values = {name: f"v{n}" for n, name in enumerate(dict.fromkeys(PLACEHOLDER.findall(template)))}
    known, found = estimates.MEMORY.match(template % values)
    assert (known.template, found) == (template, values)


def test_a_line_that_does_not_fit_translates_the_change_and_keeps_ml_s_figures():
    change = memory.SUGGESTED % {"change": memory.MORE_GPUS_FSDP % {"gpus": 4}, "total": 61.2}
    line = memory.DOES_NOT_FIT % {"total": 140.3, "gpu": "141", "suggestion": change}
    assert line == "memory: 140.3 GB per GPU of 141: does not fit: 4 GPUs with FSDP: 61.2 GB per GPU"
    shown = estimates.MEMORY.render(line, Marked)
    assert shown == "<memory: 140.3 GB per GPU of 141: does not fit: <<4 GPUs with FSDP>: 61.2 GB per GPU>>"


@pytest.mark.parametrize(
    "lang, fits, does_not_fit",
    [("it", "GB per GPU su 141: ci sta", "non ci sta; proposta: "), ("es", "GB por GPU de 141: cabe", "no cabe")],
)
def test_the_launch_form_s_memory_line_is_in_the_reader_s_language(
    client,
    three_steps,  # noqa: F811
    settings,
    tiny_folder,  # noqa: F811
    lang,
    fits,
    does_not_fit,
):
    settings.TRAINING_GPU_MEMORY_GB = 141
    answer = client.post(
        reverse("training:run_new"), three_steps, headers={"HX-Request": "true", "Accept-Language": lang}
    )
    html = answer.content.decode()
    assert "memoria: " in html and fits in html and "GB per GPU of" not in html
    settings.TRAINING_GPU_MEMORY_GB = 1.0
    answer = client.post(
        reverse("training:run_new"), three_steps, headers={"HX-Request": "true", "Accept-Language": lang}
    )
    html = answer.content.decode()
    assert does_not_fit in html and "does not fit" not in html
