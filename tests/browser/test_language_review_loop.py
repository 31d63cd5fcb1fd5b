"""A clinician's review loop in Italian and in Spanish, in real headless Chromium whose locale (its
Accept-Language) is the language: the login, the review index, the note list, the queue, a note
with its keyboard help, guideline and JavaScript messages, peaks decided by keyboard, the queue's
end, a validation round and its results. Every page says <html lang> of the language, shows no
English word except its data (tests/browser/language.py) and no text running out of its box,
and leaves a full-page screenshot in test-artifacts/i18n/<language>/. The keyboard help lists the
keys of the English page. In English the same walk checks the checker: it finds English words
on every page.
"""

import pytest
from django.test import Client

from tests.browser import language
from tests.projects import default_project
from webapp.review.models import PeakDecision, ValidationSet

pytestmark = pytest.mark.django_db(transaction=True)

# The ward's data in each language: notes, a task and its guideline, as a ward would write them.
WARD = {
    "en": {
        "texts": [
            "Pt 67 y.o. male, with wife.\nHR 130 bpm, tachycardic; febrile 38.5 C.\n\nPacemaker since 2019. BP 110/70.",
            "Pt 71 y.o. female.\nHR 128 bpm, tachycardic; afebrile.\n\nNo pacemaker. BP 120/80.",
        ],
        "peaks": [("130", "tachycardic"), ("128", "tachycardic")],
        "corpus": "ward",
        "task": ("heart-rate", "heart rate"),
        "guideline": "Only the **current** rate, not the history.",
        "validation": "march",
    },
    "it": {
        "texts": [
            "Pz 67 anni, maschio, con la moglie.\nFC 130 bpm, tachicardico; febbrile 38,5 C.\n\n"
            "Portatore di pacemaker dal 2019. PA 110/70.",
            "Pz 71 anni, femmina.\nFC 128 bpm, tachicardica; apiretica.\n\nNessun pacemaker. PA 120/80.",
        ],
        "peaks": [("130", "tachicardico"), ("128", "tachicardica")],
        "corpus": "reparto",
        "task": ("frequenza-cardiaca", "frequenza cardiaca"),
        "guideline": "Solo la frequenza **attuale**, non l'anamnesi.",
        "validation": "marzo",
    },
    "es": {
        "texts": [
            "Pac. 67 años, varón, con su esposa.\nFC 130 lpm, taquicárdico; febril 38,5 C.\n\n"
            "Portador de marcapasos desde 2019. PA 110/70.",
            "Pac. 71 años, mujer.\nFC 128 lpm, taquicárdica; afebril.\n\nSin marcapasos. PA 120/80.",
        ],
        "peaks": [("130", "taquicárdico"), ("128", "taquicárdica")],
        "corpus": "sala",
        "task": ("frecuencia-cardiaca", "frecuencia cardíaca"),
        "guideline": "Solo la frecuencia **actual**, no los antecedentes.",
        "validation": "marzo",
    },
}


