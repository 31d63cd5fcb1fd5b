"""Rate and time left for any kind of work, from what it has done and how long that took."""

from __future__ import annotations

from datetime import timedelta


def rate(done: float, seconds: float | None) -> float | None:
    """Items a second, None before anything was measured."""
    return done / seconds if done and seconds and seconds > 0 else None


def eta(left: float, per_second: float | None, *, parallel: int = 1, stalled: bool = False) -> timedelta | None:
    """Time left at this rate with `parallel` workers; None when unknown, finished or stalled
    (a lost worker makes no progress: never show a live ETA for it)."""
    if stalled or not per_second or left <= 0:
        return None
    return timedelta(seconds=round(left / (per_second * max(parallel, 1))))
