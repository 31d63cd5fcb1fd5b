"""Gemma 3 family: text-only (gemma3_text, 1B) and multimodal checkpoints (gemma3, 4B+),
whose language model lives in the same transformers module. The chat template has no
system role and writes <bos> itself, so prompts are tokenised without added specials."""

from ml.models.families.base import ATTENTION, Family, Layout

FAMILY = Family(
    name="gemma3",
    model_types=("gemma3_text", "gemma3"),
    modeling_module="transformers.models.gemma3.modeling_gemma3",
    lxt_patch_map="lxt.efficient.models.gemma3:attnLRP",
    # Gemma's vocabulary has a real <mask> token.
    mask_token_candidates=("<mask>",),
    # Gemma3DecoderLayer: four RMSNorms over the hidden size (before and after attention and the
    # MLP), qk-norm, attention_bias on q, k, v and o; tied embeddings by default.
    layout=Layout(bias_switches=(("attention_bias", ATTENTION),), hidden_norms=4, head_norms=2, tied_embeddings=True),
)
