"""A review row's name (its __str__: the admin's changelists and links) is in the active language, its
ids, names and stored codes kept; in English it reads as it always did. The Italian cases pass once
the catalogs hold the strings sent to the merge (issue 42)."""

import pytest
from django.utils import translation

from webapp.review import models as m


def rows():
    return {
        "decision": m.PeakDecision(reviewer_id=2, decision="accept", note_id=5, task_id=6, start=10, end=14),
        "set": m.ValidationSet(name="ward sample", items=[{"note": 1}, {"note": 2}]),
        "set_of_one": m.ValidationSet(name="ward sample", items=[{"note": 1}]),
        "judgement": m.ValidationJudgement(validation_set_id=1, note_id=2, setting=0, reasonable=True),
        "sample": m.MapSample(map_ids=[1, 2, 3], population=40),
        "round_reviewer": m.RoundReviewer(reviewer_id=2, round_id=8),
        "pair": m.RoundPair(round_id=8, position=3, note_id=5, task_id=6),
        "claim": m.RoundClaim(reviewer_id=2, pair_id=9, done=False),
        "claim_done": m.RoundClaim(reviewer_id=2, pair_id=9, done=True),
        "adjudication": m.Adjudication(decision="reject", note_id=5, task_id=6, start=10, end=14),
        "verdict": m.ValidationVerdict(validation_set_id=1, note_id=2, setting=0, reasonable=False),
        "peaks": m.MapPeaks(n_peaks=1, map_id=4, params_key="0123456789abcdef"),
        "peak": m.StoredPeak(start=3, end=9, peaks_id=11),
        "span": m.AddedSpan(start=3, end=9, note_id=5, task_id=6, reviewer_id=2),
        "span_adjudication": m.SpanAdjudication(decision="accept", start=3, end=9, note_id=5, round_id=8),
        "report": m.ReportSnapshot(scope="p1", status="done"),
    }


ENGLISH = {
    "decision": "2 accept note=5 task=6 [10, 14)",
    "set": "ward sample (2 notes)",
    "set_of_one": "ward sample (1 notes)",
    "judgement": "set 1 note 2 setting 0: True",
    "sample": "sample of 3 / 40 maps",
    "round_reviewer": "2 in round 8",
    "pair": "round 8 #3: note 5 task 6",
    "claim": "2 on pair 9",
    "claim_done": "2 on pair 9 (done)",
    "adjudication": "reject note=5 task=6 [10, 14)",
    "verdict": "set 1 note 2 setting 0: False (curator)",
    "peaks": "1 peaks of map 4 under 01234567",
    "peak": "[3, 9) of 11",
    "span": "span [3, 9) note=5 task=6 by 2",
    "span_adjudication": "accept added spans [3, 9) note=5 round=8",
    "report": "report p1 (done)",
}

ITALIAN = {
    "decision": "2 accetta nota=5 quesito=6 [10, 14)",
    "set": "ward sample (2 note)",
    "set_of_one": "ward sample (1 nota)",
    "judgement": "set 1 nota 2 impostazione 0: Vero",
    "sample": "campione di 3 / 40 mappe",
    "round_reviewer": "2 nel ciclo 8",
    "pair": "ciclo 8 #3: nota 5 quesito 6",
    "claim": "2 sulla coppia 9",
    "claim_done": "2 sulla coppia 9 (completata)",
    "adjudication": "rifiuta nota=5 quesito=6 [10, 14)",
    "verdict": "set 1 nota 2 impostazione 0: Falso (curatore)",
    "peaks": "1 picco della mappa 4 con 01234567",
    "peak": "[3, 9) di 11",
    "span": "segmento [3, 9) nota=5 quesito=6 di 2",
    "span_adjudication": "accetta segmenti aggiunti [3, 9) nota=5 ciclo=8",
    "report": "rapporto p1 (completata)",
}


@pytest.mark.parametrize("name", ENGLISH)
def test_in_english_a_row_reads_as_it_always_did(name):
    with translation.override("en"):
        assert str(rows()[name]) == ENGLISH[name]


@pytest.mark.parametrize("name", ITALIAN)
def test_in_italian_a_row_is_named_in_italian_with_its_values_as_stored(name):
    with translation.override("it"):
        assert str(rows()[name]) == ITALIAN[name]
