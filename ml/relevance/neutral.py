"""The neutral token that replaces a note's tokens: faithfulness's deletions and insertions, the
Integrated Gradients baseline and occlusion use the same one."""

from __future__ import annotations


def neutral_token_id(tokenizer, how: str = "pad") -> int:
    """The replacement token: "pad" -> pad, else eos, else unk; "space" -> the single token of " "."""
    if how == "space":
        ids = tokenizer(" ", add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ValueError('this tokenizer has no single-token " "; use neutral="pad"')
        return int(ids[0])
    for token_id in (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id):
        if token_id is not None:
            return int(token_id)
    raise ValueError("this tokenizer has no pad, eos or unk token; use neutral='space'")
