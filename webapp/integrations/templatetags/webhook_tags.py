"""The webhooks page's words: a delivery's stored error (webapp.integrations.delivery_text) and an
event by its label, in the reader's language."""

from django import template
from django.utils.html import format_html

from webapp.integrations import delivery_text
from webapp.integrations.models import Webhook

register = template.Library()


@register.filter
def delivery_error(text):
    return delivery_text.shown(text)


@register.filter
def webhook_event(code):
    """An event's label with its code beside it (what a receiver reads in X-DSM-Event); an event no
    longer known by its code alone."""
    label = dict(Webhook.Event.choices).get(code)
    if label is None:
        return format_html("<code>{}</code>", code)
    return format_html("{} <small><code>{}</code></small>", label, code)
