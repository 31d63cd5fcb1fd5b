"""The review report's agreement diagnostics, written in English by ml, in the reader's language
(webapp.review.agreement_text)."""

from django import template

from webapp.review import agreement_text

register = template.Library()


@register.filter
def diagnostic(text):
    return agreement_text.shown(text)
