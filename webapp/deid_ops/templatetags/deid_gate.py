"""{% deid_gate_card corpus %}: a corpus page's gate and residual-scan card (webapp.deid_ops.gate_views),
without the corpus app importing this one."""

from django import template

from webapp.deid_ops.gate_views import scan_card_context

register = template.Library()


@register.inclusion_tag("deid/scan_card.html", takes_context=True)
def deid_gate_card(context, corpus):
    return {**scan_card_context(corpus, context["request"].user), "csrf_token": context.get("csrf_token")}
