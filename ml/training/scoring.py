"""Constrained prediction: pick the option whose answer the model finds most likely.

Score of an option = SUM of the log-probabilities of its supervised tokens given the prompt,
i.e. the option text AND the end of turn (`<|im_end|>`, `<end_of_turn>`, or eos without a
chat template), exactly the tokens SFT trains on. With the end of turn included the sum is
the model's probability of answering exactly that option and stopping, so an option that is
a prefix of another ("no" / "no evidence") is not favoured, and no length normalisation is
needed; a mean would favour long options whose later tokens are easy once begun. Ties go
to the option listed first. Every option of an item is scored on the same prompt (cut, if
needed, to fit the longest option).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ml.training.batching import collate, pad_id, token_losses
from ml.training.encoding import Encoder


@dataclass(frozen=True)
class OptionRequest:
    prompt: str
    options: Sequence[str]
    system: str | None = None
    shots: Sequence[tuple[str, str]] = ()


def option_scores(loaded, requests: Sequence[OptionRequest], *, max_length: int, batch_size: int = 8
                  ) -> list[list[float]]:
    """Log-likelihood of each option of each request (see module doc)."""
    tokenizer = loaded.tokenizer
    encoder = Encoder(tokenizer, max_length, loaded.family.chat_template_kwargs)
    sequences, owners = [], []
    for r, request in enumerate(requests):
        longest = max(request.options, key=lambda o: len(tokenizer(o, add_special_tokens=False)["input_ids"]))
        fitted = encoder.fit(request.prompt, longest, system=request.system, shots=request.shots)
        if fitted is None:
            raise ValueError(f"request {r}: the options and template alone exceed max_length ({max_length})")
        user = fitted[0]
        for o, option in enumerate(request.options):
            sequences.append(encoder.encode_exact(user, option, system=request.system, shots=request.shots))
            owners.append((r, o))
    scores = [[0.0] * len(request.options) for request in requests]
    order = sorted(range(len(sequences)), key=lambda i: -len(sequences[i].input_ids))
    pad = pad_id(tokenizer)
    model = loaded.model
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start:start + batch_size]
                batch = {k: v.to(device) if torch.is_tensor(v) else v
                         for k, v in collate([sequences[i] for i in chunk], pad).items()}
                losses, _ = token_losses(model, batch)
                for i, total in zip(chunk, (-losses.sum(-1)).tolist()):
                    r, o = owners[i]
                    scores[r][o] = total
    finally:
        model.train(was_training)
    return scores


def choose_options(loaded, requests: Sequence[OptionRequest], *, max_length: int, batch_size: int = 8) -> list[str]:
    """The best-scoring option of each request (always one of its options)."""
    chosen = []
    for request, scores in zip(requests, option_scores(loaded, requests, max_length=max_length, batch_size=batch_size)):
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        chosen.append(request.options[best])
    return chosen
