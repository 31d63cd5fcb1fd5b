"""The de-identification policy form (a project's admins) and the launch of a corpus's
de-identification into a new corpus."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from webapp.deid import mapping
from webapp.deid.models import DeidPolicy
from webapp.deid.policy import pattern_problem

# A metadata key, as the erasure's patient key: letters, digits, "_" and "-" (a JSON lookup).
METADATA_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
MAX_LINES = 5000  # words of an allow- or deny-list
MAX_LINE_CHARS = 200
LISTS = ("known_fields", "record_patterns", "allow_list", "deny_list")


def _lines(text: str) -> list[str]:
    """One entry a line, blank lines and surrounding spaces dropped, each once, in order."""
    return list(dict.fromkeys(line.strip() for line in (text or "").splitlines() if line.strip()))


class LinesField(forms.CharField):
    """A list edited as one entry per line (a JSONField of the policy)."""

    widget = forms.Textarea

    def __init__(self, *args, rows: int = 4, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)
        self.widget.attrs.update({"rows": rows, "spellcheck": "false"})

    def prepare_value(self, value):
        return "\n".join(value) if isinstance(value, list | tuple) else value

    def to_python(self, value):
        if isinstance(value, list | tuple):
            return list(value)
        lines = _lines(super().to_python(value))
        if len(lines) > MAX_LINES:
            raise forms.ValidationError(_("At most %(count)s lines.") % {"count": f"{MAX_LINES:,}"})
        if too_long := next((i for i, line in enumerate(lines, 1) if len(line) > MAX_LINE_CHARS), None):
            raise forms.ValidationError(
                _("Line %(line)s is longer than %(limit)s characters.") % {"line": too_long, "limit": MAX_LINE_CHARS}
            )
        return lines

    def has_changed(self, initial, data):
        return list(initial or []) != self.to_python(data)


class PolicyForm(forms.ModelForm):
    known_fields = LinesField(
        label=gettext_lazy("Known identifiers (metadata fields)"),
        help_text=gettext_lazy(
            "One metadata key a line whose value is an identifier the hospital knows (patient_name, mrn): "
            "found wherever it occurs in the note, with case, accent, order and initial variants"
        ),
    )
    record_patterns = LinesField(
        label=gettext_lazy("Record and accession numbers (regular expressions)"),
        help_text=gettext_lazy(r"One Python regular expression a line, e.g. \bRIC-\d{6}\b"),
    )
    allow_list = LinesField(
        rows=6,
        label=gettext_lazy("Allow-list"),
        help_text=gettext_lazy(
            "One word or term a line that is never replaced: eponyms (Parkinson, Crohn), drug names"
        ),
    )
    deny_list = LinesField(
        label=gettext_lazy("Deny-list"),
        help_text=gettext_lazy("One word or term a line that is always replaced: the ward's own words"),
    )

    class Meta:
        model = DeidPolicy
        fields = [
            "mode",
            "patient_field",
            "known_fields",
            "record_patterns",
            "allow_list",
            "deny_list",
            "keep_mapping",
            "ner_model_dir",
        ]
        widgets = {"mode": forms.RadioSelect}
        labels = {
            "mode": gettext_lazy("Replace identifiers with"),
            "patient_field": gettext_lazy("Patient field"),
            "keep_mapping": gettext_lazy("Keep the mapping (original -> surrogate), encrypted"),
            "ner_model_dir": gettext_lazy("NER model folder"),
        }

    def clean_patient_field(self):
        value = self.cleaned_data["patient_field"].strip()
        if value and (not METADATA_KEY.match(value) or "__" in value):
            raise forms.ValidationError(_("A metadata key: letters, digits, '_' and '-' only (no '__')."))
        return value

    def clean_known_fields(self):
        fields = self.cleaned_data["known_fields"]
        bad = [name for name in fields if not METADATA_KEY.match(name) or "__" in name]
        if bad:
            shown = ", ".join(repr(name[:40]) for name in bad[:5])
            raise forms.ValidationError(
                _("Not a metadata key: %(keys)s (letters, digits, '_' and '-' only).") % {"keys": shown}
            )
        return fields

    def clean_record_patterns(self):
        problems = [
            _("Pattern %(number)s (%(pattern)s) %(problem)s.")
            % {"number": i, "pattern": repr(pattern), "problem": problem}
            for i, pattern in enumerate(self.cleaned_data["record_patterns"], 1)
            if (problem := pattern_problem(pattern))
        ]
        if problems:
            raise forms.ValidationError(problems)
        return self.cleaned_data["record_patterns"]

    def clean_keep_mapping(self):
        keep = self.cleaned_data["keep_mapping"]
        if keep and not mapping.key_set():
            raise forms.ValidationError(
                _(
                    "The mapping cannot be kept: DEID_MAPPING_KEY is not set on this server. Set it (a Fernet key) "
                    "on the web app and every worker first; without it nothing could encrypt the pairs."
                )
            )
        return keep

    def clean_ner_model_dir(self):
        value = self.cleaned_data["ner_model_dir"].strip()
        if value and not PurePosixPath(value).is_absolute():
            raise forms.ValidationError(_("An absolute path of a folder on the workers, e.g. /models/it_core_news_lg."))
        return value

    def changes(self) -> dict:
        """What the audit entry says: the fields changed by name, the mode and switches, and how
        many entries each list holds now; never the lists' contents (names could be in them)."""
        data = self.cleaned_data
        return {
            "changed": sorted(self.changed_data),
            "mode": data["mode"],
            "patient_field_set": bool(data["patient_field"]),
            "keep_mapping": data["keep_mapping"],
            "ner_model": bool(data["ner_model_dir"]),
            **{f"{name}_count": len(data[name]) for name in LISTS},
        }
