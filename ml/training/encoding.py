"""Prompt + answer -> token ids with the answer boundary (the loss goes on the answer only).

Chat models (the tokenizer has a chat template): the prompt is the USER turn and the answer
the ASSISTANT turn (docs/METHOD.md, section DSM training), optionally after a system turn and few-shot turns:

    prompt_text = apply_chat_template(messages, add_generation_prompt=True)
    full_text   = apply_chat_template(messages + [assistant: answer])

`full_text` must start with `prompt_text`; both are tokenised without added special tokens
(the template writes them). When the prompt's tokens are a prefix of the full text's tokens,
the full text's tokens are used as they are; otherwise (a BPE merge across the boundary) the
prompt's tokens and the rest's tokens are concatenated, so the boundary is always exact. The
supervised tokens are everything after the generation prompt: the answer and the template's
end of turn (e.g. `<|im_end|>\\n`), so the model also learns to stop. The decoded supervised
tokens are checked to contain the answer.

Models without a chat template: `bos + prompt + "\\n"` then `answer + eos` (supervised).

`system_instruction=True` (DSM's default, CausalLMConfig.instruction_turn "system"): a prompt
that starts with the DSM instruction is laid out as the paper's two turns, the instruction
as the SYSTEM turn and the rest (the masked note) as the user turn, when the chat template
has a system role (it renders a system message without raising). Without a chat template or
a system role the prompt stays the single user turn "{instruction} {masked note}".

Continual pretraining (empty prompt, no system, no shots): plain language modelling on
`bos + answer + eos`, every token supervised, cut into consecutive windows of max_length.

Too long: the last user turn is cut from the LEFT (after the fixed instruction
"Fill in the masked word in the following sentence." when it starts with it), never the
answer; an example that does not fit even with an empty note is dropped (`encode` returns []).
When the trainer names a `keep_text` (the mask token), the cut keeps a window around it:
from the left as long as at least half of what remains lies before the mask, then from the
right. So a DSM example masked early in a long note keeps the mask and the text around it
instead of being dropped, and an SFT prompt (mask near the end, then the options) is cut
from the left exactly as without keep_text. An example is dropped only if the mask itself
cannot be kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ml.masking import DSM_INSTRUCTION
from ml.training import refusals
from ml.training.errors import TrainingError

KEEP_PREFIXES = (DSM_INSTRUCTION,)  # instruction text never cut by left truncation
PLAIN_SEPARATOR = "\n"  # between prompt and answer without a chat template
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Encoded:
    input_ids: np.ndarray  # int32 token ids
    prompt_len: int  # tokens [prompt_len:] are supervised (the answer and end of turn)
    truncated: bool = False  # the prompt was cut to fit max_length

    @property
    def n_supervised(self) -> int:
        """Tokens whose prediction is trained (the first token of a sequence never is)."""
        return len(self.input_ids) - max(self.prompt_len, 1)


@dataclass(frozen=True)
class Encoder:
    """Encodes prompts and answers for one tokenizer (see the module doc)."""

    tokenizer: object
    max_length: int
    chat_template_kwargs: dict | None = None
    chat: bool | None = None  # None: use the chat template when the tokenizer has one
    # Text that must survive the cut (the DSM mask): the cut keeps a window around it (module doc).
    keep_text: str | None = None
    # The DSM instruction leading a prompt becomes the system turn where the template has one (module doc).
    system_instruction: bool = False

    @property
    def has_system_role(self) -> bool:
        """The chat template renders a system message (many raise "System role not supported")."""
        if not self.uses_chat:
            return False
        messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
        try:
            self.tokenizer.apply_chat_template(messages, tokenize=False, **(self.chat_template_kwargs or {}))
        except Exception:  # noqa: BLE001 - jinja2 TemplateError and the like
            return False
        return True

    @property
    def uses_chat(self) -> bool:
        has = bool(getattr(self.tokenizer, "chat_template", None))
        return has if self.chat is None else (self.chat and has)

    def encode(
        self, prompt: str, answer: str, *, system: str | None = None, shots: Sequence[tuple[str, str]] = ()
    ) -> list[Encoded]:
        """[] when it cannot fit; several windows for continual pretraining; else one."""
        if not prompt and system is None and not shots:
            return self._plain_lm(answer)
        if self.system_instruction and system is None:
            prompt, system = self.instruction_as_system(prompt)
        fitted = self.fit(prompt, answer, system=system, shots=shots)
        if fitted is None:
            return []
        user, ids, boundary, truncated = fitted
        self._check_answer(ids[boundary:], answer)
        return [Encoded(np.asarray(ids, dtype=np.int32), boundary, truncated)]

    def instruction_as_system(self, prompt: str) -> tuple[str, str | None]:
        """(user turn, system turn): the leading DSM instruction as the system turn where the
        template has a system role; else (prompt, None)."""
        prefix, body = _split_keep_prefix(prompt)
        if not prefix or not body or not self.has_system_role:
            return prompt, None
        return body, prefix.strip()

    def encode_exact(
        self,
        user: str,
        answer: str,
        *,
        system: str | None = None,
        shots: Sequence[tuple[str, str]] = (),
        truncated: bool = False,
    ) -> Encoded:
        """The user turn as given (e.g. as `fit` cut it for a longer answer), no length check."""
        ids, boundary = self._tokenise(*self.render(user, answer, system=system, shots=shots))
        self._check_answer(ids[boundary:], answer)
        return Encoded(np.asarray(ids, dtype=np.int32), boundary, truncated)

    def encode_prompt(self, prompt: str, *, system: str | None = None) -> Encoded:
        """The prompt up to where the answer would start (e.g. for features), cut to fit."""
        fitted = self.fit(prompt, "", system=system)
        if fitted is None:
            raise TrainingError(refusals.PROMPT_TOO_LONG, max_length=self.max_length)
        _, ids, boundary, truncated = fitted
        return Encoded(np.asarray(ids[:boundary], dtype=np.int32), boundary, truncated)

    def fit(
        self, prompt: str, answer: str, *, system: str | None = None, shots: Sequence[tuple[str, str]] = ()
    ) -> tuple[str, list[int], int, bool] | None:
        """(user turn, token ids, answer boundary, whether cut) with the user turn cut from the
        left until everything fits max_length; None if even an empty note does not fit."""
        prefix, body = _split_keep_prefix(prompt)
        cut, end = 0, len(body)  # the kept window of the body
        for _ in range(8):
            rest = body[cut:end].lstrip() if cut else body[:end]
            rest = rest.rstrip() if end < len(body) else rest
            user = prefix + rest if rest else prefix.rstrip()
            if (cut or end < len(body)) and self.keep_text and self.keep_text in body and self.keep_text not in rest:
                return None  # the masked span's place cannot be kept: nothing left to learn from
            ids, boundary = self._tokenise(*self.render(user, answer, system=system, shots=shots))
            excess = len(ids) - self.max_length
            if excess <= 0:
                return user, ids, boundary, cut > 0 or end < len(body)
            if cut >= end:
                return None  # the answer, template and shots alone do not fit
            cut, end = self._cut_window(body, cut, end, excess)
        return None

    def render(
        self, user: str, answer: str, *, system: str | None = None, shots: Sequence[tuple[str, str]] = ()
    ) -> tuple[str, str]:
        """(prompt text ending where the answer starts, full text) before tokenisation."""
        if not self.uses_chat:
            bos = self.tokenizer.bos_token or ""
            head = bos + (system + "\n\n" if system else "")
            head += "".join(f"{q}{PLAIN_SEPARATOR}{a}\n\n" for q, a in shots)
            prompt_text = head + user + PLAIN_SEPARATOR
            return prompt_text, prompt_text + answer + (self.tokenizer.eos_token or "")
        messages = []
        for q, a in shots:
            messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
        messages.append({"role": "user", "content": user})
        if system:
            messages = self._with_system(messages, system)
        kwargs = dict(self.chat_template_kwargs or {})
        prompt_text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
        full_text = self.tokenizer.apply_chat_template(
            messages + [{"role": "assistant", "content": answer}], tokenize=False, **kwargs
        )
        if not full_text.startswith(prompt_text):
            raise TrainingError(refusals.ANSWER_NOT_FOUND)
        return prompt_text, full_text

    def _with_system(self, messages, system):
        """A system turn, or the system text prepended to the first user turn when the
        template has no system role (it raises)."""
        trial = [{"role": "system", "content": system}] + messages
        try:
            self.tokenizer.apply_chat_template(trial, tokenize=False, **(self.chat_template_kwargs or {}))
            return trial
        except Exception:  # jinja2 TemplateError ("System role not supported") and the like
            first = dict(messages[0], content=f"{system}\n\n{messages[0]['content']}")
            return [first] + messages[1:]

    def _tokenise(self, prompt_text: str, full_text: str) -> tuple[list[int], int]:
        ids_of = lambda text: self.tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
        prompt_ids, full_ids = ids_of(prompt_text), ids_of(full_text)
        if full_ids[: len(prompt_ids)] == prompt_ids:
            return full_ids, len(prompt_ids)
        return prompt_ids + ids_of(full_text[len(prompt_text) :]), len(prompt_ids)

    def _check_answer(self, answer_ids, answer: str) -> None:
        decoded = self.tokenizer.decode(list(answer_ids), skip_special_tokens=False)
        if answer.strip() not in decoded:
            raise TrainingError(refusals.ANSWER_DECODED, decoded=repr(decoded), answer=repr(answer))

    def _cut_window(self, body: str, cut: int, end: int, excess: int) -> tuple[int, int]:
        """(cut, end) of the body after dropping about `excess` more tokens: from the left, but
        around keep_text (see the module doc) from the right once the left has given half."""
        offsets = self.tokenizer(body[cut:end], add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        drop = excess + 1  # one spare token: the cut may change how the boundary tokenises
        if drop >= len(offsets):
            return end, end
        mask_at = body.find(self.keep_text, cut, end) if self.keep_text else -1
        left = drop
        if mask_at >= 0:
            mask_token = next(i for i, (_, stop) in enumerate(offsets) if cut + stop > mask_at)
            kept = len(offsets) - drop
            left = min(drop, max(0, mask_token - kept // 2))
        right = drop - left
        new_cut, new_end = cut, end
        if left:
            new_cut = cut + offsets[left][0]
            limit = mask_at if mask_at >= 0 else end
            space = _WHITESPACE.search(body, new_cut, min(new_cut + 40, limit))  # start at a word when one is near
            new_cut = space.end() if space else new_cut
        if right:
            new_end = cut + offsets[len(offsets) - right][0]
            floor = mask_at + len(self.keep_text) if mask_at >= 0 else new_cut
            space = body.rfind(" ", max(new_end - 40, floor), new_end)  # end at a word when one is near
            new_end = space if space > 0 else new_end
        return new_cut, new_end

    def _plain_lm(self, text: str) -> list[Encoded]:
        bos, eos = self.tokenizer.bos_token_id, self.tokenizer.eos_token_id
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        ids = ([bos] if bos is not None else []) + ids + ([eos] if eos is not None else [])
        windows = [ids[i : i + self.max_length] for i in range(0, len(ids), self.max_length)]
        return [Encoded(np.asarray(w, dtype=np.int32), 0, len(windows) > 1) for w in windows if len(w) >= 2]


def training_encoder(loaded, config, device, keep_text: str | None = None) -> Encoder:
    """The Encoder of a causal-LM training run: max_length resolved for the device (None:
    auto, see config.resolve_max_length) and the DSM instruction's turn from the config."""
    from ml.training.config import resolve_max_length

    return Encoder(
        loaded.tokenizer,
        resolve_max_length(config.max_length, loaded.model.config, device),
        loaded.family.chat_template_kwargs,
        keep_text=keep_text,
        system_instruction=config.instruction_turn == "system",
    )


def _split_keep_prefix(prompt: str) -> tuple[str, str]:
    """(kept instruction with the whitespace after it, the rest); prefix + rest == prompt."""
    for prefix in KEEP_PREFIXES:
        if prompt.startswith(prefix):
            rest = prompt[len(prefix) :]
            body = rest.lstrip()
            return prompt[: len(prompt) - len(body)], body
    return "", prompt