@pytest.fixture
def ward(db, lang, researcher):
    """Two notes of the ward in `lang`, one task with a guideline, a map of two peaks on each note
    under a sharp peak setting, and a validation round of two settings over both notes."""
    from tests.webapp.review.fabricate import add_map
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.corpus.tasks import edit_task
    from webapp.pipeline.models import ModelVersion, PeakProfile

    data = WARD[lang]
    corpus = Corpus.objects.create(project=default_project(), name=data["corpus"], language=lang)
    notes = [Note.objects.create(corpus=corpus, external_id=f"n{i}", text=t) for i, t in enumerate(data["texts"], 1)]
    slug, description = data["task"]
    task = Task.objects.create(slug=slug, description=description, options=["y", "n"])
    edit_task(task, {"guideline": data["guideline"]}, actor=researcher)
    model = ModelVersion.objects.create(name="llama-base", family="llama", path="llama-base")
    profile = PeakProfile.objects.create(name="p1", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    for note, words in zip(notes, data["peaks"], strict=True):
        add_map(note, task, model, dict.fromkeys(words, 0.9))
    query = f"task={task.pk}&model={model.pk}&method=attnlrp&template=en&profile={profile.pk}"
    validation = ValidationSet.objects.create(
        corpus=corpus,
        model_version=model,
        method="attnlrp",
        template="en",
        name=data["validation"],
        grid=[
            {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4},
            {"kernel_size": 1, "sigma": 1.0, "lower": 0.5, "upper": 0.95},
        ],
        items=[[notes[0].pk, task.pk], [notes[1].pk, task.pk]],
    )
    return {"corpus": corpus, "notes": notes, "task": task, "query": query, "validation": validation}


def english_keys(user, url) -> list[str]:
    """The keys of the keyboard help of the page at `url` in English (the Django test client)."""
    client = Client(HTTP_ACCEPT_LANGUAGE="en")
    client.force_login(user)
    return language.keys_of_help(client.get(url).content.decode())


def test_the_clinicians_review_loop_speaks_the_language(lang, lang_page, clinician, ward):
    page, corpus, notes = lang_page, ward["corpus"], ward["notes"]
    walk = language.Walk(page, lang)
    check = walk.check

    page.goto("/login/")
    check("login")
    language.log_in(page, clinician)
    check("home")
    page.goto("/review/")
    check("review-index")
    page.goto(f"/review/{corpus.pk}/?{ward['query']}")
    check("note-list")

    # The queue serves the first note; at the first note, `p` says so (a JavaScript message).
    page.goto(f"/review/{corpus.pk}/queue/?{ward['query']}")
    page.wait_for_url(f"**/notes/{notes[0].pk}/**")
    page.wait_for_selector("#note-text mark.peak.current")
    page.wait_for_selector("#preview .preview")  # the corpus preview, loaded after the page
    check("note")
    page.keyboard.press("p")
    page.wait_for_selector("#key-status")
    check("note-key-message")

    # The keyboard help: in the language, the keys of the English page.
    page.keyboard.press("?")
    page.wait_for_selector("#help", state="visible")
    check("note-help")
    assert page.locator("#help kbd").all_inner_texts() == english_keys(clinician, page.url)
    page.keyboard.press("Escape")
    assert not page.locator("#help").is_visible()

    page.keyboard.press("g")
    page.wait_for_selector("#guideline .guideline-text", state="visible")
    check("note-guideline")

    page.keyboard.press("a")  # accept the first peak, on to the second
    page.wait_for_selector("#peak-0.mine-accept")
    page.keyboard.press("x")  # reject the second
    page.wait_for_selector("#peak-1.mine-reject")
    page.locator("#peak-item-1 summary").click()  # the form to adjust a peak and add a note
    page.wait_for_selector("#peak-item-1 textarea", state="visible")
    check("note-decided")
    page.locator("#peak-item-1 summary").click()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")

    page.keyboard.press("q")  # the next pair of the queue: the second note
    page.wait_for_url(f"**/notes/{notes[1].pk}/**")
    page.wait_for_selector("#note-text mark.peak.current")
    page.keyboard.press("a")
    page.wait_for_selector("#peak-0.mine-accept")
    page.keyboard.press("a")
    page.wait_for_selector("#peak-1.mine-accept")
    page.keyboard.press("q")  # nothing left
    page.wait_for_url("**/queue/**")
    check("queue-done")
    assert sorted(PeakDecision.objects.values_list("decision", flat=True)) == ["accept", "accept", "accept", "reject"]

    # A validation round, answered by keyboard, and its results.
    vset = ward["validation"]
    page.goto(f"/review/validation/{vset.pk}/")
    page.wait_for_selector("#validation-round")
    check("validation")
    page.keyboard.press("?")
    page.wait_for_selector("#help", state="visible")
    check("validation-help")
    assert page.locator("#help kbd").all_inner_texts() == english_keys(clinician, page.url)
    page.keyboard.press("Escape")
    for answer in "ynynyn":  # two settings of two notes (a highlight two settings share is asked once)
        if page.url.endswith("/results/"):
            break
        page.wait_for_selector("#validation-round")
        with page.expect_navigation():  # each answer posts the form and loads the next item
            page.keyboard.press(answer)
        page.wait_for_load_state()
    page.wait_for_url(f"**/validation/{vset.pk}/results/")
    page.wait_for_selector("#recommendation")
    check("validation-results")
    page.click("#adopt-button")
    page.wait_for_selector(".messages")
    check("validation-adopted")

    assert not walk.problems(), walk.report()
