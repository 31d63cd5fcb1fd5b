"""Estimates before work, what every launch form shares: the confirmation threshold, the
confirmation a form posts back, the question and durations in words, and rates measured on earlier
work. Each app's own estimate is tested beside the app (tests/webapp/<app>/test_estimates.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from webapp.lifecycle import estimates
from webapp.lifecycle.estimates import Estimate

# --- the estimate itself -------------------------------------------------------------------------


def test_it_asks_for_a_confirmation_above_the_seconds_threshold(settings):
    settings.LAUNCH_CONFIRM_SECONDS = 600
    assert Estimate(10, "prompts", 601.0, "measured").needs_confirmation
    assert not Estimate(10_000_000, "prompts", 600.0, "measured").needs_confirmation


def test_without_a_rate_it_asks_above_the_amount_threshold(settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 1000
    assert Estimate(1001, "prompts", None, "none").needs_confirmation
    assert not Estimate(1000, "prompts", None, "none").needs_confirmation


def test_a_confirmation_holds_only_for_at_least_the_amount_confirmed(settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 10
    large = Estimate(500, "prompts", None, "none")
    assert not large.confirmed_by({})
    assert not large.confirmed_by({"confirmed": "499"})  # the form grew after the confirmation
    assert not large.confirmed_by({"confirmed": "yes"})
    assert large.confirmed_by({"confirmed": "500"})
    assert Estimate(5, "prompts", None, "none").confirmed_by({})  # small: no confirmation needed
    assert not estimates.waits_for_confirmation(None, {})  # no estimate: launches as before


def test_the_question_says_the_amount_the_time_and_the_worker():
    estimate = Estimate(12_400, "prompts", 7500.0, "measured on 2 earlier jobs", queue="relevance")
    assert estimate.question == (
        "This is 12,400 prompts, about 2 h 05 min on one worker of the relevance queue. Launch it?"
    )
    unknown = Estimate(12_400, "prompts", None, "no measured rate yet for jobs of this model", queue="relevance")
    assert "no time can be estimated yet (no measured rate yet" in unknown.question


def test_on_a_page_the_queue_reads_as_a_name_in_code_and_the_rest_is_escaped():
    estimate = Estimate(12, "prompts", None, "no rate for <jobs> on the relevance queue", queue="relevance")
    assert estimate.worker_html == "one worker of the <code>relevance</code> queue"
    assert estimate.basis_html == "no rate for &lt;jobs&gt; on the <code>relevance</code> queue"
    assert estimate.question_html.count("<code>relevance</code>") == 1  # in the basis it quotes
    assert "<code>" not in estimate.question  # the API's plain text stays plain
    assert Estimate(12, "prompts", None, "a <b>", queue="").basis_html == "a &lt;b&gt;"


@pytest.mark.parametrize(
    "seconds, words", [(42, "42 s"), (61, "2 min"), (3600, "1 h 00 min"), (7500, "2 h 05 min"), (3 * 86400, "3.0 days")]
)
def test_durations_read_in_words(seconds, words):
    assert estimates.in_words(seconds) == words


# --- rates ---------------------------------------------------------------------------------------


def test_a_rate_pools_the_measured_samples_and_skips_empty_ones():
    samples = [(100, 50.0), (300, 150.0), (0, 9.0), (5, 0.0), (7, None)]  # 2 units/s over the first two
    estimate = estimates.from_rate(24, "prompts", samples, work="job", queue_name="relevance")
    assert estimate.seconds == pytest.approx(12.0)
    assert estimate.basis == "measured on 2 earlier jobs of this model on the relevance queue (2 prompts/s)"
    assert estimate.queue == "relevance"


def test_without_a_measured_sample_there_is_no_time():
    estimate = estimates.from_rate(24, "maps", [(0, 3.0)], work="build", queue_name="default")
    assert estimate.seconds is None
    assert estimate.basis == "no measured rate yet for builds of this model on the default queue"


def test_elapsed_times_only_work_that_started_and_finished():
    start = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
    rows = [(10, start, start + timedelta(seconds=40)), (5, start, None), (5, None, start)]
    assert estimates.elapsed(rows) == [(10, 40.0)]
