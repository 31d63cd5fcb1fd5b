"""A webhook delivery's `error`, stored in English (the API and the logs read it as written), shown on
the project's webhooks page in the reader's language (webapp.lib.known_text), and the outbound
policy's refusal of a URL as the webhook form says it. The writers format the templates listed here
(webapp.integrations.webhooks, webapp.lib.outbound); a host, an address, a status code and an
exception's type and own words stay as stored; a text no template matches is shown as stored.
"""

from functools import cache

from django.utils import translation

from webapp.integrations import webhooks
from webapp.lib import outbound
from webapp.lib.known_text import Known, KnownTexts

REFUSALS = (
    outbound.UNREADABLE,
    Known(outbound.NOT_HTTP, words=("scheme",)),
    outbound.NO_SCHEME,
    outbound.CREDENTIALS,
    outbound.NO_HOST,
    outbound.UNRESOLVED,
    outbound.NO_ADDRESS,
    Known(outbound.NOT_PUBLIC, words=("kind",)),
    *(kind for _, kind in outbound.KINDS),
    outbound.NON_PUBLIC,
)
ERRORS = (
    webhooks.SWITCHED_OFF,
    Known(webhooks.REFUSED, words=("reason",)),
    webhooks.REDIRECT,
    *REFUSALS,
    outbound.BAD_ANSWER,
    outbound.NOTHING_TO_CONNECT,
    Known(webhooks.NOT_SENT, words=("reason",)),  # last: any "Type: words"
)


@cache
def texts() -> KnownTexts:
    return KnownTexts(ERRORS)


def shown(text):
    """A delivery's stored error, or a refusal, in the active language; as stored when not recognised."""
    return texts().render(text, translation)
