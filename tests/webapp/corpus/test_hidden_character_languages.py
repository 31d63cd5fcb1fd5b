"""A task's or a corpus's name refused for a hidden character names the character and its offset
in the reader's language: the whole sentence, not an English phrase inside an Italian one."""

import pytest
from django import forms
from django.utils import translation

from webapp.corpus.forms import visible_name
from webapp.corpus.task_forms import _normal

PHRASES = {
    "en": "the invisible format character U+202E at offset 3",
    "it": "il carattere di formato invisibile U+202E alla posizione 3",
}


@pytest.mark.parametrize("code", ["en", "it"])
@pytest.mark.parametrize("check", [lambda v: _normal(v, "description"), visible_name], ids=["task", "corpus"])
def test_a_hidden_character_is_named_in_the_readers_language(code, check):
    with translation.override(code), pytest.raises(forms.ValidationError) as refused:
        check("abc\u202edef")
    said = " ".join(refused.value.messages)
    assert PHRASES[code] in said, said
    if code != "en":
        assert PHRASES["en"] not in said
