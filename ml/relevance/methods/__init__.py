"""The relevance methods: one module each, one entry in REGISTRY.

Adding a method (lxt's CP-LRP, attention rollout, ...) is a module with a RelevanceMethod
subclass (ml.relevance.methods.base) and its line here; configurations, jobs, evaluations,
forms and commands take their choices from this registry. The order here is the order users
see; `run_order` is the order one process computes them in.
"""

from __future__ import annotations

from collections.abc import Iterable

from ml.relevance.methods import attention, attnlrp, grad_input, integrated_gradients, occlusion
from ml.relevance.methods.base import GradientMethod, RelevanceMethod

REGISTRY: dict[str, RelevanceMethod] = {
    method.name: method
    for method in (attnlrp.METHOD, attention.METHOD, grad_input.METHOD, integrated_gradients.METHOD, occlusion.METHOD)
}
DEFAULT = attnlrp.METHOD.name  # the paper's

__all__ = ["DEFAULT", "REGISTRY", "GradientMethod", "RelevanceMethod", "get", "names", "run_order"]


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(name: str) -> RelevanceMethod:
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown relevance method {name!r}; choose one of {', '.join(REGISTRY)}") from None


def run_order(chosen: Iterable[str]) -> list[str]:
    """The distinct methods in the order one process can compute them all: those that patch the
    process for good (AttnLRP) after every other, otherwise in registry order; unknown names last."""
    known = list(REGISTRY)

    def rank(name: str) -> tuple[int, int]:
        method = REGISTRY.get(name)
        if method is None:
            return (2, 0)
        return (int(method.patches_process), known.index(name))

    return sorted(dict.fromkeys(chosen), key=rank)
