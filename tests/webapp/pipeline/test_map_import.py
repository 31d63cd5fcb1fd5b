"""Relevance maps computed elsewhere (webapp.pipeline.mapimport, manage.py import_maps): a map the
product computed, exported to JSONL and imported as method "imported", scores exactly as the
product's own in an evaluation (localisation, specificity, faithfulness); a file whose tokens do not
match the model's tokenizer, or with a bad line, is refused naming the line and nothing is written."""

import io
import json
import math

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from ml.localisation import STAT_KEYS
from ml.relevance import IMPORTED, RelevanceConfig
from ml.relevance import imported as fmt
from tests.webapp.evaluation.factories import make_annotated_corpus
from tests.webapp.evaluation.factories import spec as evaluation_spec
from tests.webapp.pipeline.factories import make_model_version
from webapp.audit.models import AuditEvent
from webapp.evaluation import evaluations, running
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline import mapimport, modelcache
from webapp.pipeline.mapimport import MapImportError, import_maps
from webapp.pipeline.models import MapImport, RelevanceMap

PRODUCT = RelevanceConfig(method="grad_input")  # explain next, template en: what the evaluation computes
IMPORTED_CONFIG = RelevanceConfig(method=IMPORTED)


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama model and tokenizer, saved once (no download)."""
    from tests.ml.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama-map-import")
    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def real_model():
    import torch

    torch.set_num_threads(1)
    yield
    modelcache.clear()


def run(evaluation, get_model):
    claimed = evaluations.claim(evaluation.pk, worker="test")
    outcome = running.execute(claimed, get_model)
    return outcome, RelevanceEvaluation.objects.get(pk=evaluation.pk)


@pytest.fixture
def computed(db, tiny_model_dir, real_model):
    """(corpus, tasks, model version): the tiny model's gradient x input maps of the annotated
    pairs, computed and stored by an evaluation (the product's own code)."""
    corpus, tasks = make_annotated_corpus()
    model_version = make_model_version(str(tiny_model_dir))
    evaluation = evaluations.launch(evaluation_spec(corpus, model_version), enqueue=False)
    outcome, evaluation = run(evaluation, lambda: modelcache.loaded_model(model_version))
    assert outcome == "done", evaluation.error
    assert RelevanceMap.objects.for_config("grad_input", "en", PRODUCT.key).count() == len(evaluation.pairs) > 5
    return corpus, tasks, model_version


def product_maps(model_version):
    rows = (
        RelevanceMap.objects.for_config("grad_input", "en", PRODUCT.key)
        .filter(model_version=model_version)
        .order_by("note_id", "task_id")
        .with_arrays("note__external_id", "note__text", "task__slug")
    )
    return list(rows)


def export(model_version, path, form="text", tokenizer=None):
    """The product's maps as an outside tool would write them: tokens as the note's text at each
    token's offsets ("text"), the tokenizer's own strings ("raw"), or character spans ("spans")."""
    lines = []
    for external_id, text, slug, (offsets, scores) in product_maps(model_version):
        line = {"note": external_id, "task": slug}
        if form == "spans":
            line["spans"] = [[a, b, float(s)] for (a, b), s in zip(offsets.tolist(), scores)]
        elif form == "raw":
            expected = fmt.note_tokens(tokenizer, text, "x", PRODUCT, max_note_tokens=None)
            assert np.array_equal(expected.offsets, offsets)
            line["tokens"] = [accepted[0] for accepted in expected.accepted]
            line["scores"] = [float(s) for s in scores]
        else:
            line["tokens"] = [text[a:b] for a, b in offsets.tolist()]
            line["scores"] = [float(s) for s in scores]
        lines.append(line)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def imported_maps(model_version):
    return {
        (n, t): arrays
        for n, t, arrays in RelevanceMap.objects.for_config(IMPORTED, "en", IMPORTED_CONFIG.key)
        .filter(model_version=model_version)
        .with_arrays("note_id", "task_id")
    }


def statistics(group):
    return {k: v for k, v in group.items() if k in STAT_KEYS}


def same(a, b):
    """Equal numbers, NaN equal to NaN, in nested dicts and lists."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.mark.slow
def test_an_imported_map_scores_exactly_as_the_same_map_computed_in_the_product(computed, tmp_path):
    corpus, tasks, model_version = computed
    n = RelevanceMap.objects.count()
    outcome = import_maps(
        export(model_version, tmp_path / "maps.jsonl"), corpus=corpus, model_version=model_version, source="export"
    )
    assert outcome.created and outcome.map_import.maps == n and outcome.map_import.config_key == IMPORTED_CONFIG.key
    ours = {
        (n, t): arrays
        for n, t, arrays in RelevanceMap.objects.filter(config__method="grad_input").with_arrays("note_id", "task_id")
    }
    theirs = imported_maps(model_version)
    assert theirs.keys() == ours.keys()
    for pair, (offsets, scores) in ours.items():
        assert np.array_equal(theirs[pair][0], offsets) and np.array_equal(theirs[pair][1], scores)
    event = AuditEvent.objects.get(action=AuditEvent.Action.IMPORT_MAPS)
    assert event.details["maps"] == n and event.object_id == str(outcome.map_import.pk)

    both = evaluations.launch(
        evaluation_spec(corpus, model_version, methods=["grad_input", IMPORTED], faithfulness=True), enqueue=False
    )
    result, evaluation = run(both, lambda: modelcache.loaded_model(model_version))
    assert result == "done", evaluation.error
    result = evaluation.result
    groups = {g["method"]: g for g in result["groups"]}
    assert groups.keys() == {"grad_input", IMPORTED} and groups[IMPORTED]["n_pairs"] == n
    assert same(statistics(groups[IMPORTED]), statistics(groups["grad_input"]))
    assert result["missing"] == {PRODUCT.key: 0, IMPORTED_CONFIG.key: 0}
    assert same(result["specificity"][IMPORTED_CONFIG.key], result["specificity"][PRODUCT.key])
    faithful_ours, faithful_theirs = result["faithfulness"][PRODUCT.key], result["faithfulness"][IMPORTED_CONFIG.key]
    assert faithful_theirs["n_pairs"] == n
    assert same(faithful_theirs["methods"][IMPORTED], faithful_ours["methods"]["grad_input"])
    assert same(faithful_theirs["random"], faithful_ours["random"])


@pytest.mark.slow
def test_spans_and_the_tokenizers_own_strings_give_the_same_maps(computed, tmp_path):
    from transformers import AutoTokenizer

    corpus, _, model_version = computed
    tokenizer = AutoTokenizer.from_pretrained(model_version.path)
    import_maps(export(model_version, tmp_path / "spans.jsonl", "spans"), corpus=corpus, model_version=model_version)
    by_spans = imported_maps(model_version)
    raw = export(model_version, tmp_path / "raw.jsonl", "raw", tokenizer)
    import_maps(raw, corpus=corpus, model_version=model_version, replace=True)
    by_tokens = imported_maps(model_version)
    assert by_spans.keys() == by_tokens.keys() and len(by_spans) == len(product_maps(model_version))
    for pair, (offsets, scores) in by_spans.items():
        assert np.array_equal(by_tokens[pair][0], offsets) and np.array_equal(by_tokens[pair][1], scores)
    assert MapImport.objects.count() == 2


@pytest.mark.slow
def test_a_misaligned_import_is_refused_with_the_line_and_nothing_is_written(computed, tmp_path):
    corpus, _, model_version = computed
    good = export(model_version, tmp_path / "maps.jsonl").read_text().splitlines()
    third = json.loads(good[2])
    words = third["tokens"][:]
    words[3] = words[3] + words[4]  # two tokens given as one: every later position shifts
    del words[4]
    third.update(tokens=words, scores=third["scores"][:-1])
    fifth = json.loads(good[4])
    fifth.update(tokens=fifth["tokens"][:-1], scores=fifth["scores"][:-1])  # one token short
    lines = [*good[:2], json.dumps(third), good[3], json.dumps(fifth), *good[5:]]
    path = tmp_path / "misaligned.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MapImportError) as refused:
        import_maps(path, corpus=corpus, model_version=model_version)
    (line3, reason3), (line5, reason5) = refused.value.problems
    assert (line3, line5) == (3, 5)
    assert reason3.startswith("tokens differ from the model's tokenizer at token 3: expected a token of ")
    n = len(json.loads(good[4])["tokens"])
    assert (
        reason5 == f"tokens differ from the model's tokenizer at token {n - 1}: {n} note tokens expected, {n - 1} given"
    )
    assert "nothing written" in str(refused.value) and "line 3: tokens differ" in str(refused.value)
    note = corpus.notes.get(external_id=third["note"]).text
    assert note[:20] not in str(refused.value)
    assert not MapImport.objects.exists() and not imported_maps(model_version)
    refusal = AuditEvent.objects.get(action=AuditEvent.Action.IMPORT_REFUSED)
    assert refusal.details["kind"] == "relevance maps" and refusal.details["problems"] == 2


@pytest.fixture
def small(db, tiny_model_dir):
    """(corpus, tasks, model version, a good line as a dict) without computing any map."""
    corpus, tasks = make_annotated_corpus(n_notes=3)
    model_version = make_model_version(str(tiny_model_dir))
    note = corpus.notes.order_by("pk").first()
    tokenizer = mapimport.tokenizer_of(model_version)
    expected = fmt.note_tokens(
        tokenizer.tokenizer, note.text, tasks[0].description, IMPORTED_CONFIG, max_note_tokens=tokenizer.max_note_tokens
    )
    good = {
        "note": note.external_id,
        "task": tasks[0].slug,
        "tokens": [note.text[a:b] for a, b in expected.offsets.tolist()],
        "scores": [float(i % 7) for i in range(len(expected.offsets))],
    }
    return corpus, tasks, model_version, good


def write(path, lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_bad_lines_are_refused_naming_each_line_and_nothing_is_written(small, tmp_path):
    corpus, tasks, model_version, good = small
    other_task = {**good, "task": tasks[1].description}  # a task by its description
    lines = [
        good,
        {k: v for k, v in good.items() if k != "task"},
        {**good, "note": "no-such-note"},
        {**good, "task": "no-such-task"},
        json.dumps({**good, "task": tasks[1].slug, "scores": good["scores"][:-1] + [float("nan")]}),
        "{not json",
        {**good, "scores": good["scores"][:-1]},
        other_task,
        good,
    ]
    with pytest.raises(MapImportError) as refused:
        import_maps(write(tmp_path / "bad.jsonl", lines), corpus=corpus, model_version=model_version)
    assert [(n, reason.split(" (")[0].split(":")[0]) for n, reason in refused.value.problems] == [
        (2, "missing field task"),
        (5, "scores"),
        (6, "invalid JSON"),
        (7, f"{len(good['tokens'])} tokens but {len(good['tokens']) - 1} scores"),
        (3, "unknown note"),
        (4, "unknown task"),
        (9, "the same note and task as line 1"),
    ]
    reasons = dict(refused.value.problems)
    assert reasons[5] == f"scores: score {len(good['scores']) - 1} is not finite (NaN or infinity)"
    assert not MapImport.objects.exists() and not RelevanceMap.objects.exists()


def test_reimporting_the_same_file_writes_nothing_and_another_file_does_not_overwrite(small, tmp_path):
    corpus, _, model_version, good = small
    path = write(tmp_path / "one.jsonl", [good])
    first = import_maps(path, corpus=corpus, model_version=model_version, source="captum IG")
    again = import_maps(path, corpus=corpus, model_version=model_version)
    assert first.created and not again.created and again.map_import == first.map_import
    assert RelevanceMap.objects.count() == 1 and MapImport.objects.count() == 1
    (stored,) = imported_maps(model_version).values()
    assert stored[1].max() == 1.0 and np.allclose(stored[1], np.asarray(good["scores"]) / 6, atol=1e-3)
    changed = write(tmp_path / "two.jsonl", [{**good, "scores": list(reversed(good["scores"]))}])
    with pytest.raises(MapImportError, match="line 1: this note and task already have an imported map"):
        import_maps(changed, corpus=corpus, model_version=model_version)
    assert import_maps(changed, corpus=corpus, model_version=model_version, replace=True).created
    assert RelevanceMap.objects.count() == 1
    (replaced,) = imported_maps(model_version).values()
    assert np.array_equal(replaced[1], stored[1][::-1])


def test_the_command_imports_and_says_what_it_refused(small, tmp_path):
    corpus, _, model_version, good = small
    path = write(tmp_path / "maps.jsonl", [good])
    out = io.StringIO()
    args = ["--model-version", str(model_version.pk), "--corpus", corpus.name, str(path)]
    call_command("import_maps", *args, "--source", "inseq", stdout=out)
    assert f"Imported 1 maps into model version {model_version.name} as configuration {IMPORTED_CONFIG.key}" in (
        out.getvalue()
    )
    call_command("import_maps", *args, stdout=out)
    assert "This file was imported already" in out.getvalue()
    bad = write(tmp_path / "bad.jsonl", [{**good, "note": "nope"}])
    with pytest.raises(CommandError, match="line 1: unknown note"):
        call_command("import_maps", "--model-version", str(model_version.pk), "--corpus", corpus.name, str(bad))
    with pytest.raises(CommandError, match="template"):
        call_command("import_maps", *args, "--template", "no {note} here")


def test_an_evaluation_never_computes_imported_maps_it_lacks(small):
    corpus, _, model_version, _ = small

    def compute(*args):
        raise AssertionError("imported maps are never computed")

    evaluation = evaluations.launch(evaluation_spec(corpus, model_version, methods=[IMPORTED]), enqueue=False)
    claimed = evaluations.claim(evaluation.pk, worker="test")
    assert running.execute(claimed, lambda: None, compute) == "done"
    evaluation.refresh_from_db()
    assert evaluation.result["missing"] == {IMPORTED_CONFIG.key: len(evaluation.pairs)}
