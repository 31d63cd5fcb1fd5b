"""A training run's log lines and its `error`, stored in English (the API, the log files and the
management commands read them as written) and shown on the run's page in the reader's language
(webapp.lib.known_text): the webapp's writers format the templates below, so what is stored and
what is recognised cannot drift apart; the texts other layers write (ml.training's progress
messages, webapp.lifecycle's recovery and retries, workers.runner) are listed as they write them,
ml.training's refusals in webapp.training.refusal_text. Ids, counts, steps, names, versions and an
exception's own words stay as stored; a line no template matches (an old row, an error of ml in its
own words) is shown as stored.
"""

from functools import cache

from django.utils import translation
from django.utils.translation import gettext_noop

from webapp.integrations import mlflow_log
from webapp.lib import known_text
from webapp.lib.known_text import Known, KnownTexts
from webapp.lifecycle import said
from webapp.training import refusal_text

# ---------------------------------------------------------------- written by webapp.training

LAUNCHED = gettext_noop("Launched: %(kind)s, model %(model)s.")
LAUNCHED_PRESET = gettext_noop("Launched: %(kind)s, preset %(preset)s, model %(model)s.")
CANCEL_REQUESTED = gettext_noop("Cancel requested.")
CANCELLED = gettext_noop("Cancelled.")
RESUME_REQUESTED = gettext_noop("Resume requested.")
RESUME_FROM = gettext_noop("Resume requested from the checkpoint of step %(step)s.")
ATTEMPT_HERE = gettext_noop("Attempt %(attempt)s started on this process.")
ATTEMPT_ON = gettext_noop("Attempt %(attempt)s started on %(worker)s.")
CANCELLED_RESUMABLE = gettext_noop("Cancelled; Resume continues from the last checkpoint.")
CANCELLED_AT = gettext_noop("Cancelled at step %(step)s; Resume continues from the last checkpoint.")
CONTINUING = gettext_noop("%(phase)s: continuing from a checkpoint; first step of this attempt: %(step)s.")
EVENT_AT = gettext_noop("%(phase)s: %(event)s (step %(step)s)")
EVENT = gettext_noop("%(phase)s: %(event)s")
STOPPING = gettext_noop("Stopping: %(reason)s.")
PHASE = gettext_noop("Phase: %(phase)s.")
STOP_CANCEL = gettext_noop("cancel requested")
STOP_NOT_HELD = gettext_noop("this worker no longer holds the run")
SPLIT = known_text.ngettext(
    "Split %(split)s: %(train)s training items and %(test)s test items, %(tasks)s task.",
    "Split %(split)s: %(train)s training items and %(test)s test items, %(tasks)s tasks.",
    "tasks",
)
FEATURES = gettext_noop("Features %(train)s + %(test)s in %(seconds)s s (reused when cached).")
TEACHER_REUSED = gettext_noop("Teacher already trained: reusing it.")
LABELS_REUSED = known_text.ngettext(
    "Reusing %(labels)s synthetic label.", "Reusing %(labels)s synthetic labels.", "labels"
)
LABELS_MADE = known_text.ngettext(
    "%(labels)s synthetic labels on %(notes)s unlabeled note of corpus %(corpus)s.",
    "%(labels)s synthetic labels on %(notes)s unlabeled notes of corpus %(corpus)s.",
    "notes",
)
PAIRS = known_text.ngettext(
    "%(pairs)s training pair from dataset %(dataset)s (mode %(mode)s).",
    "%(pairs)s training pairs from dataset %(dataset)s (mode %(mode)s).",
    "pairs",
)
REGISTERED = gettext_noop("Registered model version %(model)s.")
DONE_IN = gettext_noop("Done in %(seconds)s s.")
OTHER_CODE = gettext_noop("Note: this attempt runs code %(code)s, the first ran %(first)s.")
ENVIRONMENT = gettext_noop("Code %(code)s, torch %(torch)s, transformers %(transformers)s, device %(device)s.")
MACRO_F1 = known_text.ngettext(
    "Macro F1 %(f1)s (95%% CI %(low)s-%(high)s) on %(items)s test item.",
    "Macro F1 %(f1)s (95%% CI %(low)s-%(high)s) on %(items)s test items.",
    "items",
)
MACRO_F1_HELD = known_text.ngettext(
    "Macro F1 %(f1)s (95%% CI %(low)s-%(high)s) on %(items)s test item; held-out tasks %(held)s.",
    "Macro F1 %(f1)s (95%% CI %(low)s-%(high)s) on %(items)s test items; held-out tasks %(held)s.",
    "items",
)
# the run's error (also its last log line)
LXT_PATCHED = gettext_noop(
    "This worker process has computed AttnLRP relevance (lxt patches), so it must not train. Run the "
    "training queue in its own worker processes; then press Resume."
)
NOTHING_LEARNED = gettext_noop(
    "Training ran %(steps)s optimizer step(s) but the weights did not change: every step had learning rate 0 "
    "(warmup gives the first step rate 0, so a 1-step run with warmup learns nothing). No model version was "
    "registered. Launch a new run with more steps, no warmup, or a learning rate above 0."
)
REFUSED = gettext_noop("ml.training refused the run: %(reason)s")
UNEXPECTED = gettext_noop(
    "The run stopped because of an unexpected error (%(type)s). The worker log has the details under run "
    "%(run)s; Resume continues from the last checkpoint."
)
LAUNCHER_UNUSABLE = gettext_noop("TRAINING_LAUNCHER cannot be used: %(reason)s.")
LAUNCHER_NOT_STARTED = gettext_noop("TRAINING_LAUNCHER could not be started (%(type)s: %(reason)s).")
LAUNCH_SIGNAL = gettext_noop("The distributed launch was stopped by signal %(signal)s; queued again automatically.")
LAUNCH_EXIT = gettext_noop(
    "The distributed launch exited with code %(code)s; see the worker log. Resume continues from the last checkpoint."
)
# MLflow: a run kept out of it (runs.mlflow_refusal; the gate's reason, in English, a value as stored)
MLFLOW_HELD_BACK = gettext_noop(
    "Not logged to MLflow: %(reason)s No project admin confirmed this run's launch, so nothing of it leaves the server."
)

