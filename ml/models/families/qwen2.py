"""Qwen2 / Qwen2.5 family."""

from ml.models.families.base import Family, Layout

FAMILY = Family(
    name="qwen2",
    model_types=("qwen2",),
    modeling_module="transformers.models.qwen2.modeling_qwen2",
    lxt_patch_map="lxt.efficient.models.qwen2:attnLRP",
    # Fill-in-the-middle padding token: a single special token unused in chat.
    mask_token_candidates=("<|fim_pad|>", "<mask>"),
    # Qwen2Attention: biases on q, k and v always (none on o); no qk-norm; untied by default.
    layout=Layout(biases=("q_proj", "k_proj", "v_proj")),
)
