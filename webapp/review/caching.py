"""What the note panel would otherwise rebuild on every request, kept in Django's cache (Redis
when REDIS_URL is set, so every web worker shares it; the process's memory in the embedded
default): the part of a window that no reviewer's decision changes.

Kept (`PanelBase`): the peaks' spans and whether the map fits, the map's reach, the token/peak
HTML of the window with a placeholder where each peak's class goes (`@@peak-N@@`, filled with
the reviewer's state per request), the boundary choices of the window's peaks, the specificity
figures, the sentence view, the window. Not kept, read per request: the decisions (whose states
fill the placeholders and the rows), the neighbours, the gold labels.

The key names everything the base depends on, so nothing needs deleting when it changes:
- the note's id and a digest of its text (a missed identifier rewrites it);
- every map of the note under the selection's model version, method, template and
  configuration: id, offsets row and a digest of its scores (ScoresDigest, computed by the
  database; a recomputed map is stored in place with new scores), which covers this task's map
  and the other tasks' maps the specificity reads;
- the peak parameters (peakstore.params_key: a moved slider or an edited profile is a new key);
- the task, model version, method, template, configuration, the window or peak asked for,
  the view, the chosen sentence and its unit;
- the gold evidence spans (read per request; they are drawn in the HTML);
- the language of the request (the HTML's markers where a map stops are worded in it).
Keys are digests: no note text and no identifier of a patient is in a key. An entry lives
TIMEOUT seconds; a changed input makes a new key and the old entry ages out.

One query finds the maps' fingerprints (`fingerprint`); a hit costs
that query and a cache read instead of decoding the map, finding the other tasks' peaks and
rendering the window.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from django.core.cache import cache
from django.utils.translation import get_language

from webapp.review import peakstore

TIMEOUT = 3600  # seconds an entry is kept
VERSION = 1  # bump when PanelBase changes shape
PLACEHOLDER = "@@peak-{}@@"


@dataclass
class PanelBase:
    """The decision-free part of one window of the note panel (module docstring)."""

    found: bool
    fits: bool
    n_tokens: int
    spans: list  # every peak of the note: [(start, end), ...]
    html: str  # the window, PLACEHOLDER where each shown peak's class goes
    window: object  # webapp.lib.windows.Window
    shown: range
    select: int | None
    reach: object | None
    reach_window: int | None
    specificity: object | None
    view: str
    sentences: object | None
    options: dict = field(default_factory=dict)  # peak index -> (start choices, end choices), none selected


def _digest(parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def fingerprint(note, selection) -> list | None:
    """[(task id, map id, offsets id, scores digest), ...] of the note's maps under the
    selection (one query), or None when the selection is not ready."""
    if not selection.ready:
        return None
    rows = (
        selection.maps()
        .filter(note=note, model_version=selection.model)
        .annotate(scores=peakstore.ScoresDigest("data"))
        .order_by("task_id")
        .values_list("task_id", "pk", "tokens_id", "scores")
    )
    return [list(row) for row in rows]


def key_for(note, selection, maps, gold, request: dict) -> str:
    parts = {
        "note": note.pk,
        "text": hashlib.sha256(note.text.encode()).hexdigest(),
        "maps": maps,
        "params": peakstore.params_key(selection.params),
        "task": selection.task.pk if selection.task else None,
        "model": selection.model.pk if selection.model else None,
        "method": selection.method,
        "template": selection.template,
        "config": selection.config,
        "gold": gold,
        "request": request,
        "language": get_language(),  # the HTML holds the map's edge markers in the reader's language
    }
    return f"review:panel:{VERSION}:{_digest(parts)}"


def get(key: str) -> PanelBase | None:
    return cache.get(key)


def put(key: str, base: PanelBase) -> None:
    cache.set(key, base, TIMEOUT)


def fill(html: str, classes: dict[int, str]) -> str:
    """The window's HTML with each shown peak's class in its placeholder."""
    for index, css in classes.items():
        html = html.replace(PLACEHOLDER.format(index), css)
    return html