# The phases' codes (the first word of a trainer's line: "train: started") and labels (reporting's
# set_phase: the run's `phase`, shown by training_tags.run_phase too)
PHASE_CODES = (
    known_text.pgettext("run phase", "train"),
    known_text.pgettext("run phase", "predict"),
    known_text.pgettext("run phase", "features"),
    known_text.pgettext("run phase", "heads"),
    known_text.pgettext("run phase", "prompting"),
    known_text.pgettext("run phase", "label"),
    known_text.pgettext("run phase", "evaluate"),
    known_text.pgettext("run phase", "teacher"),
    known_text.pgettext("run phase", "student"),
)
PHASE_LABELS = (
    gettext_noop("queued again"),
    gettext_noop("starting"),
    gettext_noop("reading the dataset"),
    gettext_noop("training"),
    gettext_noop("LoRA SFT"),
    gettext_noop("training the SFT teacher"),
    gettext_noop("training the student on gold + synthetic labels"),
    gettext_noop("labelling unlabeled notes with the teacher"),
    gettext_noop("computing features (cached per model and items)"),
    gettext_noop("training the classification heads"),
    gettext_noop("predicting the test items"),
    gettext_noop("evaluating on the test items"),
)
SHOTS = gettext_noop("%(shots)s-shot prompting")

# ---------------------------------------------------------------- written by other layers, as they write them

# ml.training's progress messages (ml/training/loop.py, heads.py); its refusals (the errors it raises)
# are webapp.training.refusal_text's
ML = (
    gettext_noop("started"),
    gettext_noop("finished"),
    gettext_noop("checkpoint saved"),
    gettext_noop("checkpoint saved (cancelled)"),
    gettext_noop("resumed at step %(step)s"),
    gettext_noop("head %(task)s"),
    gettext_noop("max_length %(max_length)s (auto)"),
    gettext_noop(
        "%(truncated)s of %(pairs)s examples cut to %(max_length)s tokens, %(dropped)s dropped (the answer alone "
        "does not fit, or the mask could not be kept)"
    ),
)
# webapp.integrations.mlflow_log: where a run went in MLflow, or why it did not (a server's own words
# stay as stored)
MLFLOW = (mlflow_log.NOT_LOGGED, mlflow_log.LOGGED, mlflow_log.REGISTERED, mlflow_log.NOT_REGISTERED)
# webapp.lifecycle (recovery, ended) and workers.runner: why a run waited, or failed
LIFECYCLE = (
    *said.LIFECYCLE,
    gettext_noop(
        "The training run stopped on an unexpected error (%(type)s); the worker log has the details under "
        "training run %(run)s. Press Resume to try again."
    ),
)


@cache
def texts() -> KnownTexts:
    """The table, specific templates first; the general ones ("phase: event", "a; b") last."""
    from webapp.training.models import RunKind

    with translation.override("en"):  # the kinds' labels as a Launched line stores them
        kinds = [str(label) for label in RunKind.labels]
    return KnownTexts(
        [
            Known(LAUNCHED_PRESET, words=("kind",)),
            Known(LAUNCHED, words=("kind",)),
            *kinds,
            CANCEL_REQUESTED,
            CANCELLED,
            RESUME_REQUESTED,
            RESUME_FROM,
            ATTEMPT_HERE,
            ATTEMPT_ON,
            CANCELLED_RESUMABLE,
            CANCELLED_AT,
            Known(STOPPING, words=("reason",)),
            STOP_CANCEL,
            STOP_NOT_HELD,
            Known(PHASE, words=("phase",)),
            *PHASE_LABELS,
            SHOTS,
            SPLIT,
            FEATURES,
            TEACHER_REUSED,
            LABELS_REUSED,
            LABELS_MADE,
            PAIRS,
            REGISTERED,
            DONE_IN,
            OTHER_CODE,
            ENVIRONMENT,
            MACRO_F1_HELD,
            MACRO_F1,
            LXT_PATCHED,
            NOTHING_LEARNED,
            Known(REFUSED, words=("reason",)),
            UNEXPECTED,
            LAUNCHER_UNUSABLE,
            LAUNCHER_NOT_STARTED,
            LAUNCH_SIGNAL,
            LAUNCH_EXIT,
            MLFLOW_HELD_BACK,  # before mlflow_log's general "Not logged to MLflow: ..."
            *MLFLOW,
            *LIFECYCLE,
            *ML,
            *refusal_text.REFUSALS,
            *PHASE_CODES,
            Known(CONTINUING, words=("phase",)),
            Known(EVENT_AT, words=("phase", "event")),
            Known(EVENT, words=("phase", "event")),
            Known(gettext_noop("%(first)s; %(rest)s"), words=("first", "rest")),  # ml's notes after "started"
        ]
    )


def shown(text):
    """A stored log line or error in the active language; as stored when not recognised (then, for an
    error, the relevance jobs' shared texts: a queue that could not be reached, retries spent)."""
    if not isinstance(text, str) or not text:
        return text
    if texts().recognises(text):
        return texts().render(text, translation)
    from webapp.pipeline.error_text import error_words

    return error_words(text)
