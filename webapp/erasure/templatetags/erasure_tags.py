"""The erasure pages' stored English (target, files removed, error) in the reader's language."""

from django import template

from webapp.erasure import described_text

register = template.Library()


@register.filter
def erasure_words(text):
    """webapp.erasure.described_text.shown: the names, counts and hashes as stored."""
    return described_text.shown(text)
