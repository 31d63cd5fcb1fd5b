"""Cohen's kappa for two raters (pure Python).

kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement, p_e the agreement expected by
chance from each rater's label frequencies. NaN when undefined (no items, or p_e = 1: both
raters used one and the same label for everything).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    if len(a) != len(b):
        raise ValueError(f"{len(a)} labels from the first rater but {len(b)} from the second")
    n = len(a)
    if n == 0:
        return math.nan
    observed = sum(x == y for x, y in zip(a, b)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected == 1:
        return math.nan
    return (observed - expected) / (1 - expected)
