"""The note page's peak-profile menu, written in Python with each label kept per language
(webapp.review.templatetags.review_page.profile_options): the markup the template's loop wrote,
numbers as floatformat:2 writes them in each language, names escaped, the shown profile selected."""

import pytest
from django.template import engines
from django.utils import translation

from webapp.pipeline.models import PeakProfile
from webapp.review.templatetags.review_page import profile_options

# what templates/review/note.html's loop wrote before the menu moved to Python
LOOP = engines["django"].from_string(
    '{% for p in profiles %}<option value="{{ p.pk }}"{% if p.pk == sel.profile.pk %} selected{% endif %}>'
    "{{ p }} ({{ p.kernel_size }}, {{ p.sigma|floatformat:2 }}, {{ p.lower|floatformat:2 }}/"
    "{{ p.upper|floatformat:2 }})</option>{% endfor %}"
)


def profiles():
    return [
        PeakProfile(pk=3, name="paper", version=1, kernel_size=5, sigma=1.0, lower=0.2, upper=0.4),
        PeakProfile(pk=8, name="ward <a&b>", version=12, kernel_size=3, sigma=0.25, lower=0.05, upper=0.333333),
        PeakProfile(pk=11, name="tight", version=2, kernel_size=1, sigma=2.75, lower=0.0, upper=1.0),
    ]


@pytest.mark.parametrize("language", ["en", "it", "es"])
@pytest.mark.parametrize("shown", [None, 8])
def test_the_menu_is_what_the_templates_loop_wrote(language, shown):
    menu = profiles()
    selected = next((p for p in menu if p.pk == shown), None)
    with translation.override(language):
        expected = LOOP.render({"profiles": menu, "sel": {"profile": selected}})
        assert profile_options(menu, selected) == expected
        assert profile_options(menu, selected) == expected  # the kept labels
    assert "&lt;a&amp;b&gt;" in expected
    if language == "it":
        assert "0,33" in expected


def test_a_changed_profile_is_labelled_anew():
    menu = profiles()
    before = profile_options(menu, None)
    menu[0].sigma = 1.5
    after = profile_options(menu, None)
    assert "1.00" in before and "1.50" in after and "1.00, 0.20" not in after
