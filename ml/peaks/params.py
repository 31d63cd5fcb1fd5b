"""`PeakParams`: the one description of how peaks are found, with the paper's values as defaults.

Every layer passes these around (the web app's peak profiles, the dataset builder, the review
pages, the CLI): never the four numbers loose, never a dict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace

import numpy as np


@dataclass(frozen=True, slots=True)
class PeakParams:
    # Gaussian smoothing window in tokens (radius (kernel_size - 1) // 2). Paper: 3.
    kernel_size: int = 3
    # Gaussian sigma in tokens. Paper: 1.0.
    sigma: float = 1.0
    # A peak is a maximal run of smoothed scores >= lower ... Paper: 0.2.
    lower: float = 0.2
    # ... holding at least one smoothed score >= upper. Paper: 0.4.
    upper: float = 0.4
    # The reference code compares with > for both thresholds; the paper's definition is >=.
    strict: bool = False
    # Peaks cover whole words (paper): after word extension a peak's edges are trimmed of
    # punctuation and whitespace and a peak with no letter or digit is dropped. False keeps the
    # reference code's peaks (". HR", a lone ":") for comparison.
    trim: bool = True

    def __post_init__(self):
        check_params(self.kernel_size, self.sigma, self.lower, self.upper)
        for name in ("strict", "trim"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")

    @property
    def radius(self) -> int:
        return (int(self.kernel_size) - 1) // 2

    @classmethod
    def from_mapping(cls, values: Mapping) -> PeakParams:
        """From a dict holding some of the fields (missing ones take the paper's value); unknown
        keys are an error, so a typo never silently falls back to a default."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown peak parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**values)

    def to_dict(self) -> dict:
        return asdict(self)

    def with_(self, **changes) -> PeakParams:
        return replace(self, **changes)

    def describe(self) -> str:
        """Short human form, e.g. 'k3 σ1 ≥0.2/0.4 trimmed'."""
        op = ">" if self.strict else "≥"
        return (
            f"k{self.kernel_size} σ{self.sigma:g} {op}{self.lower:g}/{self.upper:g} "
            f"{'trimmed' if self.trim else 'untrimmed'}"
        )


def check_params(kernel_size: int, sigma: float, lower: float, upper: float) -> int:
    """Validate peak parameters; return the smoothing radius `(kernel_size - 1) // 2`."""
    if isinstance(kernel_size, bool) or not isinstance(kernel_size, (int, np.integer)):
        raise ValueError(f"kernel_size must be an integer, got {kernel_size!r}")
    if kernel_size < 1:
        raise ValueError(f"kernel_size must be >= 1, got {kernel_size}")
    if not (
        isinstance(sigma, (int, float, np.floating, np.integer))
        and not isinstance(sigma, bool)
        and math.isfinite(sigma)
        and sigma > 0
    ):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    for name, value in (("lower", lower), ("upper", upper)):
        if not (
            isinstance(value, (int, float, np.floating, np.integer))
            and not isinstance(value, bool)
            and math.isfinite(value)
        ):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not 0 <= lower <= upper:
        raise ValueError(f"thresholds must satisfy 0 <= lower <= upper, got lower={lower}, upper={upper}")
    return (int(kernel_size) - 1) // 2


PAPER = PeakParams()  # the paper's peaks
