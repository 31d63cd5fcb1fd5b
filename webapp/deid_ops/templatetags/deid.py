"""{% deid_card corpus %}: a corpus page's de-identification card (whether it is de-identified,
from what, the versions made from it, its jobs, the launch button), without the corpus app
importing this one."""

from django import template

from webapp.deid_ops import jobs
from webapp.projects.roles import Capability, has_capability

register = template.Library()


@register.inclusion_tag("deid/corpus_card.html", takes_context=True)
def deid_card(context, corpus):
    user = context["request"].user
    return {
        "corpus": corpus,
        "versions": corpus.deidentified_versions.order_by("name"),
        "jobs": jobs.recent(corpus),
        "may_launch": has_capability(user, Capability.LAUNCH, corpus.project_id) and not corpus.deidentified,
        "csrf_token": context.get("csrf_token"),
    }


@register.filter
def deid_error(text):
    """A de-identification job's or scan's stored error in the reader's language
    (webapp.deid_ops.error_text): a policy's own words and an error's type as stored."""
    from webapp.deid_ops import error_text

    return error_text.shown(text)
