"""The note page's view controls and side column, written once per selection from stencils
(webapp.review.templatetags.review_page: note_controls, note_aside): the markup the partials write
with the request's own context, for the default selection, custom sliders, another task and model,
Italian, and a second note of the same selection (its own address, never the first's)."""

from django.template.loader import get_template
from django.urls import reverse
from django.utils import translation

from webapp.accounts.models import Preference
from webapp.corpus.models import Note
from webapp.review.templatetags.review_page import note_aside, note_controls, profile_options

from .fabricate import TEXT, add_map, query


def page_context(client, note, params, language="en"):
    response = client.get(reverse("review:note", args=[note.corpus_id, note.pk]), params)
    assert response.status_code == 200
    assert response["Content-Language"] == language
    return response, next(c for c in response.context if "panel" in c).flatten()


def from_the_partials(context):
    """What the two partials write for this context, rendered as they are (no stencil)."""
    controls = get_template("review/note.html#controls").render(context).strip()
    aside_context = {**context, "profile_options": profile_options(context["profiles"], context["sel"].profile)}
    return controls, get_template("review/note.html#aside").render(aside_context).strip()


CUSTOM = {"k": 3, "sigma": 1.5, "lower": 0.1, "upper": 0.55, "trim": "false"}  # sliders off the profile


def test_the_stencils_write_what_the_partials_write(client, clinician, maps, note, tasks, base, sharp):
    for language in ("en", "it", "es", "en"):  # every selection in each language, in one process
        Preference.objects.update_or_create(user=clinician, defaults={"language": language})
        client.force_login(clinician)  # the language is read at sign-in
        for changes in ({}, CUSTOM, {"k": 5}):
            for task in (tasks["heart"], tasks["pacemaker"]):
                response, context = page_context(client, note, {**query(task, base, sharp), **changes}, language)
                with translation.override(language):  # as the page was written
                    controls, aside = from_the_partials(context)
                    assert str(note_controls(context)) == controls
                    assert str(note_aside(context)) == aside
                page = response.content.decode()
                assert controls in page and aside in page and "\x00" not in page


def test_a_second_note_of_the_selection_gets_its_own_address(client, clinician, maps, note, tasks, base, sharp):
    other = Note.objects.create(corpus=note.corpus, external_id="n2", text=TEXT)
    add_map(other, tasks["heart"], base, {"130": 0.9})
    add_map(other, tasks["pacemaker"], base, {"Pacemaker": 1.0})
    client.force_login(clinician)
    params = query(tasks["heart"], base, sharp)
    first = page_context(client, note, params)[0].content.decode()
    response, context = page_context(client, other, params)
    second = response.content.decode()
    other_url = reverse("review:note", args=[other.corpus_id, other.pk])
    assert f'action="{other_url}"' in second and f'hx-get="{other_url}"' in second
    assert f'action="{reverse("review:note", args=[note.corpus_id, note.pk])}"' not in second
    assert str(note_controls(context)) == from_the_partials(context)[0]
    assert first != second
