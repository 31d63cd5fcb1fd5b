"""The log filter (webapp.logs.WithholdRowContent) on crafted records and on a real database
error, how settings wire it (every root handler; Django's own handlers gone), and a 403 logged
once, in one line, without a traceback."""

import io
import logging

import pytest
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.test import RequestFactory
from django.urls import reverse

from tests.projects import default_project
from webapp.corpus.models import Corpus, Note
from webapp.logs import WithholdRowContent

MARKER = "QUOKKAMARKER"  # stands for note text and metadata values


class UniqueViolation(Exception):
    """Stands for psycopg.errors.UniqueViolation (its message carries the row)."""


UniqueViolation.__module__ = "psycopg.errors"
ROW_ERROR = (
    f'duplicate key value violates unique constraint "corpus_note_unique"\n'
    f"DETAIL:  Key (corpus_id, external_id)=(1, {MARKER}) already exists."
)


@pytest.fixture
def logged():
    """logged(lambda log: log.error(...)) -> (what a handler with the filter wrote, the record)."""

    def run(call):
        out, records = io.StringIO(), []
        handler = logging.StreamHandler(out)
        handler.addFilter(WithholdRowContent())
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        keep = logging.Handler()
        keep.emit = records.append  # after the filtering handler, as pytest's caplog is
        log = logging.getLogger("tests.logs.crafted")
        log.propagate, log.handlers = False, [handler, keep]
        try:
            call(log)
        finally:
            log.handlers, log.propagate = [], True
        assert len(records) == 1
        return out.getvalue(), records[0]

    return run


def raised(exc: BaseException, cause: BaseException | None = None) -> BaseException:
    try:
        raise exc from cause
    except BaseException as caught:  # noqa: BLE001
        return caught


def leaks(text: str, record: logging.LogRecord) -> bool:
    return MARKER in text or MARKER in repr(vars(record)) or MARKER in record.getMessage()


# ---------------------------------------------------------------- exceptions


def test_a_database_error_is_logged_by_its_types_and_frames_without_the_row(logged):
    exc = raised(IntegrityError("wrapped by Django"), cause=raised(UniqueViolation(ROW_ERROR)))
    text, record = logged(lambda log: log.error("import 7 failed", exc_info=exc))
    assert not leaks(text, record)
    assert text.startswith("ERROR tests.logs.crafted import 7 failed\nTraceback (most recent call last):\n")
    assert 'File "' in text and "in raised" in text  # the frames, with their code lines
    assert "psycopg.errors.UniqueViolation (message withheld from logs)" in text
    assert "The above exception was the direct cause of the following exception:" in text
    assert text.rstrip().endswith("django.db.utils.IntegrityError (message withheld from logs)")
    assert record.exc_info is None  # no later handler can render the message again


@pytest.mark.django_db
def test_a_real_unique_violation_from_postgresql_leaves_no_value_in_the_log(logged):
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    Note.objects.create(corpus=corpus, external_id=MARKER, text="a")
    with pytest.raises(IntegrityError) as caught, transaction.atomic():
        Note.objects.create(corpus=corpus, external_id=MARKER, text="b")
    assert MARKER in str(caught.value)  # what the filter is for
    text, record = logged(lambda log: log.exception("write failed", exc_info=caught.value))
    assert not leaks(text, record)
    assert "IntegrityError (message withheld from logs)" in text


def test_a_library_error_quoting_its_input_is_withheld_where_it_is_an_argument_or_the_message(logged):
    exc = raised(ValueError(f"cannot tokenize {MARKER!r}"))
    text, record = logged(lambda log: log.error("chunk 3 failed: %s (%r)", exc, exc))
    assert not leaks(text, record)
    assert (
        text == "ERROR tests.logs.crafted chunk 3 failed: <ValueError: message withheld> "
        "(<ValueError: message withheld>)\n"
    )
    text, record = logged(lambda log: log.error(exc))
    assert not leaks(text, record) and "<ValueError: message withheld>" in text


