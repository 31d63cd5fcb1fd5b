"""A dataset's stored statistics, shaped for its page: histograms as bars (percent of the
largest bin), counts per task sorted, the funnel from maps to examples, and the builder's
accounting of every note-task pair (kept or excluded by reason; webapp.datasets.building).
Nothing is recomputed here: a figure the build did not store is not shown.

`SharedPeaks` is the one counter the build feeds from here (webapp.datasets.building): examples
whose masked span was a peak for two or more tasks of its note, and those whose span was a peak
for EVERY task of the note that had a map (two or more): such a peak says little about any one
task (ml.specificity), e.g. the patient's age peaking for heart rate and chest pain alike.
"""

from collections import OrderedDict

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop


class SharedPeaks:
    """Counts fed by the build: `pair(note_id)` for every (note, task) map whose peaks were found
    (they come note by note), `example(note_id, task_ids)` for every example written. Memory: the
    task counts of the last few notes only (examples of a note are written after its maps)."""

    KEEP_NOTES = 4

    def __init__(self):
        self.tasks_of: OrderedDict = OrderedDict()
        self.shared = 0  # examples whose span peaked for 2+ tasks of the note
        self.every_task = 0  # ... for every task of the note with a map (2+)

    def pair(self, note_id) -> None:
        self.tasks_of[note_id] = self.tasks_of.get(note_id, 0) + 1
        self.tasks_of.move_to_end(note_id)
        while len(self.tasks_of) > self.KEEP_NOTES:
            self.tasks_of.popitem(last=False)

    def example(self, note_id, task_ids) -> None:
        if len(task_ids) < 2:
            return
        self.shared += 1
        if len(set(task_ids)) >= self.tasks_of.get(note_id, 0):
            self.every_task += 1

    def result(self) -> dict:
        return {"examples_shared_across_tasks": self.shared, "examples_same_peak_every_task": self.every_task}


def present(stats: dict) -> dict:
    if not stats:
        return {}
    chars, words = stats.get("span_chars", {}), stats.get("span_words", {})
    per_task = sorted(stats.get("examples_per_task", {}).items(), key=lambda kv: (-kv[1], kv[0]))
    return {
        "funnel": [
            (_("Relevance maps read (after held-out tasks and validation notes)"), stats.get("maps", 0)),
            (_("Maps skipped (note changed since relevance)"), stats.get("maps_not_fitting_note", 0)),
            (_("Note-task pairs"), stats.get("pairs", 0)),
            (_("Pairs with two or more peaks"), stats.get("pairs_two_or_more_peaks", 0)),
            (_("Pairs used by this mode"), stats.get("pairs_used", 0)),
            (_("Peaks rejected by review"), stats.get("peaks_rejected_by_review", 0)),
            (_("Notes read"), stats.get("notes", 0)),
            (_("Notes used"), stats.get("notes_used", 0)),
            (_("Examples before de-duplication"), stats.get("candidates", 0)),
            (_("Duplicates removed"), stats.get("duplicates_removed", 0)),
            (_("Examples"), stats.get("examples", 0)),
            *[
                (label, stats[key])
                for key, label in (
                    ("examples_shared_across_tasks", _("Examples whose span was a peak for 2+ tasks of its note")),
                    (
                        "examples_same_peak_every_task",
                        _("… for every task of its note (says little about any one task)"),
                    ),
                )
                if key in stats  # builds before this count was kept do not show it
            ],
        ],
        "groups_per_pair": bars(stats.get("groups_per_pair", [])),
        "span_chars": bars(chars.get("histogram", [])),
        "span_chars_mean": chars.get("mean"),
        "span_chars_max": chars.get("max"),
        "span_words": bars(words.get("histogram", [])),
        "per_task": bars(per_task),
        "seconds": stats.get("seconds"),
        "accounting": accounting(stats.get("pairs_accounting")),
    }


# The reasons a build stores for the pairs it excluded (webapp.datasets.building, _Tally.accounting:
# English, also in the API's stats and the export manifest), shown in the reader's language; a
# reason not recognised is shown as stored
EXCLUSION_REASONS = frozenset(
    (
        gettext_noop("Held-out task"),
        gettext_noop("Note held back by a validation set"),
        gettext_noop("Map does not fit its note (note changed since relevance)"),
        gettext_noop("Not exactly one peak"),
        gettext_noop("Fewer than two peaks"),
        gettext_noop("Not exactly one peak once review rejections are removed"),
        gettext_noop("Fewer than two peaks once review rejections are removed"),
        gettext_noop("Nothing to mask (peaks only whitespace)"),
        gettext_noop("Nothing to mask (peaks only whitespace, or no room for a random span)"),
        gettext_noop("Every example a duplicate of an earlier note's"),
    )
)


def exclusion_words(label: str) -> str:
    """A stored exclusion reason in the active language."""
    return _(label) if label in EXCLUSION_REASONS else label


def accounting(stored: dict | None) -> dict | None:
    """The pair accounting as stored by the build: read, kept, the excluded reasons (all of
    them, zeros included, so the table reads the same for every build; in the reader's language)
    and whether it adds up. None for a version built before the builder kept it."""
    if not stored:
        return None
    excluded = [(exclusion_words(label), count) for _reason, label, count in stored.get("excluded", [])]
    total = stored.get("kept", 0) + sum(count for _, count in excluded)
    return {
        "read": stored.get("read", 0),
        "kept": stored.get("kept", 0),
        "excluded": excluded,
        "excluded_total": total - stored.get("kept", 0),
        "adds_up": total == stored.get("read", 0),
    }


def bars(pairs) -> list[dict]:
    """[(label, count), ...] -> [{"label", "count", "percent"}, ...], percent of the largest count."""
    top = max((count for _, count in pairs), default=0)
    return [
        {"label": label, "count": count, "percent": round(100 * count / top, 1) if top else 0} for label, count in pairs
    ]
