"""The curator's excerpt shows what the reviewers saw: the round's map as heat and the task's gold
evidence underlined, around the disputed peak (it was plain text)."""

import re

from webapp.corpus.models import Annotation

from .fabricate import word_span
from .test_views_rounds import curator, decide_pair, second, ward_round  # noqa: F401 (fixtures)


def test_the_excerpt_has_the_rounds_heat_and_the_gold_underline(client_for, ward_round, clinician, second, curator):  # noqa: F811
    pair = ward_round.pairs.get(position=0)
    hr = word_span(pair.note.text, "HR")
    Annotation.objects.create(note=pair.note, task=pair.task, label="y", evidence=[list(hr)], annotator_name="gold")
    decide_pair(ward_round, pair, clinician, ["accept", "accept"])
    decide_pair(ward_round, pair, second, ["reject", "accept"])
    page = client_for(curator).get(f"/review/rounds/{ward_round.pk}/adjudicate/").content.decode()
    excerpt = re.search(r'<div class="notetext" id="excerpt">(.*?)</div>', page, re.S).group(1)
    start, end = pair.peaks[0]
    peak = re.search(r'<mark class="peak current"[^>]*>(.*?)</mark>', excerpt, re.S).group(1)
    assert re.sub(r"<[^>]+>", "", peak) == pair.note.text[start:end]
    assert re.search(r'<span class="r[1-7]"[^>]*>130</span>', excerpt)  # the heat the reviewers had
    assert re.search(r'<span class="r\d g"[^>]*>HR</span>', excerpt)  # gold evidence underlined
    assert '<span class="legend-key"><span class="g">gold evidence</span> underlined</span>' in page
