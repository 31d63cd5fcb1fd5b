"""An import's problems are stored as templates and values and shown in the reader's language: a
refused file names its file, its lines and its ids the same in English, Italian and Spanish; only
the words around them change. The worker that refuses it runs in the default language; the page
translates. `str(problem)`, the API and the download stay English, and a row stored before
problems were kept this way (plain English lines) is shown as it is.
"""

import re
from html import unescape

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import translation

from webapp.corpus import problem_text
from webapp.corpus.models import ImportJob, Note
from webapp.lib.formats._files import kind
from webapp.lib.import_limits import THE_FILE, file_too_large
from webapp.lib.messages import Message, gettext_noop, message
from webapp.lib.problems import Problem, Problems
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from workers.imports import run_import

FILE_NAME = "pronto_soccorso-2026.jsonl"
BAD_FILE = (
    b'{"id": "ps-101", "text": "FC 88 bpm."}\n'
    b'{"id": "ps-102" "text": "PA 90/60"}\n'  # line 2: a comma missing
    b'{"id": "ps-103", "text": "SpO2 97%."}\n'
    b'{"id": "ps-103", "text": "SpO2 91%."}\n'  # line 4: the id of line 3 again
)
ENGLISH = [
    f"{FILE_NAME} line 2: invalid JSON: Expecting ',' delimiter at column 17",
    f"{FILE_NAME} line 4: duplicate id 'ps-103' (first on line 3)",
]
LANGUAGES = ("en", "it", "es")


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


@pytest.fixture(autouse=True)
def sent(monkeypatch):
    """Nothing reaches a broker: the test runs the worker's task itself."""
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


def refused(researcher, lang: str, capture) -> tuple[ImportJob, Client]:
    """The bad file uploaded by a researcher whose browser asks for `lang`, refused by a worker
    running in the default language."""
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    with capture(execute=True):
        response = client.post(
            reverse("corpus:upload"),
            {
                "kind": "notes",
                "corpus": f"ps-{lang}",
                "language": "it",
                "file": SimpleUploadedFile(FILE_NAME, BAD_FILE),
            },
        )
    assert response.status_code == 302, response.content.decode()
    job = ImportJob.objects.latest("pk")
    with translation.override(settings.LANGUAGE_CODE):
        run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.problem_count == 2, job.problems
    return job, client


def problem_lines(client: Client, job: ImportJob) -> list[str]:
    html = client.get(reverse("corpus:import_detail", args=[job.pk])).content.decode()
    found = re.search(r'<div class="problems" id="import-problems">(.*?)</div>', html, re.S)
    assert found, html
    return [unescape(line).strip() for line in found.group(1).splitlines() if line.strip()]


def values(line: str) -> tuple[list[str], list[str], list[str]]:
    """What a line names: the file, the ids, the numbers (sorted: a language may order them otherwise)."""
    rest = line.replace(FILE_NAME, " ")
    ids = re.findall(r"ps-\d+", rest)
    return (
        [FILE_NAME] * line.count(FILE_NAME),
        sorted(ids),
        sorted(re.findall(r"(?<![\w-])\d+(?![\w-])", re.sub(r"ps-\d+", " ", rest)), key=int),
    )


