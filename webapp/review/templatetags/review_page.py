"""Pieces of the note page written once: the selection's hidden fields once per request however
many forms repeat them, the colour scale and the keyboard help once per process and language,
the peak-profile menu's labels once per profile and language."""

import threading

from django import template
from django.template.defaultfilters import floatformat
from django.template.loader import get_template
from django.urls import get_script_prefix
from django.utils.formats import localize
from django.utils.html import conditional_escape, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

from webapp.accounts.stencil import Stencil, stand_in
from webapp.lib import rendering

register = template.Library()


@register.simple_tag(takes_context=True)
def selection_fields(context):
    """The hidden fields of the page's selection and round (what the template
    review/_selection_fields.html wrote), written once per selection object (one a request) and
    repeated in every form that sends the selection back."""
    sel, rnd = context["sel"], context.get("round")
    kept = sel.__dict__.setdefault("_fields_html", {})
    key = (getattr(rnd, "pk", None), sel.query())  # sel.query(): what the fields are made of
    if key not in kept:
        kept[key] = fields_html(sel, rnd)
    return kept[key]


def _pk(obj) -> str:
    return "" if obj is None else str(obj.pk)


def _number(value) -> str:
    return str(localize(value, use_l10n=False))  # |unlocalize


def fields_html(sel, rnd=None) -> str:
    """The selection's hidden fields, in Python (a template render a request was the larger part
    of writing them); tests/webapp/review/test_selection_fields.py compares them with that
    template, kept there. Ends in a newline, as the template's file did."""
    p = sel.params
    fields = [
        ("task", _pk(sel.task)), ("model", _pk(sel.model)), ("method", sel.method), ("config", sel.config),
        ("template", sel.template), ("profile", _pk(sel.profile)), ("k", _number(p.kernel_size)),
        ("sigma", _number(p.sigma)), ("lower", _number(p.lower)), ("upper", _number(p.upper)),
        ("trim", "true" if p.trim else "false"), ("strict", "true" if p.strict else "false"),
    ]  # fmt: skip
    if rnd:
        fields.append(("round", _pk(rnd)))
    return format_html_join("", '<input type="hidden" name="{}" value="{}">', fields) + mark_safe("\n")


_legends: dict[tuple, str] = {}
_lock = threading.Lock()


@register.simple_tag(takes_context=True)
def legend_html(context, peaks=False):
    """review/_legend.html (the colour scale: the same on every page of a language), rendered once
    per process, language and `peaks`."""
    key = (get_language(), bool(peaks), context.use_l10n)
    html = _legends.get(key)
    if html is None:
        html = get_template("review/_legend.html").render({"legend": rendering.legend(), "peaks": peaks})
        with _lock:
            _legends[key] = html
    return html


_helps: dict[tuple, str] = {}


@register.simple_tag(takes_context=True)
def help_html(context):
    """review/_help.html (the keyboard help of the note page: words only), rendered once per
    process and language."""
    key = (get_language(), context.use_l10n)
    html = _helps.get(key)
    if html is None:
        html = get_template("review/_help.html").render({})
        with _lock:
            _helps[key] = html
    return html


_profile_labels: dict[tuple, str] = {}


@register.simple_tag
def profile_options(profiles, shown):
    """The peak-profile menu's `<option>`s: "name vN (k, σ, lower/upper)", the numbers as
    floatformat:2 writes them in the reader's language. Each label is written once per process,
    language and the values it shows (three floatformats a profile were a tenth of the note
    page's template)."""
    language, shown_pk = get_language(), getattr(shown, "pk", None)
    options = []
    for p in profiles:
        key = (language, str(p), p.kernel_size, p.sigma, p.lower, p.upper)
        label = _profile_labels.get(key)
        if label is None:
            numbers = [floatformat(value, 2) for value in (p.sigma, p.lower, p.upper)]
            label = conditional_escape(f"{p} ({p.kernel_size}, {numbers[0]}, {numbers[1]}/{numbers[2]})")
            with _lock:
                _profile_labels[key] = label
        selected = " selected" if p.pk == shown_pk else ""
        options.append(f'<option value="{p.pk}"{selected}>{label}</option>')
    return mark_safe("".join(options))


# The note page's view controls and side column (templates/review/note.html's partials "controls"
# and "aside"): written once per process and key, the key holding everything they show but the
# note's address (and the side's profile menu), given as stand-ins. Keys are selections, so many
# are kept but not without end.
_CONTROLS = Stencil("review/note.html#controls", limit=2000)
_ASIDE = Stencil("review/note.html#aside", limit=2000)
_NOTE_URL, _PROFILE_OPTIONS = stand_in("note-url"), stand_in("profile-options")


def _selection_key(sel) -> tuple:
    """Everything of the selection the two partials show (with the reader's language)."""
    profile = sel.profile
    return (
        get_language(),
        get_script_prefix(),
        sel.query(),  # task, model, method, template, profile, configuration, custom parameters
        sel.config,
        sel.params,
        None if profile is None else (profile.pk, str(profile)),
        tuple((t.pk, t.description) for t in sel.tasks),
        tuple((m.pk, m.name) for m in sel.models),
        tuple(sel.method_options),
        tuple(sel.templates),
        tuple(tuple(c) for c in sel.configs),
        None if sel.model is None else sel.model.name,
    )


@register.simple_tag(takes_context=True)
def note_controls(context):
    sel = context["sel"]
    return _CONTROLS.html(
        _selection_key(sel),
        lambda: {"sel": sel, "note_url": mark_safe(_NOTE_URL)},
        {_NOTE_URL: conditional_escape(context["note_url"])},
    )


@register.simple_tag(takes_context=True)
def note_aside(context):
    sel, corpus = context["sel"], context["corpus"]
    return _ASIDE.html(
        (corpus.pk, *_selection_key(sel)),
        lambda: {
            "sel": sel,
            "corpus": corpus,
            "note_url": mark_safe(_NOTE_URL),
            "profile_options": mark_safe(_PROFILE_OPTIONS),
        },  # fmt: skip
        {
            _NOTE_URL: conditional_escape(context["note_url"]),
            _PROFILE_OPTIONS: profile_options(context["profiles"], sel.profile),
        },
    )
