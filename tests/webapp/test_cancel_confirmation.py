"""Every Cancel button asks first: each form posting to a cancel URL carries data-confirm, which
static/js/confirm.js turns into a question before the submit."""

import re
from pathlib import Path

from django.conf import settings

TEMPLATES = Path(settings.BASE_DIR) / "templates"
CANCEL_URLS = [
    "corpus:import_cancel",
    "datasets:cancel",
    "datasets:export_cancel",
    "evaluation:cancel",
    "pipeline:job_cancel",
    "training:run_cancel",
]
FORM_TAG = re.compile(r"<form\b[^>]*>", re.S)


def cancel_forms():
    """(template, form tag) of every form whose action is a cancel URL."""
    for path in sorted(TEMPLATES.rglob("*.html")):
        for tag in FORM_TAG.findall(path.read_text()):
            action = re.search(r'action="([^"]*)"', tag)
            if action and "cancel" in action.group(1):
                yield path.relative_to(TEMPLATES).as_posix(), tag


def test_every_cancel_url_has_a_button_in_the_templates():
    text = "".join(path.read_text() for path in TEMPLATES.rglob("*.html"))
    missing = [name for name in CANCEL_URLS if f"'{name}'" not in text]
    assert not missing


def test_every_cancel_form_asks_before_it_submits():
    forms = list(cancel_forms())
    assert len(forms) >= 5  # jobs and imports share includes/work_actions.html
    unconfirmed = [(template, tag) for template, tag in forms if 'data-confirm="' not in tag]
    assert not unconfirmed
