"""The API's side of long work, for every app's router: the fields every unit of work answers
with (`UnitOut`, webapp.lifecycle.models.WorkUnit), and a launch's confirmation by the pages'
rule (webapp.lifecycle.estimates.waits_for_confirmation, nothing confirmed yet): a launch the
pages would ask to confirm needs `"confirm": true`; without it `must_confirm` raises
`Unconfirmed`, which the API answers as a 409 stating the question the page asks and the
estimate (webapp.api.api), with nothing launched."""

from datetime import datetime

from django.utils import translation
from ninja import Schema
from pydantic import Field

from webapp.db.api import Error
from webapp.lifecycle.estimates import Estimate, waits_for_confirmation
from webapp.lifecycle.status import JobStatus


class UnitOut(Schema):
    """What every unit of work answers with."""

    id: int
    status: JobStatus
    error: str = Field(description="Why it failed or was refused; empty otherwise.")
    attempts: int = Field(description="Claims by a worker so far.")
    started: datetime | None
    finished: datetime | None


class EstimateOut(Schema):
    amount: int = Field(description="Units of work asked for.")
    unit: str = Field(description='"prompts", "maps", "steps".')
    size: str = Field(description='The amount in words: "12,400 prompts".')
    seconds: float | None = Field(description="On one worker of `queue`; null: no measured rate yet.")
    duration: str = Field(description='The time in words: "about 2 h 05 min", "unknown".')
    basis: str = Field(description="Where the rate came from, in words.")
    queue: str


class CorpusRef(Schema):
    id: int
    name: str


class Conflict(Error):
    """A 409: the launch waits for `"confirm": true` (`estimate`), the data may not leave until a
    project admin confirms it (`corpora`, webapp.deid.gate), or the object's state refuses it."""

    estimate: EstimateOut | None = None
    corpora: list[CorpusRef] | None = None


class Unconfirmed(Exception):
    def __init__(self, estimate: Estimate):
        super().__init__(estimate.question)
        self.estimate = estimate

    def answer(self) -> dict:
        """The API's body stays in English, whatever the request's language."""
        with translation.override("en"):
            detail = f'{self.estimate.question} Send the same request with "confirm": true to launch it.'
            return {"detail": detail, "estimate": EstimateOut.from_orm(self.estimate).dict()}


def must_confirm(estimate: Estimate | None, confirm: bool) -> None:
    if not confirm and waits_for_confirmation(estimate, {}):
        raise Unconfirmed(estimate)
