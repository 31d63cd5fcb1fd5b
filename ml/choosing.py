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

The reason is kept twice: `reason`, the English text (the API, the CLI), and `said`, the same words
as an English template with its values ({"message": template, "params": {name: value}}, a value
itself such a dict where it is words too, the shape of webapp.lib.messages.Message.as_json), so a
page can show it in its reader's language by translating each template (ml knows nothing of the
web app: webapp.evaluation.reason_text marks the templates below for its catalogs, and a test checks
it lists every one of them). `not_used_said` keeps each left-out measurement's why the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ml.faithfulness import verdicts
from ml.localisation import MIN_PAIRS, fields_of, label

# The reason's words (module doc): English templates, formatted with %
MEASUREMENTS = ("localisation", "faithfulness", "specificity", "task-specificity")
FEW_PAIRS = "fewer than %(min_pairs)s pairs with gold evidence and a defined AUC per configuration"
NO_GOLD = "no gold evidence on these pairs"
NOT_MEASURED = "not measured (launch the evaluation with faithfulness)"
NO_TWO_TASKS = "no note has maps for two or more of its tasks"
NAMED = "%(name)s: %(why)s"
NAMED_AFTER = "%(name)s (%(why)s)"
NOTHING_SHOWS = "Nothing here can show a configuration beats chance: %(why)s."
NOTHING_SHOWS_SPECIFICITY = (
    "Nothing here can show a configuration beats chance: %(why)s. Task-specificity alone does not: a map can "
    "differ across tasks and still be noise."
)
PASSED = "%(name)s: %(passed)s of %(total)s do"
NONE_BEATS = "No configuration beats chance on %(tests)s: %(counts)s."
AUC_PART = "localisation: AUC %(auc)s (%(low)s-%(high)s)"
AOPC_PART = "faithfulness: AOPC comprehensiveness %(aopc)s (%(low)s-%(high)s) against %(random)s for a random ranking"
SPECIFICITY_PART = (
    "task-specificity: its maps of one note correlate %(spearman)s across tasks (Spearman; lower is more specific)"
)
CHOSEN = (
    "%(label)s: %(eligible)s of %(total)s configurations beat chance on %(tests)s; this one ranks best over "
    "%(used)s (%(parts)s)."
)
WITH_NOT_USED = "%(reason)s Not used: %(not_used)s."
AND = "%(first)s and %(rest)s"
COMMA = "%(first)s, %(rest)s"
SEMICOLON = "%(first)s; %(rest)s"
TEMPLATES = (
    *MEASUREMENTS,
    FEW_PAIRS,
    NO_GOLD,
    NOT_MEASURED,
    NO_TWO_TASKS,
    NAMED,
    NAMED_AFTER,
    NOTHING_SHOWS,
    NOTHING_SHOWS_SPECIFICITY,
    PASSED,
    NONE_BEATS,
    AUC_PART,
    AOPC_PART,
    SPECIFICITY_PART,
    CHOSEN,
    WITH_NOT_USED,
    AND,
    COMMA,
    SEMICOLON,
)


def said(template: str, **params) -> dict:
    """Words as their template and values (module doc)."""
    return {"message": template, "params": params}


def text_of(words) -> str:
    """The English text of `said` words (a plain value: itself)."""
    if not isinstance(words, dict):
        return str(words)
    params = words.get("params") or {}
    if not params:
        return words["message"]
    return words["message"] % {name: text_of(value) for name, value in params.items()}


def joined(items: Sequence, template: str):
    """Items joined by `template` (AND, COMMA, SEMICOLON), nested from the left: a, b, c."""
    items = list(items)
    if not items:
        return ""
    out = items[0]
    for item in items[1:]:
        out = said(template, first=out, rest=item)
    return out


@dataclass
class Choice:
    choice: dict | None
    said: dict  # the reason as template and values (module doc)
    used: list[str] = field(default_factory=list)
    not_used_said: dict[str, dict] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        return text_of(self.said)

    @property
    def not_used(self) -> dict[str, str]:
        return {name: text_of(why) for name, why in self.not_used_said.items()}

    def as_dict(self) -> dict:
        return {
            "choice": self.choice,
            "reason": self.reason,
            "used": self.used,
            "not_used": self.not_used,
            "said": self.said,
            "not_used_said": self.not_used_said,
        }


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
    not_used: dict[str, dict] = {}
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
        not_used["localisation"] = said(FEW_PAIRS, min_pairs=min_pairs) if groups else said(NO_GOLD)

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
        not_used["faithfulness"] = said(NOT_MEASURED)

    spec = {k: s for k, s in specificity.items() if k in by_key and _finite(s.get("spearman_mean"))}
    if spec:
        used.append("specificity")
        ranked["specificity"] = {k: s["spearman_mean"] for k, s in spec.items()}
    else:
        not_used["specificity"] = said(NO_TWO_TASKS)

    tests = [m for m in used if m in passes]
    if not tests:
        why = joined([said(NAMED, name=said(m), why=w) for m, w in not_used.items()], SEMICOLON)
        return Choice(None, said(NOTHING_SHOWS_SPECIFICITY if spec else NOTHING_SHOWS, why=why), used, not_used)
    eligible = [k for k in keys if all(k in passes[m] for m in tests)]
    if not eligible:
        counts = [said(PASSED, name=said(m), passed=len(passes[m]), total=len(keys)) for m in tests]
        return Choice(
            None,
            said(NONE_BEATS, tests=joined([said(m) for m in tests], AND), counts=joined(counts, SEMICOLON)),
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
        parts.append(said(AUC_PART, auc=f"{g['auc']:.3f}", low=f"{g['auc_ci'][0]:.3f}", high=f"{g['auc_ci'][1]:.3f}"))
    if "faithfulness" in used and best in measured:
        block = next(iter(measured[best]["methods"].values()))
        low, high = block["aopc_comprehensiveness_ci"]
        parts.append(
            said(
                AOPC_PART,
                aopc=f"{block['aopc_comprehensiveness']:.3f}",
                low=f"{low:.3f}",
                high=f"{high:.3f}",
                random=f"{measured[best]['random']['aopc_comprehensiveness']:.3f}",
            )
        )
    if "specificity" in used and best in spec:
        parts.append(said(SPECIFICITY_PART, spearman=f"{spec[best]['spearman_mean']:.2f}"))
    reason = said(
        CHOSEN,
        label=label(by_key[best]),
        eligible=len(eligible),
        total=len(keys),
        tests=joined([said(m) for m in tests], AND),
        used=joined([said(m) for m in used], COMMA),
        parts=joined(parts, SEMICOLON),
    )
    if not_used:
        left = joined([said(NAMED_AFTER, name=said(m), why=w) for m, w in not_used.items()], SEMICOLON)
        reason = said(WITH_NOT_USED, reason=reason, not_used=left)
    return Choice(fields_of(located.get(best, by_key[best])), reason, used, not_used)


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and value == value and abs(value) != float("inf")


def _finite_pair(values) -> bool:
    return bool(values) and len(values) == 2 and all(_finite(v) for v in values)
