"""The result page of an evaluation without gold: no localisation table but a line saying why, the
faithfulness and task-specificity tables, and which measurements the recommendation weighed."""

from django.utils import timezone

from ml.relevance import RelevanceConfig
from tests.webapp.evaluation.factories import spec
from tests.webapp.pipeline.factories import make_corpus, make_tasks
from webapp.evaluation import evaluations
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle.status import JobStatus


def done_without_gold(model_version, *, paired=None, verdict=None):
    corpus, tasks = make_corpus(3, name="no-gold"), make_tasks(2)
    evaluation = evaluations.launch(
        spec(corpus, model_version, pairs_from="notes", tasks=tasks, faithfulness=True), enqueue=False
    )
    config = RelevanceConfig(method="grad_input", explain="next", template="en")
    block = {"aopc_comprehensiveness": 0.42, "aopc_comprehensiveness_ci": [0.3, 0.55], "deletion": [1, 2, 3, 4, 5]}
    block |= {"aopc_sufficiency": 0.9, "aopc_sufficiency_ci": [0.8, 1.0]}
    if paired is not None:
        block["paired"] = paired
    random = {"aopc_comprehensiveness": 0.1, "aopc_comprehensiveness_ci": [0.0, 0.2]}
    random |= {"aopc_sufficiency": 1.1, "aopc_sufficiency_ci": [0.95, 1.3]}
    result = {
        "groups": [],
        "baselines": {"uniform": {}, "random": {}},
        "configs": [{"key": config.key, **config.to_dict()}],
        "faithfulness": {
            config.key: {
                "n_pairs": 6,
                "fractions": [0.05, 0.1, 0.2, 0.3, 0.5],
                "methods": {"grad_input": block},
                "random": random,
                "verdict": verdict or {"comprehensiveness_beats_random": True, "sufficiency_beats_random": False},
                "forward_passes": 72,
            }
        },
        "specificity": {
            config.key: {
                "notes": 3,
                "pairs": 6,
                "pairs_with_peaks": 6,
                "same_for_every_task": 3,
                "same_share": 0.5,
                "spearman_mean": 0.81,
                "jaccard_mean": 0.4,
                "tasks": {"heart rate": {"peaks": 3, "top_repeated": [{"text": "esi 2", "notes": 3}]}},
            }
        },
        "recommended": {
            "choice": {"method": "grad_input", "explain": "next", "template": "en", "config_key": config.key},
            "reason": "grad_input / next / en: 1 of 1 configurations beat chance on faithfulness.",
            "used": ["faithfulness", "specificity"],
            "not_used": {"localisation": "no gold evidence on these pairs"},
        },
        "problems": [],
    }
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(
        status=JobStatus.DONE, result=result, finished=timezone.now(), done=evaluation.total
    )
    return evaluation


def test_a_result_without_gold_shows_faithfulness_specificity_and_what_was_weighed(client, researcher, model_version):
    evaluation = done_without_gold(model_version)
    client.force_login(researcher)
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert 'id="no-localisation"' in page and "uniform baseline" not in page
    assert '0.420 <span class="ci">(0.300–0.550)</span>' in page and ">comprehensiveness<" in page
    assert '<td class="num">72</td>' in page
    assert "3 of 6 (50%)" in page and "“esi 2” in 3 notes" in page
    assert "Weighed: faithfulness, specificity. Not used: localisation (no gold evidence on these pairs)." in page
    assert "Use Gradient x input with the “Next token after the middle of s_T (reference code)” variant" in page


def test_the_page_shows_the_paired_differences_and_why_there_is_no_verdict(client, researcher, model_version):
    from ml.faithfulness import measure_verdict

    paired = {"aopc_comprehensiveness": 0.317, "aopc_comprehensiveness_ci": [0.25, 0.4]}
    paired |= {"aopc_sufficiency": 0.0, "aopc_sufficiency_ci": [0.0, 0.0]}
    comp = measure_verdict(6, paired["aopc_comprehensiveness_ci"], "comprehensiveness")
    suff = measure_verdict(6, paired["aopc_sufficiency_ci"], "sufficiency")
    verdict = {"comprehensiveness": comp, "sufficiency": suff, "faithful": False}
    verdict |= {"comprehensiveness_beats_random": False, "sufficiency_beats_random": False}
    evaluation = done_without_gold(model_version, paired=paired, verdict=verdict)
    client.force_login(researcher)
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert '<td class="num paired">0.317 <span class="ci">(0.250–0.400)</span></td>' in page
    assert "no verdict: 6 pairs, fewer than 10" in page
    assert "measured before paired differences" not in page


def test_a_result_stored_before_paired_differences_says_so(client, researcher, model_version):
    evaluation = done_without_gold(model_version)
    client.force_login(researcher)
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "measured before paired differences" in page
