"""A job launched without a chunk size gets chunks of about sizing.CHUNK_SECONDS of computing at
this model's measured rate, so its progress and maps arrive every half minute or so."""

from webapp.pipeline import sizing
from webapp.pipeline.models import RelevanceJob

URL = "/jobs/new/"


def measured_job(launched, done: int, seconds: float) -> RelevanceJob:
    """An earlier job of the model that computed `done` prompts in `seconds` of chunk time."""
    job = launched()
    RelevanceJob.objects.filter(pk=job.pk).update(done=done, seconds_done=seconds)
    return job


def test_with_no_measured_rate_a_job_is_cut_into_small_first_chunks(launched):
    job = launched(chunk_size=None)  # 6 notes x 4 tasks = 24 prompts
    assert job.chunk_size == sizing.UNMEASURED_CHUNK < job.total
    assert job.chunk_count == -(-job.total // sizing.UNMEASURED_CHUNK) > 1


def test_chunks_are_sized_to_half_a_minute_at_the_measured_rate(launched):
    measured_job(launched, done=24, seconds=12)  # 2 prompts/s
    assert launched(chunk_size=None).chunk_size == 2 * sizing.CHUNK_SECONDS
    measured_job(launched, done=3, seconds=300)  # now 27 prompts in 312 s: 0.087 prompts/s
    assert launched(chunk_size=None).chunk_size == round(27 / 312 * sizing.CHUNK_SECONDS)


def test_a_slow_model_still_gets_one_prompt_a_chunk_and_a_fast_one_at_most_the_maximum(launched):
    measured_job(launched, done=1, seconds=3600)
    assert launched(chunk_size=None).chunk_size == 1
    RelevanceJob.objects.update(done=24, seconds_done=1e-6)
    assert launched(chunk_size=None).chunk_size == sizing.MAX_CHUNK_SIZE


def test_a_chunk_size_asked_for_is_kept(launched):
    measured_job(launched, done=24, seconds=12)
    assert launched(chunk_size=7).chunk_size == 7


def test_the_form_left_empty_sizes_the_chunks(client, researcher, corpus, tasks, model_version):
    client.force_login(researcher)
    data = {
        "corpus": corpus.pk,
        "task_selection": "sample",
        "sample_k": 4,
        "seed": 0,
        "model_version": model_version.pk,
        "method": "attnlrp",
        "template_choice": "en",
        "chunk_size": "",
    }
    response = client.post(URL, data)
    assert response.status_code == 302
    assert RelevanceJob.objects.get().chunk_size == sizing.UNMEASURED_CHUNK
