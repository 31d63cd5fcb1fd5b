"""An evaluation's recommendation reason and its skipped-pair lines, stored in English (the API and
`python -m ml` read them as written), shown on its page in the reader's language.

The reason comes from ml.choosing, which knows nothing of Django: it keeps its words as English
templates with their values (`said`: {"message": template, "params": {...}}, nested where a value
is words too) beside the English `reason`. Its templates are listed here once more, marked with
gettext_noop, so that makemessages puts them in the catalogs (a test checks this list against
ml.choosing.TEMPLATES); a page translates each template by its msgid and fills in the values: the
figures as ml wrote them, a configuration's name with its method and explain variant by their
labels. A result stored before `said` existed shows its English `reason`.

The skipped-pair lines (webapp.pipeline.chunks.compute_pairs and webapp.evaluation.running write
them) and the evaluation's `error` (webapp.evaluation.evaluations and running; webapp.lifecycle)
are recognised by their templates (webapp.lib.known_text), listed here as those modules write them;
the ids, the configuration, a model's name and an exception's own words stay as stored.
"""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from webapp.evaluation.presentation import stored_label
from webapp.lib.known_text import Known, KnownTexts
from webapp.lifecycle import said

# ml.choosing.TEMPLATES, for the catalogs
CHOOSING = (
    gettext_noop("localisation"),
    gettext_noop("faithfulness"),
    gettext_noop("specificity"),
    gettext_noop("task-specificity"),
    gettext_noop("fewer than %(min_pairs)s pairs with gold evidence and a defined AUC per configuration"),
    gettext_noop("no gold evidence on these pairs"),
    gettext_noop("not measured (launch the evaluation with faithfulness)"),
    gettext_noop("no note has maps for two or more of its tasks"),
    gettext_noop("%(name)s: %(why)s"),
    gettext_noop("%(name)s (%(why)s)"),
    gettext_noop("Nothing here can show a configuration beats chance: %(why)s."),
    gettext_noop(
        "Nothing here can show a configuration beats chance: %(why)s. Task-specificity alone does not: a map can "
        "differ across tasks and still be noise."
    ),
    gettext_noop("%(name)s: %(passed)s of %(total)s do"),
    gettext_noop("No configuration beats chance on %(tests)s: %(counts)s."),
    gettext_noop("localisation: AUC %(auc)s (%(low)s-%(high)s)"),
    gettext_noop(
        "faithfulness: AOPC comprehensiveness %(aopc)s (%(low)s-%(high)s) against %(random)s for a random ranking"
    ),
    gettext_noop(
        "task-specificity: its maps of one note correlate %(spearman)s across tasks (Spearman; lower is more specific)"
    ),
    gettext_noop(
        "%(label)s: %(eligible)s of %(total)s configurations beat chance on %(tests)s; this one ranks best over "
        "%(used)s (%(parts)s)."
    ),
    gettext_noop("%(reason)s Not used: %(not_used)s."),
    gettext_noop("%(first)s and %(rest)s"),
    gettext_noop("%(first)s, %(rest)s"),
    gettext_noop("%(first)s; %(rest)s"),
)


def _render(words) -> str:
    if not isinstance(words, dict):
        return str(words)
    template = str(words.get("message", ""))
    params = words.get("params") or {}
    if not params:
        return gettext(template) if template else template
    values = {
        name: stored_label(value) if name == "label" and isinstance(value, str) else _render(value)
        for name, value in params.items()
    }
    try:
        return gettext(template) % values
    except (KeyError, ValueError, TypeError):
        return template % values


def reason(recommendation: dict) -> str:
    """The recommendation's reason in the active language (its English `reason` when stored without
    `said`)."""
    recommendation = recommendation or {}
    if isinstance(recommendation.get("said"), dict):
        return _render(recommendation["said"])
    return recommendation.get("reason", "")


def measurements(names) -> list[str]:
    """The measurements' names ("localisation", ...) in the active language."""
    return [gettext(name) if name in CHOOSING else name for name in names or []]


def not_used(recommendation: dict) -> list[tuple[str, str]]:
    """[(measurement, why)] in the active language (as stored for a result without `not_used_said`)."""
    recommendation = recommendation or {}
    said = recommendation.get("not_used_said")
    if isinstance(said, dict):
        return [(measurements([name])[0], _render(why)) for name, why in said.items()]
    return [(measurements([name])[0], why) for name, why in (recommendation.get("not_used") or {}).items()]


# ---------------------------------------------------------------- skipped pairs

SKIPPED = (
    Known(
        gettext_noop("Note %(note)s x task %(task)s skipped for %(config)s (%(reason)s)."), words=("config", "reason")
    ),
    Known(gettext_noop("Note %(note)s x task %(task)s skipped (%(reason)s)."), words=("reason",)),
    Known(
        gettext_noop(
            "Note %(note)s x task %(task)s: no faithfulness for %(config)s (the stored map is not over this "
            "prompt's tokens: the note changed since)."
        ),
        words=("config",),
    ),
    gettext_noop("Note %(note)s x task %(task)s: no faithfulness (%(reason)s)."),
    gettext_noop("the note or the task was deleted"),
    gettext_noop("invalid input"),
)


class _Configurations(KnownTexts):
    """The skipped lines' table; a configuration's name (any value not in the table) by its labels."""

    def render(self, text, translation, _depth: int = 0):
        out = super().render(text, translation, _depth)
        return stored_label(out) if _depth and out == text and " / " in text else out


@cache
def skipped_texts() -> KnownTexts:
    return _Configurations(SKIPPED)


def skipped(line):
    """A skipped pair's line in the active language; as stored when not recognised."""
    return skipped_texts().render(line, translation)


# ---------------------------------------------------------------- the evaluation's error

ERRORS = (
    gettext_noop(
        "Stopped by a temporary problem (%(type)s) that did not go away. Maps already stored are kept: press Resume."
    ),
    gettext_noop(
        "The evaluation took longer than the task time limit. Maps already stored are kept: press Resume to continue."
    ),
    gettext_noop(
        "Unexpected error (%(type)s); the worker log has the details. Maps already stored are kept: Resume "
        "continues from there."
    ),
    gettext_noop("Could not load model %(model)s (%(type)s): %(reason)s"),
    gettext_noop(
        "%(method)s needs a worker process that has not computed AttnLRP yet (lxt's patches stay in a process for "
        "good). Restart the relevance worker, then press Resume: the maps already stored are kept."
    ),
    *said.LIFECYCLE,
)


@cache
def error_texts() -> KnownTexts:
    return KnownTexts(ERRORS)


def error(text):
    """The evaluation's stored error in the active language; else the relevance jobs' shared texts (a
    queue that could not be reached, a model no worker could load); else as stored."""
    if not isinstance(text, str) or not text:
        return text
    if error_texts().recognises(text):
        return error_texts().render(text, translation)
    from webapp.pipeline.error_text import error_words

    return error_words(text)
