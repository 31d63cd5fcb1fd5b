"""A refused import reads the same in every language where it names things: the file, the line
and the id are those of the file, in English, Italian and Spanish alike; only the words around
them are the reader's language.

The researcher uploads the same bad JSONL file (a broken line, an id given twice) with their
browser's language (Accept-Language); a worker, in the default language as workers run, refuses
it; the import's page, read in the same language, lists the problems.
"""

import re
from html import unescape

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import translation

from webapp.corpus.models import ImportJob, Note
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from workers.imports import run_import

FILE_NAME = "ricoveri_marzo-2026.jsonl"
BAD_FILE = (
    b'{"id": "ric-0041", "text": "FC 88 bpm."}\n'
    b'{"id": "ric-0042", "text": "PA 90/60\n'  # line 2: broken (the string never ends)
    b'{"id": "ric-0043", "text": "SpO2 97%."}\n'
    b'{"id": "ric-0043", "text": "SpO2 91%."}\n'  # line 4: the id of line 3 again
)
LANGUAGES = ("en", "it", "es")
ID = re.compile(r"ric-\d{4}")
FILE = re.compile(re.escape(FILE_NAME))
NUMBER = re.compile(r"(?<![\w.-])\d+(?![\w-])")


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


@pytest.fixture(autouse=True)
def sent(monkeypatch):
    """Nothing reaches a broker: the test runs the worker's task itself."""
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


def refusal(researcher, lang, capture) -> tuple[list[str], str]:
    """The problem lines of the import's page read in `lang`, and the text of its progress card
    (status, heading, problems, what to do)."""
    client = Client(HTTP_ACCEPT_LANGUAGE=lang)
    client.force_login(researcher)
    upload = SimpleUploadedFile(FILE_NAME, BAD_FILE)
    with capture(execute=True):
        response = client.post(
            reverse("corpus:upload"), {"kind": "notes", "corpus": f"ed-{lang}", "language": "it", "file": upload}
        )
    assert response.status_code == 302, response.content.decode()
    job = ImportJob.objects.latest("pk")
    with translation.override(settings.LANGUAGE_CODE):  # a worker runs in the default language
        run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.problem_count == 2, job.problems
    html = client.get(reverse("corpus:import_detail", args=[job.pk])).content.decode()
    problems = re.search(r'<div class="problems" id="import-problems">(.*?)</div>', html, re.S)
    card = re.search(r'<section id="import-progress".*?</section>', html, re.S)
    assert problems and card, html
    lines = [unescape(line).strip() for line in problems.group(1).splitlines() if line.strip()]
    return lines, unescape(" ".join(re.sub(r"<[^>]+>", " ", card.group(0)).split()))


def values(line: str) -> tuple[list[str], list[str], list[str]]:
    """What a problem line names: the file, the ids, the numbers (its line's among them), each
    sorted (a language may name them in another order)."""
    rest = ID.sub(" ", FILE.sub(" ", line))
    return sorted(FILE.findall(line)), sorted(ID.findall(line)), sorted(NUMBER.findall(rest), key=int)


def words(text: str) -> set[str]:
    """The words of a text, its values left out."""
    return {w.lower() for w in re.findall(r"[^\W\d_]+", ID.sub(" ", FILE.sub(" ", text)))}


def test_a_refused_import_names_the_same_file_lines_and_ids_in_every_language(
    researcher, django_capture_on_commit_callbacks
):
    from tests.browser.language import english_words, translated_words

    read = {lang: refusal(researcher, lang, django_capture_on_commit_callbacks) for lang in LANGUAGES}
    assert not Note.objects.exists()  # each refused whole

    english, _ = read["en"]
    assert len(english) == 2, english
    broken, twice = (values(line) for line in english)
    assert broken[:2] == ([FILE_NAME], []) and "2" in broken[2], english[0]  # the broken line 2
    assert twice == ([FILE_NAME], ["ric-0043"], ["3", "4"]), english[1]  # line 4: the id of line 3 again
    for lang in ("it", "es"):
        lines, card = read[lang]
        assert [values(line) for line in lines] == [values(line) for line in english], (lang, lines, english)
        for line, original in zip(lines, english, strict=True):
            assert words(line) != words(original), f"{lang}: {line!r} reads as in English"
            # an English word of the English line kept in the translation (json's own message)
            kept = sorted(w for w in words(line) & words(original) - translated_words(lang) if len(w) >= 4)
            assert not kept, f"{lang}: English {kept} in {line!r} (in English: {original!r})"
        left = sorted(words(card) & english_words(lang))
        assert not left, f"{lang}: English {left} on the refused import's page: {card!r}"
