"""The dataset pages' stored English in the reader's language."""

from django import template

from webapp.datasets import error_text

register = template.Library()


@register.filter
def dataset_error(text):
    """A build's or an export's stored error (webapp.datasets.error_text): its values as stored."""
    return error_text.shown(text)
