"""ml.span_agreement's alpha per label (the label against the rest, on tokens): a worked example
by hand and the `krippendorff` package, the documents a label counts on, its interval, the
diagnostics of a label too rare to measure, and the CLI's JSON keeping its older keys."""

from __future__ import annotations

import json
import math
import re

import krippendorff
import numpy as np
import pytest

from ml.__main__ import main
from ml.span_agreement import Span, SpanSettings, span_agreement

FAST = SpanSettings(n_resamples=200)

# the worked example of test_span_agreement.py: d1 "chest pain and fever since monday",
# d2 "no cough"; ann marks chest pain, fever, cough (SYMPTOM); bob pain, fever (SYMPTOM) and
# monday (TIME); both read both documents.
TEXTS = {"d1": "chest pain and fever since monday", "d2": "no cough"}
WORKED = [
    Span("d1", "ann", "SYMPTOM", 0, 10),
    Span("d1", "ann", "SYMPTOM", 15, 20),
    Span("d2", "ann", "SYMPTOM", 3, 8),
    Span("d1", "bob", "SYMPTOM", 6, 10),
    Span("d1", "bob", "SYMPTOM", 15, 20),
    Span("d1", "bob", "TIME", 27, 33),
]
ANNOTATED = {"d1": {"ann", "bob"}, "d2": {"ann", "bob"}}


def _package_alpha(rows: list[list[str]]) -> float:
    codes: dict[str, int] = {}
    data = np.array([[codes.setdefault(v, len(codes)) for v in row] for row in rows], dtype=float)
    return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")


def test_alpha_per_label_matches_the_hand_computation_and_the_krippendorff_package():
    result = span_agreement(WORKED, ANNOTATED, TEXTS, FAST)
    # tokens chest pain and fever since monday no cough, SYMPTOM or not ("O"):
    ann = ["S", "S", "O", "S", "O", "O", "O", "S"]
    bob = ["O", "S", "O", "S", "O", "O", "O", "O"]  # bob's TIME on monday is "O" for SYMPTOM
    # n = 16 values: S 6, O 10; chest and cough disagree, each (4 - 1 - 1) / 1 = 2:
    # alpha = 1 - 15 x 4 / (256 - 36 - 100) = 1/2
    symptom = result.per_label["SYMPTOM"]
    assert symptom.alpha_tokens == pytest.approx(1 / 2)
    assert symptom.alpha_tokens == pytest.approx(_package_alpha([ann, bob]))
    # TIME: only bob's monday, T 1 and O 15: 1 - 15 x 2 / (256 - 1 - 225) = 0
    time = result.per_label["TIME"]
    assert time.alpha_tokens == pytest.approx(0)
    assert time.alpha_tokens == pytest.approx(_package_alpha([["O"] * 8, ["O"] * 5 + ["T", "O", "O"]]))
    assert symptom.tokens == time.tokens == 8
    # the micro alpha is unchanged (several values at once)
    assert result.alpha_tokens == pytest.approx(8 / 23)


def test_alpha_per_label_equals_the_package_on_random_documents_with_labels_of_each_document():
    rng = np.random.default_rng(11)
    texts = {f"d{i}": " ".join(f"w{j}" for j in range(int(rng.integers(5, 30)))) for i in range(30)}
    annotators = ["a", "b", "c"]
    labels_of = {doc: {"X", "Y"} if i % 3 else {"X"} for i, doc in enumerate(texts)}  # Y on two thirds
    spans, annotated = [], {}
    for doc, text in texts.items():
        words = [(m.start(), m.end()) for m in re.finditer(r"\w+", text)]
        readers = [a for a in annotators if rng.random() < 0.8]
        annotated[doc] = set(readers)
        for a in readers:
            for _ in range(int(rng.integers(0, 4))):
                i = int(rng.integers(0, len(words)))
                j = min(len(words) - 1, i + int(rng.integers(0, 3)))
                label = sorted(labels_of[doc])[int(rng.integers(0, len(labels_of[doc])))]
                span = Span(doc, a, label, words[i][0], words[j][1])
                if span not in spans:
                    spans.append(span)
    result = span_agreement(spans, annotated, texts, FAST, labels_of=labels_of)
    for label in ("X", "Y"):
        columns = []
        for doc, text in texts.items():
            if len(annotated[doc]) < 2 or label not in labels_of[doc]:
                continue
            for m in re.finditer(r"\w+|[^\w\s]", text):
                covered = {
                    s.annotator
                    for s in spans
                    if s.doc == doc and s.label == label and s.start < m.end() and m.start() < s.end
                }
                columns.append([np.nan if a not in annotated[doc] else float(a in covered) for a in annotators])
        data = np.array(columns).T
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        # both are sums of at most a few thousand small integers in float64 before one division
        assert result.per_label[label].alpha_tokens == pytest.approx(expected, abs=1e-12)
        assert result.per_label[label].tokens == data.shape[1]
    assert result.per_label["Y"].tokens < result.per_label["X"].tokens == result.tokens


