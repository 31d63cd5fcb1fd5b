"""A small compatibility layer over lxt 2.1 (AttnLRP, efficient mode) for this project.

Why it exists
-------------
* `lxt.efficient.models/__init__.py` imports every model file it ships, including
  `vit_torch` (imports torchvision) and `bert`. torchvision is not installed and must not be:
  a PyPI torchvision next to the CPU torch breaks transformers' model imports. So, when
  torchvision is absent, we register a placeholder module under the name
  `lxt.efficient.models.vit_torch` in `sys.modules` before lxt is imported. The placeholder
  only provides the two names lxt's default map reads; vision transformers stay unsupported.
  lxt's BERT module imports fine on transformers 4.57.x (it breaks on >= 5.0; we pin 4.57).
* With transformers 4.57.x, lxt's own patch maps (`lxt.efficient.models.<family>.attnLRP`)
  work unchanged: each family file names the map it needs, and we call
  `lxt.efficient.monkey_patch(modeling_module, patch_map)` exactly as lxt's README does.
  (On transformers >= 5.1 lxt's attention patch breaks the forward pass; not handled here.)

Patching is process-global and cannot be undone: lxt replaces `torch.nn.Dropout.forward`
by the identity and the family's RMSNorm/MLP forwards and attention functions by versions
whose gradients implement the LRP rules. A process that has computed AttnLRP relevance must
never train a model, so `assert_not_patched()` is called by training code.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import warnings

_PATCHED: set[str] = set()  # family names patched in this process


def _install_torchvision_placeholder() -> None:
    name = "lxt.efficient.models.vit_torch"
    if name in sys.modules or importlib.util.find_spec("torchvision") is not None:
        return
    placeholder = types.ModuleType(name)
    placeholder.__doc__ = "Placeholder: torchvision is not installed, lxt's ViT support is disabled."
    placeholder.vision_transformer = types.ModuleType("torchvision.models.vision_transformer (unavailable)")
    placeholder.cp_LRP = {}
    sys.modules[name] = placeholder


def import_lxt() -> types.ModuleType:
    """Import and return `lxt.efficient` (importing it patches nothing)."""
    _install_torchvision_placeholder()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*zennit.*")  # only needed for ViTs
        return importlib.import_module("lxt.efficient")


def patch_map(family) -> dict:
    """lxt's AttnLRP patch map named by the family file ("module:attribute")."""
    import_lxt()
    module_name, attribute = family.lxt_patch_map.split(":")
    return getattr(importlib.import_module(module_name), attribute)


def patch(family) -> None:
    """Apply AttnLRP to the family's transformers module, once per process.

    lxt's own `monkey_patch` does the work. Patching a second family re-patches the shared
    torch.nn.Dropout, which lxt reports as a harmless "already patched" warning; we silence it.
    """
    if family.name in _PATCHED:
        return
    lxt_efficient = import_lxt()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*already patched.*")
        warnings.filterwarnings("ignore", message="Failed to patch Dropout.*")
        lxt_efficient.monkey_patch(family.modeling(), patch_map(family))
    _PATCHED.add(family.name)


def is_patched() -> bool:
    """True when this process carries lxt patches (ours, or lxt used directly)."""
    import torch

    return bool(_PATCHED) or torch.nn.Dropout.forward.__module__.startswith("lxt.")


def patched_families() -> frozenset[str]:
    return frozenset(_PATCHED)


def assert_not_patched() -> None:
    """Raise if this process was patched by lxt: training here would be silently wrong
    (no dropout, LRP-modified gradients through norms, MLPs and attention)."""
    if is_patched():
        raise RuntimeError(
            "this process has lxt AttnLRP patches applied (families: "
            f"{', '.join(sorted(_PATCHED)) or 'patched outside ml.lrp'}); patching cannot be "
            "undone, so it must not train. Run relevance and training in separate processes."
        )


__all__ = ["assert_not_patched", "import_lxt", "is_patched", "patch", "patch_map", "patched_families"]
