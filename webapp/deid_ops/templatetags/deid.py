"""{% deid_card corpus %}: a corpus page's de-identification card (whether it is de-identified,
from what, the versions made from it, its jobs, the launch button), without the corpus app
importing this one; an identifier type and a job's error in the reader's language."""

from django import template
from django.urls import get_script_prefix
from django.utils.html import format_html
from django.utils.translation import get_language

from ml.deid.types import TYPES as IDENTIFIER_TYPES
from webapp.accounts.stencil import CSRF_INPUT, CSRF_TOKEN, Stencil, csrf_input, stand_in
from webapp.deid import identifier_types
from webapp.deid_ops import jobs
from webapp.projects.roles import Capability, has_capability

register = template.Library()


@register.inclusion_tag("deid/corpus_card.html", takes_context=True)
def deid_card(context, corpus):
    user = context["request"].user
    return {
        "corpus": corpus,
        "versions": corpus.deidentified_versions.order_by("name"),
        "jobs": jobs.recent(corpus),
        "may_launch": has_capability(user, Capability.LAUNCH, corpus.project_id) and not corpus.deidentified,
        "csrf_token": context.get("csrf_token"),
    }


_MISSED_DIALOG = Stencil("deid/_missed_dialog.html")
_NOTE_ID = stand_in("note-id")


@register.simple_tag(takes_context=True)
def missed_dialog(context, note):
    """The review page's missed-identifier dialog (deid/_missed_dialog.html), written once per
    process, language and script prefix (webapp.accounts.stencil); the note's id and the request's
    CSRF token put in each time."""
    return _MISSED_DIALOG.html(
        (get_language(), get_script_prefix()),
        lambda: {"identifier_types": IDENTIFIER_TYPES, "note": {"pk": _NOTE_ID}, "csrf_token": CSRF_TOKEN},
        {_NOTE_ID: str(int(note.pk)), CSRF_INPUT: csrf_input(context)},
    )


@register.filter
def deid_error(text):
    """A de-identification job's or scan's stored error in the reader's language
    (webapp.deid_ops.error_text): a policy's own words and an error's type as stored."""
    from webapp.deid_ops import error_text

    return error_text.shown(text)


@register.filter
def identifier_label(code):
    """An identifier type's code ("NHS_NUMBER") as its label in the reader's language
    (webapp.deid.identifier_types); a code it does not know as stored."""
    return identifier_types.label(code)


@register.simple_tag
def identifier_type(code, code_in="text"):
    """An identifier type for a page: its label with the code beside it in small code text
    (`code_in="title"`: in the title attribute, for a line of counts); an unknown code as stored."""
    label = identifier_types.label(code)
    if label == code:
        return format_html("<code>{}</code>", code)
    if code_in == "title":
        return format_html('<span class="identifier-type" title="{}">{}</span>', code, label)
    return format_html('{} <small><code class="identifier-type">{}</code></small>', label, code)
