"""A build's percent (issue 38, item 6): every map read is not the build done (the last examples
and the statistics are written after the last map), so it says 100% only once it has ended."""

import pytest

from webapp.datasets.models import DatasetVersion
from webapp.lifecycle.status import JobStatus


@pytest.mark.parametrize("status, percent", [(JobStatus.RUNNING, 99), (JobStatus.DONE, 100)])
def test_every_map_read_is_100_percent_only_once_the_build_has_ended(status, percent):
    dataset = DatasetVersion(status=status, maps_total=3, maps_done=3)
    assert dataset.progress_percent == percent
    dataset.maps_done = 1
    assert dataset.progress_percent == 33
