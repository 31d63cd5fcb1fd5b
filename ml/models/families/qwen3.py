"""Qwen3 family. Its chat template renders an (empty) <think> block before the last
assistant turn; that is template text and is excluded from relevance like any other."""

from ml.models.families.base import Family

FAMILY = Family(
    name="qwen3",
    model_types=("qwen3",),
    modeling_module="transformers.models.qwen3.modeling_qwen3",
    lxt_patch_map="lxt.efficient.models.qwen3:attnLRP",
    mask_token_candidates=("<|fim_pad|>", "<mask>"),
    chat_template_kwargs={"enable_thinking": False},
)