def words(line: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[^\W\d_]+", re.sub(r"ps-\d+", " ", line.replace(FILE_NAME, " ")))}


def test_a_refused_import_names_the_file_the_lines_and_the_id_identically_in_every_language(
    researcher, django_capture_on_commit_callbacks
):
    shown = {}
    for lang in LANGUAGES:
        job, client = refused(researcher, lang, django_capture_on_commit_callbacks)
        shown[lang] = problem_lines(client, job)
        # what a machine reads stays English whatever the reader's language: the API, the download
        assert job.problem_lines == ENGLISH
        download = client.get(reverse("corpus:import_problems", args=[job.pk])).content.decode()
        assert download.splitlines() == ENGLISH
        # the row keeps templates and values, never a translation
        assert job.problems[1] == {
            "source": FILE_NAME,
            "line": 4,
            "message": "duplicate id %(id)s (first on line %(first)s)",
            "params": {"id": "'ps-103'", "first": 3},
        }
    assert not Note.objects.exists()

    assert shown["en"] == ENGLISH
    for lang in ("it", "es"):
        assert len(shown[lang]) == 2, shown[lang]
        for line, english in zip(shown[lang], ENGLISH, strict=True):
            assert values(line) == values(english), (lang, line, english)
            assert line.startswith(FILE_NAME) and "'ps-103'" in shown[lang][1]
            assert words(line) != words(english), f"{lang}: {line!r} reads as in English"
            left = {w for w in words(line) & words(english) if len(w) >= 4} - {"json"}
            assert not left, f"{lang}: English {sorted(left)} in {line!r}"
    assert shown["it"][0].startswith(f"{FILE_NAME} riga 2: JSON non valido")
    assert shown["it"][1] == f"{FILE_NAME} riga 4: identificativo doppio 'ps-103' (già alla riga 3)"
    assert shown["es"][1] == f"{FILE_NAME} línea 4: identificador repetido 'ps-103' (ya en la línea 3)"


def test_str_of_a_problem_is_the_english_it_always_was():
    problems = Problems()
    problems.add("n.jsonl", 4, gettext_noop("duplicate id %(id)s (first on line %(first)s)"), id="'n7'", first=3)
    problems.add("n.jsonl", 5, gettext_noop("expected a JSON object, got %(kind)s"), kind=kind([1]))
    problems.add("big.ann", None, file_too_large(THE_FILE, 2_000_000, 1_000_000))
    problems.add("n.jsonl", 6, "a plain 100% English reason")  # no values: shown as written
    problems.warn("n.jsonl", 7, message("%(where)s: %(reason)s", where="task 3", reason=Message("an object")))
    assert [str(p) for p in problems.kept] == [
        "n.jsonl line 4: duplicate id 'n7' (first on line 3)",
        "n.jsonl line 5: expected a JSON object, got an array",
        "big.ann: the file has 2,000,000 bytes, more than the 1,000,000 one file may have "
        "(IMPORT_MAX_FILE_BYTES); it was not read",
        "n.jsonl line 6: a plain 100% English reason",
    ]
    assert str(problems.warnings[0]) == "n.jsonl line 7: task 3: an object"
    assert problems.kept[1].message == "expected a JSON object, got an array"
    # stored and read back, the same English
    for problem in problems.kept:
        assert problem_text.english(problem.as_json()) == str(problem)
    # a value is never translated, a control character in it never stored
    odd = Problems()
    odd.add("n\x00.jsonl", 2, gettext_noop("duplicate id %(id)s (first on line %(first)s)"), id="'a\u202eb'", first=1)
    assert odd.kept[0] == Problem(
        "n\\x00.jsonl", 2, "duplicate id %(id)s (first on line %(first)s)", (("id", "'a\\u202eb'"), ("first", 1))
    )


def test_an_old_row_of_plain_lines_is_shown_as_it_is(client, researcher):
    from tests.projects import default_project

    old = [
        "n.jsonl line 2: invalid JSON: Expecting value at column 1",
        "n.jsonl line 3: duplicate id 'a' (first on line 1)",
    ]
    job = ImportJob.objects.create(
        kind="notes",
        project=default_project(),
        corpus_name="ed",
        file_name="n.jsonl",
        status=JobStatus.FAILED,
        problems=old,
        problem_count=2,
        created_by=researcher,
    )
    assert job.problem_lines == old
    with translation.override("it"):
        assert problem_text.shown_lines(old) == old
    client.force_login(researcher)
    assert problem_lines(client, job) == old
    assert client.get(reverse("corpus:import_problems", args=[job.pk])).content.decode().splitlines() == old


def test_the_line_past_the_kept_ones_counts_in_the_readers_language():
    more = {"more": 3, "total": 53, "what": "warnings"}
    assert problem_text.english(more) == "... and 3 more warnings (53 in all)"
    with translation.override("en"):
        assert problem_text.shown(more) == "... and 3 more warnings (53 in all)"
        assert problem_text.shown({**more, "more": 1}) == "... and 1 more warning (53 in all)"


@pytest.mark.parametrize(
    "lang, said",
    [
        ("it", "L'importazione si è fermata per un errore imprevisto (RuntimeError); non è stato importato nulla."),
        ("es", "La importación se detuvo por un error inesperado (RuntimeError); no se importó nada."),
    ],
)
def test_an_import_s_error_is_shown_in_the_reader_s_language(client, researcher, lang, said):
    from tests.projects import default_project
    from webapp.corpus import import_jobs

    job = ImportJob.objects.create(
        kind="notes", project=default_project(), corpus_name="ed", file_name="n.jsonl", created_by=researcher
    )
    claimed = import_jobs.claim(job.pk, "w1")
    assert import_jobs.fail_unexpectedly(claimed, RuntimeError("its own words"))
    job.refresh_from_db()
    assert job.error.startswith("The import stopped on an unexpected error (RuntimeError)")  # stored English
    client.force_login(researcher)
    page = unescape(
        client.get(reverse("corpus:import_detail", args=[job.pk]), HTTP_ACCEPT_LANGUAGE=lang).content.decode()
    )
    assert said in page
