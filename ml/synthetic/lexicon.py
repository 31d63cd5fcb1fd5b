"""The phrase pools per (language, sex), rendered once at import, and the ED-course entries."""

from __future__ import annotations

import math

from ml.synthetic.phrases_en import EN as _EN
from ml.synthetic.phrases_it import IT as _IT


def _render(pool, fill: dict):
    """Replace the per-sex tokens in every string of a (nested) pool, once, at import."""
    if isinstance(pool, str):
        for token, value in fill.items():
            pool = pool.replace(token, value)
        return pool
    if isinstance(pool, list):
        return [_render(p, fill) for p in pool]
    return {k: _render(v, fill) for k, v in pool.items()}


LEXICON = {
    ("it", "M"): _render(_IT, {"{o}": "o", "{spouse}": "la moglie", "{Sig}": "Sig.", "{sex}": "M"}),
    ("it", "F"): _render(_IT, {"{o}": "a", "{spouse}": "il marito", "{Sig}": "Sig.ra", "{sex}": "F"}),
    ("en", "M"): _render(_EN, {"{spouse}": "wife"}),
    ("en", "F"): _render(_EN, {"{spouse}": "husband"}),
}

# ED-course entries as (text, words, has fields), and steps for walking a pool without repeats (_Writer.course).
COURSE = {key: [(entry, entry.count(" ") + 1, "{" in entry) for entry in lex["course"]] for key, lex in LEXICON.items()}
COPRIME_STEPS = {
    size: [k for k in range(1, size) if math.gcd(k, size) == 1] or [1]
    for size in {len(lex["course"]) for lex in LEXICON.values()}
}
