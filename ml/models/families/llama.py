"""Llama family: Llama 3.x and SmolLM2 (Llama architecture, GPT-2-style byte-level BPE)."""

from ml.models.families.base import ATTENTION, MLP, Family, Layout

FAMILY = Family(
    name="llama",
    model_types=("llama",),
    modeling_module="transformers.models.llama.modeling_llama",
    lxt_patch_map="lxt.efficient.models.llama:attnLRP",
    # Llama 3 reserves unused special tokens; SmolLM2 has none, so it uses a StarCoder-era
    # special token that never occurs in clinical text or chat turns.
    mask_token_candidates=("<|reserved_special_token_0|>", "<empty_output>", "<mask>"),
    # LlamaConfig: attention_bias puts biases on q, k, v and o, mlp_bias on gate, up and down;
    # two RMSNorms a layer; untied unless config.json says (Llama 3.2 1B and SmolLM2 are tied).
    layout=Layout(bias_switches=(("attention_bias", ATTENTION), ("mlp_bias", MLP))),
)
