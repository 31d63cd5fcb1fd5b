"""An XMI file's and a gold mapping's problems are kept as templates and values like every other
import problem: the page shows them in the reader's language, the file, the line, the layer and the
entry as they are; `str()` (the API, the download, the command line) stays the English."""

import pytest
from django.utils import translation

from webapp.corpus import gold, problem_text
from webapp.lib.formats import ReadOptions, get_format
from webapp.lib.formats.document import Document
from webapp.lib.formats.mapping import MappingError, parse_mapping
from webapp.lib.problems import Problems

SHOWN = {
    "en": [
        "empty: holds no .xmi or .xml files",
        "n1.xmi: no annotation layer 'Missing' (its custom layers: DsmDecision, DsmGold, DsmPeak)",
        "bad.xmi line 1: not well-formed XML ({reason})",
    ],
    "it": [
        "empty: non contiene file .xmi o .xml",
        "n1.xmi: nessun livello di annotazione 'Missing' (i suoi livelli personalizzati: DsmDecision, DsmGold, "
        "DsmPeak)",
        "bad.xmi riga 1: XML non ben formato ({reason})",
    ],
    "es": [
        "empty: no contiene archivos .xmi o .xml",
        "n1.xmi: ninguna capa de anotación 'Missing' (sus capas personalizadas: DsmDecision, DsmGold, DsmPeak)",
        "bad.xmi línea 1: XML mal formado ({reason})",
    ],
}
MAPPING = {
    "en": "mapping entry 2: 'fever' is mapped twice",
    "it": "voce di mappatura 2: 'fever' è mappata due volte",
    "es": "entrada 2 de la correspondencia: 'fever' aparece dos veces",
}


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


def xmi_problems(tmp_path) -> list[dict]:
    xmi = get_format("xmi")
    (tmp_path / "empty").mkdir()
    good = tmp_path / "good"
    good.mkdir()
    xmi.write([Document("n1", "Febbre alta.")], good)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bad.xmi").write_text("<xmi:XMI")
    problems = Problems()
    for folder, layer in ((tmp_path / "empty", ""), (good, "Missing"), (bad, "")):
        list(xmi.read(folder, ReadOptions(layer=layer), problems))
    return [p.as_json() for p in problems.kept]


@pytest.mark.parametrize("lang", ["en", "it", "es"])
def test_xmi_problems_in_the_reader_s_language(tmp_path, lang):
    stored = xmi_problems(tmp_path)
    reason = stored[2]["params"]["reason"]  # lxml's own words, as they are
    english = [problem_text.english(p) for p in stored]
    assert english == [line.format(reason=reason) for line in SHOWN["en"]]
    with translation.override(lang):
        assert problem_text.shown_lines(stored) == [line.format(reason=reason) for line in SHOWN[lang]]


@pytest.mark.parametrize("lang", ["en", "it", "es"])
def test_a_mapping_s_refusal_in_the_reader_s_language(lang):
    with pytest.raises(MappingError) as refused:
        parse_mapping(["fever=fever:yes", "fever=fever:no"])
    assert str(refused.value) == MAPPING["en"]
    problems = Problems()
    problems.add("gold.zip", None, refused.value.said)
    with translation.override(lang):
        assert problem_text.shown(problems.kept[0].as_json()) == f"gold.zip: {MAPPING[lang]}"


def test_spans_without_the_feature_options_that_do_not_go_together_in_italian():
    said = gold._missing_feature_problem("default", "", "entityID")
    assert str(said) == "spans without the feature are to be given a default label: give it"
    with translation.override("it"):
        assert said.render(translation.gettext) == (
            "ai segmenti senza la feature va data un'etichetta predefinita: indicatela"
        )
