"""Relevance prompt templates and how a (note, task description) pair becomes prompt text.

A template is plain text with exactly one `{note}` and one `{task}` placeholder, `{task}`
after `{note}` and near the end (the model must reach s_T after reading the whole note).

How the chat template is used (as the authors' reference code does): when the tokenizer
has a chat template, the text up to `{task}` (note + instruction, trailing whitespace
removed) is the USER turn and `{task}` (plus any short text after it) is the ASSISTANT turn:

    <system prompt if the template adds one><user> {note} Given ... is observed </user>
    <assistant> {task}

so the explained prediction (the middle token of s_T, teacher-forced up to just before it)
is the assistant answering about the note, which is what an instruct model is trained to
do. Without a chat template the prompt is `bos_token + filled template`. Either way the
prompt text already holds its special tokens and is tokenised with add_special_tokens=False.

Substitution never uses str.format (notes and custom templates may contain braces), and the
character spans of the note and the task inside the final prompt text are kept exactly, so
token offsets map back to the original note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EN = "{note} Given the patient's medical history, the following is observed {task}"
IT = "{note}\n Data la storia del paziente, nel paziente si riscontra {task}"
ES = "{note} Dados los antecedentes médicos del paciente, se observa lo siguiente {task}"  # EN's structure
MAX_TEXT_AFTER_TASK = 40  # characters allowed after {task} ("last-ish")

_PLACEHOLDER = re.compile(r"\{(\w*)\}")
_NOTE_MARK = "\u27e6DSM-NOTE\u27e7"
_TASK_MARK = "\u27e6DSM-TASK\u27e7"


@dataclass(frozen=True)
class PromptTemplate:
    text: str
    name: str = "custom"
    neutral: str = ""  # a task-neutral description in the template's language (explain="contrastive")

    def __post_init__(self):
        names = _PLACEHOLDER.findall(self.text)
        unknown = sorted({n for n in names if n not in ("note", "task")})
        if unknown:
            raise ValueError(f"template has unknown placeholders {unknown}; use only {{note}} and {{task}}")
        if names.count("note") != 1 or names.count("task") != 1:
            raise ValueError("template must contain {note} and {task} exactly once each")
        note_at, task_at = self.text.index("{note}"), self.text.index("{task}")
        if task_at < note_at:
            raise ValueError("{task} must come after {note} in the template")
        if task_at == note_at + len("{note}"):
            raise ValueError("template needs some text between {note} and {task}")
        after = self.text[task_at + len("{task}") :]
        if len(after) > MAX_TEXT_AFTER_TASK:
            raise ValueError(f"{{task}} must be (nearly) last: at most {MAX_TEXT_AFTER_TASK} characters may follow it")

    def parts(self) -> tuple[str, str, str]:
        """(before {note}, between {note} and {task}, after {task})."""
        before, rest = self.text.split("{note}")
        between, after = rest.split("{task}")
        return before, between, after


TEMPLATES = {
    "en": PromptTemplate(EN, "en", neutral="the patient"),
    "it": PromptTemplate(IT, "it", neutral="il paziente"),
    "es": PromptTemplate(ES, "es", neutral="el paciente"),  # CodiEsp's evidence spans are on Spanish text
}


def get_template(spec: str | PromptTemplate | None = None) -> PromptTemplate:
    """None -> English; "en"/"it"/"es" -> built-in; any other string -> a validated custom template."""
    if spec is None:
        return TEMPLATES["en"]
    if isinstance(spec, PromptTemplate):
        return spec
    if spec in TEMPLATES:
        return TEMPLATES[spec]
    return PromptTemplate(spec)


def template_label(spec: str | PromptTemplate | None = None) -> str:
    """The one stored name of a template: a built-in's name (also for a text equal to a built-in's
    text), otherwise the validated custom text itself. Raises ValueError for an invalid template."""
    template = get_template(spec)
    if template.name in TEMPLATES and TEMPLATES[template.name] == template:
        return template.name
    for name, builtin in TEMPLATES.items():
        if template.text == builtin.text:
            return name
    return template.text


@dataclass(frozen=True)
class BuiltPrompt:
    text: str  # full prompt text including special tokens written as text
    note_span: tuple[int, int]  # [start, end) of the note inside text
    task_span: tuple[int, int]  # [start, end) of the task description inside text
    chat: bool  # whether the chat template was applied


def build_prompt(
    tokenizer,
    template: PromptTemplate,
    note: str,
    task: str,
    *,
    chat: bool | None = None,
    chat_template_kwargs: dict | None = None,
) -> BuiltPrompt:
    """Prompt text for (note, task) with the exact character spans of both."""
    before, between, after = template.parts()
    use_chat = bool(getattr(tokenizer, "chat_template", None)) if chat is None else chat
    if use_chat:
        messages = [
            {"role": "user", "content": before + _NOTE_MARK + between.rstrip()},
            {"role": "assistant", "content": _TASK_MARK + after},
        ]
        rendered = tokenizer.apply_chat_template(messages, tokenize=False, **(chat_template_kwargs or {}))
        if rendered.count(_NOTE_MARK) != 1 or rendered.count(_TASK_MARK) != 1:
            raise ValueError("the tokenizer's chat template does not render message contents verbatim")
        head, rest = rendered.split(_NOTE_MARK)
        middle, tail = rest.split(_TASK_MARK)
    else:
        head, middle, tail = (tokenizer.bos_token or "") + before, between, after
    note_start = len(head)
    task_start = note_start + len(note) + len(middle)
    text = head + note + middle + task + tail
    return BuiltPrompt(text, (note_start, note_start + len(note)), (task_start, task_start + len(task)), use_chat)
