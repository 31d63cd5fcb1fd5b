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

The task-specificity of every task of a note is computed at once and kept under the note's
fingerprint (`specificities`): a reviewer going through a note's tasks one after the other (the
queue's order) reads the note's maps and finds their peaks once, not once per task.

Two lookups every review answer made are kept under a generation token (`generation`), renewed
by every save or delete of the rows they read (connected in the app's ready), now and again
after the transaction commits, so the next request reads them afresh (as webapp.projects.roles
keeps a user's roles); each value is stored with the token it was read under, so a lookup is one
round trip to the cache for both:
- `guideline`: the guideline version a task's reviewers read (webapp.corpus.tasks.current_guideline);
- `any_round`: whether a review round of a map's model version, method, template and
  configuration exists at all; a decision outside every round then skips the rounds' claim
  bookkeeping (webapp.review.rounds.sync_claims) and its queries.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db import transaction
from django.utils.translation import get_language

from webapp.db.prepared import Prepared
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
    values = {"method": selection.method, "template": selection.template, "config": selection.config}
    rows = FINGERPRINT.rows(None, note_id=note.pk, model_id=selection.model.pk, **values)
    return [list(row) for row in rows]


def _fingerprint(_shape, *, note_id, model_id, method, template, config):
    from webapp.pipeline.models import RelevanceMap

    return (
        RelevanceMap.objects.for_config(method, template, config)
        .filter(note_id=note_id, model_version_id=model_id)
        .annotate(scores=peakstore.ScoresDigest("data"))
        .order_by("task_id")
        .values_list("task_id", "pk", "tokens_id", "scores")
    )


FINGERPRINT = Prepared(_fingerprint)


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


SPECIFICITY_VERSION = 1


def specificity_key(note, selection, maps) -> str:
    """The key of the note's specificities under `maps` (its fingerprint) and the parameters."""
    parts = {
        "note": note.pk,
        "text": hashlib.sha256(note.text.encode()).hexdigest(),
        "maps": maps,
        "params": peakstore.params_key(selection.params),
        "model": selection.model.pk,
        "config": [selection.method, selection.template, selection.config],
    }
    return f"review:specificity:{SPECIFICITY_VERSION}:{_digest(parts)}"


def specificities(key: str, compute) -> dict:
    """{task id: Specificity or None} of a note's tasks, from the cache or `compute()`."""
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, TIMEOUT)
    return found


# ---------------------------------------------------------------- kept under a generation token

GENERATION_KEY = "review:generation:{}"


def generation(name: str) -> str:
    """The current token of `name` (set when missing; `add`: two requests that race keep the first)."""
    key = GENERATION_KEY.format(name)
    token = cache.get(key)
    if token is None:
        cache.add(key, secrets.token_hex(8), None)
        token = cache.get(key)
    return token


def renew(name: str, *_args, **_kwargs) -> None:
    """What `name` keeps changed: read afresh from now on, and again once the transaction commits
    (a reader that raced the change stored what it read under the old token, which no one reads)."""
    key = GENERATION_KEY.format(name)

    def new_token():
        cache.set(key, secrets.token_hex(8), None)

    new_token()
    transaction.on_commit(new_token)


def kept(name: str, parts, read):
    """`read()`, kept under `parts` (ids only) until `name` is renewed. The value is stored with
    the generation token it was read under, so the token and the value come back in one round
    trip, and a value read under an older token is read again."""
    token_key, value_key = GENERATION_KEY.format(name), f"review:{name}:{_digest(parts)}"
    found = cache.get_many([token_key, value_key])
    token = found.get(token_key) or generation(name)
    entry = found.get(value_key)
    if entry is not None and entry[0] == token:
        return entry[1]
    value = read()
    cache.set(value_key, (token, value), TIMEOUT)
    return value


def guideline(task, project_id):
    """webapp.corpus.tasks.current_guideline, kept until a guideline version is saved or deleted."""
    from webapp.corpus.tasks import current_guideline

    if task is None:
        return None
    return kept("guideline", [task.pk, project_id], lambda: current_guideline(task, project_id))


def any_round(model_id: int, method: str, template: str, config_key: str) -> bool:
    """Whether a review round of this map (model version, method, template, configuration) exists,
    kept until a round is saved or deleted."""
    from webapp.review.models import ReviewRound

    def read():
        rounds = ReviewRound.objects.filter(model_version_id=model_id, method=method, template=template)
        return rounds.filter(config_key=config_key).exists()

    return kept("rounds", [model_id, method, template, config_key], read)
