"""A webhook delivery's stored error in the reader's language (webapp.integrations.delivery_text)."""

from django import template

from webapp.integrations import delivery_text

register = template.Library()


@register.filter
def delivery_error(text):
    return delivery_text.shown(text)
