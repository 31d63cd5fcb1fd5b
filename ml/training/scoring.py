"""Constrained prediction: pick the option whose answer the model finds most likely.

Score of an option = SUM of the log-probabilities of its supervised tokens given the prompt,
i.e. the option text AND the end of turn (`<|im_end|>`, `<end_of_turn>`, or eos without a
chat template), exactly the tokens SFT trains on. With the end of turn included the sum is
the model's probability of answering exactly that option and stopping, so an option that is
a prefix of another ("no" / "no evidence") is not favoured, and no length normalisation is
needed; a mean would favour long options whose later tokens are easy once begun. Ties go
to the option listed first. Every option of an item is scored on the same prompt (cut, if
needed, to fit the longest option).

The options of a request share its whole prompt, and requests with the same `group` (the
callers pass the note id) share the note: ml.training.prefix runs each shared beginning once.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch

from ml.training import refusals
from ml.training.batching import pad_id
from ml.training.encoding import Encoder
from ml.training.errors import TrainingInputError
from ml.training.prefix import run_sequences


@dataclass(frozen=True)
class OptionRequest:
    prompt: str
    options: Sequence[str]
    system: str | None = None
    shots: Sequence[tuple[str, str]] = ()
    group: Hashable | None = None  # requests of one group (e.g. one note) may share a prefix


def option_scores(
    loaded, requests: Sequence[OptionRequest], *, max_length: int, batch_size: int = 8, shared_prefix: bool = True
) -> list[list[float]]:
    """Log-likelihood of each option of each request (see module doc); shared_prefix=False
    runs every sequence whole (the reference the benchmark compares with)."""
    tokenizer = loaded.tokenizer
    encoder = Encoder(tokenizer, max_length, loaded.family.chat_template_kwargs)
    sequences, owners = [], []
    for r, request in enumerate(requests):
        longest = max(request.options, key=lambda o: len(tokenizer(o, add_special_tokens=False)["input_ids"]))
        fitted = encoder.fit(request.prompt, longest, system=request.system, shots=request.shots)
        if fitted is None:
            raise TrainingInputError(refusals.OPTIONS_TOO_LONG, request=r, max_length=max_length)
        user = fitted[0]
        for o, option in enumerate(request.options):
            sequences.append(encoder.encode_exact(user, option, system=request.system, shots=request.shots))
            owners.append((r, o))
    scores = [[0.0] * len(request.options) for request in requests]

    def add(indices: list[int], logits: list[torch.Tensor]) -> None:
        for i, states in zip(indices, logits):
            targets = torch.from_numpy(sequences[i].input_ids[sequences[i].prompt_len :].astype("int64"))
            log_probs = torch.log_softmax(states[:-1].float(), dim=-1)
            r, o = owners[i]
            scores[r][o] = log_probs.gather(-1, targets.to(log_probs.device)[:, None]).sum().item()

    groups: dict = {}
    for i, (r, _) in enumerate(owners):
        key = ("request", r) if requests[r].group is None else ("group", requests[r].group)
        groups.setdefault(key, []).append(i)
    keep = [len(e.input_ids) - e.prompt_len + 1 for e in sequences]  # the states that predict the answer
    run_sequences(
        loaded.model,
        sequences,
        keep,
        add,
        groups=list(groups.values()) if shared_prefix else None,
        logits=True,
        batch_size=batch_size,
        pad_id=pad_id(tokenizer),
    )
    return scores


def choose_options(loaded, requests: Sequence[OptionRequest], *, max_length: int, batch_size: int = 8) -> list[str]:
    """The best-scoring option of each request (always one of its options)."""
    chosen = []
    for request, scores in zip(requests, option_scores(loaded, requests, max_length=max_length, batch_size=batch_size)):
        best = max(range(len(scores)), key=lambda i: (scores[i], -i))
        chosen.append(request.options[best])
    return chosen
