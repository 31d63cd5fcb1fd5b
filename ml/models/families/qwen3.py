"""Qwen3 family. Its chat template renders an (empty) <think> block before the last
assistant turn; that is template text and is excluded from relevance like any other."""

from ml.models.families.base import ATTENTION, Family, Layout

FAMILY = Family(
    name="qwen3",
    model_types=("qwen3",),
    modeling_module="transformers.models.qwen3.modeling_qwen3",
    lxt_patch_map="lxt.efficient.models.qwen3:attnLRP",
    mask_token_candidates=("<|fim_pad|>", "<mask>"),
    # Qwen3Attention: attention_bias on q, k, v and o (false in the released models), an RMSNorm
    # over each head's q and k (qk-norm); untied by default (the 0.6B-4B configs say tied).
    layout=Layout(bias_switches=(("attention_bias", ATTENTION),), head_norms=2),
    chat_template_kwargs={"enable_thinking": False},
)
