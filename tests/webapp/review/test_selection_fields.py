"""The selection's hidden fields are written in Python (review_page.fields_html, issue 41: a
template render a request). They must be what the template wrote (selection_fields_reference.html,
the template as it was): every kind of selection, with and without a round, in every language."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from django.template import engines
from django.utils import translation
from django.utils.safestring import SafeData

from ml.peaks.params import PeakParams
from webapp.review.templatetags.review_page import fields_html

REFERENCE = engines["django"].from_string(
    (Path(__file__).parent / "selection_fields_reference.html").read_text(encoding="utf-8")
)


def selection(**changes):
    values = {
        "task": SimpleNamespace(pk=3), "model": SimpleNamespace(pk=5), "method": "attnlrp", "config": "c-1",
        "template": 'en "<quoted>" & more', "profile": SimpleNamespace(pk=2),
        "params": PeakParams(kernel_size=5, sigma=0.75, lower=0.15, upper=0.45, strict=True, trim=False),
    }  # fmt: skip
    return SimpleNamespace(**{**values, **changes})


SELECTIONS = [
    selection(),
    selection(task=None, model=None, profile=None, params=PeakParams()),
    selection(params=PeakParams(sigma=1.0, lower=0.0, upper=1.0)),
    selection(method=None, config=""),
]


@pytest.mark.parametrize("code", ["en", "it", "es"])
@pytest.mark.parametrize("sel", SELECTIONS)
@pytest.mark.parametrize("rnd", [None, SimpleNamespace(pk=9)])
def test_the_fields_written_in_python_are_what_the_template_wrote(code, sel, rnd):
    with translation.override(code):
        expected = REFERENCE.render({"sel": sel, "round": rnd})
        written = fields_html(sel, rnd)
    assert isinstance(written, SafeData)  # a template writes it as it is
    assert written == expected


@pytest.mark.django_db
@pytest.mark.parametrize(
    "given",
    [{}, {"profile": "1"}, {"k": "5"}, {"lower": "0.9"}, {"trim": "false"}, {"sigma": "9"}, {"upper": ""}],
)
@pytest.mark.parametrize("thresholds", [(0.2, 0.4), (0.5, 0.5)])
def test_a_query_without_sliders_takes_the_profiles_setting_as_the_form_does(given, thresholds):
    from django.http import QueryDict

    from webapp.pipeline.models import PeakProfile
    from webapp.review import selection
    from webapp.review.forms import ParamsForm

    lower, upper = thresholds
    profile = PeakProfile(name="p", version=1, kernel_size=3, sigma=1.0, lower=lower, upper=upper)
    query = QueryDict(mutable=True)
    query.update(given)
    errors, form_errors = [], []
    form = ParamsForm(query, base=profile.params)
    expected = form.params() if form.is_valid() else profile.params
    form_errors = [", ".join(m) for m in form.errors.values()]
    assert selection._params(query, profile, errors) == expected
    assert errors == form_errors