def test_a_celery_failure_line_loses_the_exception_text_and_its_structured_copy(logged):
    exc = raised(KeyError(MARKER))
    context = {
        "name": "workers.imports.run_import",
        "id": "abc",
        "exc": repr(exc),
        "traceback": f"Traceback ...\nKeyError: '{MARKER}'",
        "args": "[5]",
    }
    text, record = logged(
        lambda log: log.error(
            "Task %(name)s[%(id)s] raised unexpected: %(exc)s", context, exc_info=exc, extra={"data": context}
        )
    )
    assert not leaks(text, record)
    assert "Task workers.imports.run_import[abc] raised unexpected: <KeyError: message withheld>" in text
    assert not hasattr(record, "data")


def test_our_own_typed_errors_and_system_errors_keep_their_message(logged):
    from webapp.datasets.models import BuildError

    own = raised(BuildError("dataset 4: no relevance maps match the filters"))
    text, _ = logged(lambda log: log.error("build failed", exc_info=own))
    assert "webapp.datasets.models.BuildError: dataset 4: no relevance maps match the filters" in text
    missing = raised(FileNotFoundError(2, "No such file or directory", "/models/gone"))
    text, _ = logged(lambda log: log.error("load failed", exc_info=missing))
    assert "FileNotFoundError: [Errno 2] No such file or directory: '/models/gone'" in text


def test_row_content_quoted_inside_our_own_error_is_cut(logged):
    from webapp.datasets.models import BuildError

    own = raised(BuildError(f"dataset 4: the database refused a row: {ROW_ERROR}"))
    text, record = logged(lambda log: log.error("build failed", exc_info=own))
    assert not leaks(text, record)
    assert (
        "BuildError: dataset 4: the database refused a row: duplicate key value violates unique constraint "
        '"corpus_note_unique"\n[row content withheld]' in text
    )


def test_a_short_message_is_not_searched_for_in_the_line(logged):
    exc = raised(KeyError(5))
    text, _ = logged(lambda log: log.error("chunk %s failed", 5, exc_info=exc))
    assert text.startswith("ERROR tests.logs.crafted chunk 5 failed\n")
    assert text.rstrip().endswith("KeyError (message withheld from logs)")


def test_an_exception_that_cannot_say_its_message_is_still_logged(logged):
    class Broken(Exception):
        def __str__(self):
            raise RuntimeError("no")

    text, _ = logged(lambda log: log.error("x", exc_info=raised(Broken())))
    assert text.rstrip().endswith("Broken (message withheld from logs)")


# ---------------------------------------------------------------- requests, extras, last resort


def test_the_request_with_its_post_body_is_dropped_and_numbers_stay(logged):
    request = RequestFactory().post("/corpora/import/", {"corpus": MARKER, "notes": f"Patient {MARKER}"})
    text, record = logged(
        lambda log: log.error("Internal Server Error: %s", request.path, extra={"status_code": 500, "request": request})
    )
    assert not leaks(text, record)
    assert text == "ERROR tests.logs.crafted Internal Server Error: /corpora/import/\n"
    assert not hasattr(record, "request") and record.status_code == 500


def test_database_detail_in_a_plain_message_is_cut_as_a_last_resort(logged):
    text, record = logged(lambda log: log.warning("refused:\n%s", f'CONTEXT:  COPY corpus_note, line 1: "{MARKER}"'))
    assert not leaks(text, record) and text == "WARNING tests.logs.crafted refused:\n[row content withheld]\n"
    text, record = logged(lambda log: log.warning("Failing row contains (1, %s, {})", MARKER))
    assert not leaks(text, record)


def test_arguments_that_do_not_fit_the_message_are_withheld_not_printed(logged, capsys):
    text, record = logged(lambda log: log.info("note %s of %s", MARKER))
    assert not leaks(text, record) and "[arguments withheld: they did not fit the message]" in text
    assert MARKER not in capsys.readouterr().err  # logging's "--- Logging error ---" report