def test_the_interval_of_a_labels_alpha_is_seeded_over_documents_and_holds_the_point():
    docs = {f"n{i}": "a b c d e f" for i in range(40)}
    spans = []
    for i, doc in enumerate(docs):
        spans.append(Span(doc, "x", "L", 0, 3))
        spans.append(Span(doc, "y", "L", 0, 3 if i % 4 else 1))
        spans.append(Span(doc, "x", "M", 8, 11))
    first = span_agreement(spans, None, docs, FAST)
    again = span_agreement(spans, None, docs, FAST)
    low, high = first.per_label["L"].alpha_tokens_ci
    assert low <= first.per_label["L"].alpha_tokens <= high and low < high
    assert first.per_label["L"].alpha_tokens_ci == again.per_label["L"].alpha_tokens_ci
    # with one label only on a document, its alpha is the micro alpha
    alone = span_agreement([s for s in spans if s.label == "L"], None, docs, FAST)
    assert alone.per_label["L"].alpha_tokens == pytest.approx(alone.alpha_tokens)
    assert alone.per_label["L"].alpha_tokens_ci == alone.alpha_tokens_ci
    # y never marks M: its alpha is below zero's neighbourhood, and not the micro figure
    assert first.per_label["M"].alpha_tokens < 0.1
    assert first.per_label["M"].alpha_tokens != pytest.approx(first.alpha_tokens)


def test_the_diagnostics_say_a_label_is_too_rare_and_when_its_alpha_is_undefined():
    spans = [
        Span("d1", "ann", "SYMPTOM", 0, 10),
        Span("d1", "bob", "SYMPTOM", 6, 10),
        Span("d3", "solo", "DRUG", 0, 4),  # on a document nobody else read
    ]
    result = span_agreement(spans, None, {**TEXTS, "d3": "aspirin"}, FAST)
    text = " ".join(result.diagnostics)
    assert "Label 'SYMPTOM' has 2 spans (fewer than 10): too rare to measure; its F1 and alpha are hints" in text
    assert "Label 'DRUG' covers no token of the documents two or more annotators annotated for it" in text
    assert math.isnan(result.per_label["DRUG"].alpha_tokens)
    assert result.to_dict()["per_label"]["DRUG"]["alpha_tokens_ci"] == [None, None]
    assert not math.isnan(result.per_label["SYMPTOM"].alpha_tokens)


def test_the_cli_json_keeps_its_keys_and_adds_alpha_per_label(tmp_path, capsys):
    lines = [{"doc": s.doc, "annotator": s.annotator, "label": s.label, "start": s.start, "end": s.end} for s in WORKED]
    lines[0]["text"], lines[2]["text"] = TEXTS["d1"], TEXTS["d2"]
    lines.append({"doc": "d2", "annotator": "bob"})  # bob read d2 and marked nothing
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    assert main(["agreement", "--spans", str(path), "--resamples", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    symptom = out["per_label"]["SYMPTOM"]
    assert set(symptom) == {
        "spans", "f1_exact", "f1_exact_ci", "f1_overlap", "f1_overlap_ci", "alpha_tokens", "alpha_tokens_ci", "tokens"
    }  # fmt: skip
    assert symptom["alpha_tokens"] == pytest.approx(1 / 2) and len(symptom["alpha_tokens_ci"]) == 2
    assert {"f1_exact", "f1_overlap", "alpha_tokens", "alpha_tokens_ci", "pairs", "diagnostics"} <= set(out)


def test_a_label_on_every_token_is_said_to_cover_every_token_not_none():
    """Every annotator marks every token: alpha is undefined for want of any "O", and the
    diagnostic says so rather than that the label covers no token."""
    docs = {"d1": "a b", "d2": "c d"}
    spans = [Span(doc, who, "X", 0, 3) for doc in docs for who in ("ann", "bob")]
    result = span_agreement(spans, None, docs, FAST)
    text = " ".join(result.diagnostics)
    assert math.isnan(result.per_label["X"].alpha_tokens) and result.per_label["X"].tokens == 4
    assert "Label 'X' covers every token of the documents two or more annotators annotated for it" in text
    assert "covers no token" not in text
