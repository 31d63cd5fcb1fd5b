"""Which relevance configuration to use, from every measurement an evaluation has.

Three measurements, each optional:
* localisation (ml.localisation; needs gold evidence): a configuration passes when its token
  AUC's 95% CI lies above the random baseline's (and it has at least `min_pairs` pairs with a
  defined AUC); ranked by AUC.
* faithfulness (ml.faithfulness; no gold): passes when the CI of its paired difference with the
  random rankings (AOPC comprehensiveness, method - random on the same pair) lies above 0, or,
  for a summary stored before paired differences, when its CI lies above the random ranking's;
  ranked by AOPC comprehensiveness.
* task-specificity (ml.specificity; no gold): no test against chance (maps can differ across
  tasks and still be noise), so it never makes a configuration eligible alone; ranked by the
  mean rank correlation of a note's maps across its tasks (lower first), when measured on
  notes with two or more tasks.

A measurement is USED when it says something for at least one configuration (localisation:
some configuration has `min_pairs` pairs with a defined AUC; faithfulness: measured with pairs;
specificity: measured on notes with two or more tasks). Eligible configurations pass every used
test; with no used test (only specificity, or nothing) there is no recommendation. Among the
eligible, the choice has the smallest sum of its ranks over the used measurements (equal values
share a rank; ties: the label). The reason names the measurements used and those left out, and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ml.faithfulness import verdicts
from ml.localisation import MIN_PAIRS, fields_of, label


@dataclass
class Choice:
    choice: dict | None
    reason: str
    used: list[str] = field(default_factory=list)
    not_used: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"choice": self.choice, "reason": self.reason, "used": self.used, "not_used": self.not_used}


def choose(
    configs: Sequence[Mapping],
    groups: Sequence[Mapping],
    random: Mapping | None,
    faithfulness: Mapping[str, Mapping] | None = None,
    specificity: Mapping[str, Mapping] | None = None,
    *,
    min_pairs: int = MIN_PAIRS,
) -> Choice:
    """`configs`: every configuration's own fields (with its `config_key`; the choice is one of
    them); `groups`: ml.localisation groups of those with gold (each with its `config_key`;
    none without gold); `random`: localisation's random baseline; `faithfulness`: {config_key:
    ml.faithfulness summary}; `specificity`: {config_key: ml.specificity.Summary result}. See
    the module doc."""
    faithfulness, specificity = faithfulness or {}, specificity or {}
    keys = [c["config_key"] for c in configs]
    by_key = {c["config_key"]: dict(c) for c in configs}
    groups = [g for g in groups if g.get("config_key") in by_key]
    located = {g["config_key"]: g for g in groups}
    used: list[str] = []
    not_used: dict[str, str] = {}
    passes: dict[str, set[str]] = {}
    ranked: dict[str, dict[str, float]] = {}

    defined = [g for g in groups if g.get("n_pairs", 0) - g.get("n_undefined", 0) >= min_pairs]
    if defined and random:
        used.append("localisation")
        chance_high = (random.get("auc_ci") or [None, None])[1]
        passes["localisation"] = {
            g["config_key"]
            for g in defined
            if _finite(chance_high) and _finite((g.get("auc_ci") or [None])[0]) and g["auc_ci"][0] > chance_high
        }
        ranked["localisation"] = {g["config_key"]: -g["auc"] for g in defined if _finite(g.get("auc"))}
    else:
        not_used["localisation"] = (
            f"fewer than {min_pairs} pairs with gold evidence and a defined AUC per configuration"
            if groups
            else "no gold evidence on these pairs"
        )

    measured = {k: s for k, s in faithfulness.items() if k in by_key and s.get("n_pairs")}
    if measured:
        used.append("faithfulness")
        passes["faithfulness"] = set()
        ranked["faithfulness"] = {}
        for key, summary in measured.items():
            block = next(iter(summary["methods"].values()))
            if "paired" in block:
                if verdicts(summary)[next(iter(summary["methods"]))]["comprehensiveness_beats_random"]:
                    passes["faithfulness"].add(key)
            else:
                ours, theirs = (
                    block.get("aopc_comprehensiveness_ci"),
                    summary["random"].get("aopc_comprehensiveness_ci"),
                )
                if _finite_pair(ours) and _finite_pair(theirs) and ours[0] > theirs[1]:
                    passes["faithfulness"].add(key)
            if _finite(block.get("aopc_comprehensiveness")):
                ranked["faithfulness"][key] = -block["aopc_comprehensiveness"]
    else:
        not_used["faithfulness"] = "not measured (launch the evaluation with faithfulness)"

    spec = {k: s for k, s in specificity.items() if k in by_key and _finite(s.get("spearman_mean"))}
    if spec:
        used.append("specificity")
        ranked["specificity"] = {k: s["spearman_mean"] for k, s in spec.items()}
    else:
        not_used["specificity"] = "no note has maps for two or more of its tasks"

    tests = [m for m in used if m in passes]
    if not tests:
        return Choice(
            None,
            "Nothing here can show a configuration beats chance: "
            + "; ".join(f"{m}: {why}" for m, why in not_used.items())
            + (". Task-specificity alone does not: a map can differ across tasks and still be noise." if spec else "."),
            used,
            not_used,
        )
    eligible = [k for k in keys if all(k in passes[m] for m in tests)]
    if not eligible:
        return Choice(
            None,
            f"No configuration beats chance on {' and '.join(tests)}: "
            + "; ".join(f"{m}: {len(passes[m])} of {len(keys)} do" for m in tests)
            + ".",
            used,
            not_used,
        )

    def rank_sum(key: str) -> float:
        total = 0.0
        for values in ranked.values():  # rank 1 + how many are strictly better: ties share a rank
            total += 1 + sum(v < values[key] for v in values.values()) if key in values else len(values) + 1
        return total

    best = min(eligible, key=lambda k: (rank_sum(k), label(by_key[k])))
    parts = []
    if "localisation" in used and best in located:
        g = located[best]
        parts.append(f"localisation: AUC {g['auc']:.3f} ({g['auc_ci'][0]:.3f}-{g['auc_ci'][1]:.3f})")
    if "faithfulness" in used and best in measured:
        block = next(iter(measured[best]["methods"].values()))
        low, high = block["aopc_comprehensiveness_ci"]
        parts.append(
            f"faithfulness: AOPC comprehensiveness {block['aopc_comprehensiveness']:.3f} ({low:.3f}-{high:.3f}) "
            f"against {measured[best]['random']['aopc_comprehensiveness']:.3f} for a random ranking"
        )
    if "specificity" in used and best in spec:
        parts.append(
            f"task-specificity: its maps of one note correlate {spec[best]['spearman_mean']:.2f} across tasks "
            f"(Spearman; lower is more specific)"
        )
    reason = (
        f"{label(by_key[best])}: {len(eligible)} of {len(keys)} configurations beat chance on "
        f"{' and '.join(tests)}; this one ranks best over {', '.join(used)} ({'; '.join(parts)})."
    )
    if not_used:
        reason += " Not used: " + "; ".join(f"{m} ({why})" for m, why in not_used.items()) + "."
    return Choice(fields_of(located.get(best, by_key[best])), reason, used, not_used)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and value == value and abs(value) != float("inf")


def _finite_pair(values) -> bool:
    return bool(values) and len(values) == 2 and all(_finite(v) for v in values)