def test_a_record_is_scrubbed_once_and_then_left_alone(logged):
    exc = raised(ValueError(MARKER))
    text, record = logged(lambda log: log.error("x", exc_info=exc))
    before = dict(vars(record))
    assert WithholdRowContent().filter(record) is True
    assert vars(record) == before


# ---------------------------------------------------------------- permission refusals


def test_a_permission_refusal_is_one_line_without_a_traceback(logged):
    exc = raised(PermissionDenied("Your role does not allow: import"))
    text, record = logged(
        lambda log: log.warning(
            "Forbidden (Permission denied): %s", "/corpora/import/", exc_info=exc, extra={"status_code": 403}
        )
    )
    assert text == "WARNING tests.logs.crafted Forbidden (Permission denied): /corpora/import/\n"


# ---------------------------------------------------------------- wiring


def configured_handlers(*loggers):
    """The handlers that write somewhere (pytest's capture and libraries' NullHandlers left out)."""
    return [
        h
        for name in loggers
        for h in logging.getLogger(name).handlers
        if not type(h).__module__.startswith("_pytest") and not isinstance(h, logging.NullHandler)
    ]


def filtered(handlers) -> bool:
    return bool(handlers) and all(any(isinstance(f, WithholdRowContent) for f in h.filters) for h in handlers)


def test_every_handler_carries_the_filter_and_django_has_no_handler_of_its_own():
    assert all(
        "withhold_row_content" in settings.LOGGING["handlers"][name].get("filters", [])
        for name in settings.LOGGING["root"]["handlers"]
    )
    assert filtered(configured_handlers(None))
    for name in (
        "django",
        "django.request",
        "django.security",
        "celery",
        "celery.app.trace",
        "kombu",
        "psycopg",
        "axes",
        "webapp",
        "workers",
    ):
        assert configured_handlers(name) == [], name  # they all propagate to the root handlers
        assert logging.getLogger(name).propagate, name
    # A Celery worker cuts "celery.task" (get_task_logger) off from the root, and gives it a handler
    # of its own unless it has one: it has the filtered console.
    assert filtered(configured_handlers("celery.task"))


@pytest.fixture
def console():
    """What the configured handlers on the way from django.request to the root print."""
    out = io.StringIO()
    handlers = [
        h for h in configured_handlers("django.request", "django", None) if isinstance(h, logging.StreamHandler)
    ]
    previous = [h.setStream(out) for h in handlers]
    yield out
    for handler, stream in zip(handlers, previous):
        handler.setStream(stream)


@pytest.mark.parametrize("debug", [False, True])
def test_a_403_is_logged_once_in_one_line(client_for, clinician, console, settings, debug):
    settings.DEBUG = debug  # make demo runs with DEBUG=1: Django's own console printed it again
    client = client_for(clinician)
    console.seek(0), console.truncate()  # what logging in printed
    response = client.get(reverse("corpus:upload"))
    assert response.status_code == 403
    lines = [line for line in console.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].endswith("WARNING django.request Forbidden (Permission denied): /corpora/import/")


def test_handlers_added_after_django_get_the_filter_too():
    """Celery's `multiprocessing` handler in a worker, gunicorn's error and access logs."""
    import importlib.util
    from pathlib import Path

    from webapp.logs import WithholdRowContent

    late = [logging.getLogger(name) for name in ("multiprocessing", "gunicorn.error", "gunicorn.access")]
    handlers = [logging.StreamHandler() for _ in late]
    for logger, handler in zip(late, handlers):
        logger.addHandler(handler)
    try:
        spec = importlib.util.spec_from_file_location("gunicorn_conf", Path(__file__).parents[2] / "gunicorn.conf.py")
        conf = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(conf)
        conf.post_worker_init(worker=None)
        assert all(any(isinstance(f, WithholdRowContent) for f in h.filters) for h in handlers)
        assert "%(U)s" in conf.access_log_format and "%(r)s" not in conf.access_log_format  # no query strings
    finally:
        for logger, handler in zip(late, handlers):
            logger.removeHandler(handler)
