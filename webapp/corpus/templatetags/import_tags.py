"""The import pages' stored English in the reader's language."""

from django import template

from webapp.corpus import problem_text

register = template.Library()


@register.filter
def import_error(text):
    """An import job's stored error (webapp.corpus.problem_text.error): counts and reasons as stored."""
    return problem_text.error(text)
