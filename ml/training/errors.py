"""Errors of ml.training.

A refusal (TrainingError, TrainingInputError) is raised with one English template of
ml.training.refusals and its values; the message is the template filled in, and the error keeps
both (`template`, `values`), so that a reader in another language can be shown the same refusal
with the same values."""


class _Refusal:
    def __init__(self, template: str, /, **values):
        super().__init__(template % values if values else template)
        self.template = template
        self.values = values


class TrainingError(_Refusal, Exception):
    """Training cannot run or went wrong in a way the user can act on (bad data, bad config,
    a chat template that hides the answer, a checkpoint from another run)."""


class TrainingInputError(_Refusal, ValueError):
    """Settings or data the trainer cannot use (ids, labels, sizes, a checkpoint of another
    shape). Its message names ids, labels and numbers, never note text, so the app shows it on
    the run as it is. A ValueError, so callers that validate with `except ValueError` still do."""


class TrainingCancelled(Exception):
    """`should_stop()` returned True: a checkpoint was saved (unless nothing had been trained
    yet and none existed); calling again with resume=True continues from it."""

    def __init__(self, message: str = "training cancelled", *, step: int = 0, checkpoint_dir=None):
        super().__init__(message)
        self.step = step
        self.checkpoint_dir = checkpoint_dir
