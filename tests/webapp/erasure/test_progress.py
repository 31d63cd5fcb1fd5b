"""An erasure's percent (issue 38, item 6): every row erased is not the erasure done (the note
ids forgotten, the rebuilds and the receipt follow), so it says 100% only once it has ended."""

import pytest

from webapp.erasure.models import ErasureRequest
from webapp.lifecycle.status import JobStatus


@pytest.mark.parametrize(
    "status, percent",
    [(JobStatus.RUNNING, 99), (JobStatus.CANCELLING, 99), (JobStatus.DONE, 100), (JobStatus.CANCELLED, 100)],
)
def test_every_row_erased_is_100_percent_only_once_it_has_ended(status, percent):
    erasure = ErasureRequest(status=status, planned={"tables": {"corpus.Note": 3}}, erased={"corpus.Note": 3})
    assert erasure.percent == percent
    erasure.erased = {"corpus.Note": 1}
    assert erasure.percent == 33
