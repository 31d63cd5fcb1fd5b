"""A webhook delivery's error, stored in English by the worker (the API reads it so), and the outbound
policy's refusal of a URL, in the reader's language on the webhooks page: the templates of
webapp.lib.outbound and webapp.integrations.webhooks are recognised, a host, an address, a status
code and an exception's own words stay as stored."""

import html
from types import SimpleNamespace

import pytest
from django.utils import translation

from webapp.integrations import delivery_text, webhooks
from webapp.integrations.models import Webhook, WebhookDelivery
from webapp.lib import outbound

# a fake translation: each template in brackets, so what was recognised shows
FAKE = SimpleNamespace(
    gettext=lambda text: f"[{text}]",
    ngettext=lambda singular, plural, n: f"[{singular if n == 1 else plural}]",
    pgettext=lambda context, text: f"[{context}: {text}]",
)
LOOPBACK = (
    "Refused by the outbound policy: 127.0.0.1 is a loopback address: the server only calls public addresses "
    "(an administrator may allow a network with OUTBOUND_ALLOWED_NETWORKS)."
)
PAGE = {
    "it": (
        "Fermata: il webhook è stato spento.",
        "HTTP 302: un reindirizzamento, non seguito",
        "<td>Invio di prova <small><code>test</code></small></td>",  # the event by its label, its code beside it
    ),
    "es": (
        "Detenida: el webhook se desactivó.",
        "HTTP 302: una redirección, no seguida",
        "<td>Envío de prueba <small><code>test</code></small></td>",
    ),
}


def _shown(text):
    return delivery_text.texts().render(text, FAKE)


@pytest.fixture(autouse=True)
def _english_after():
    yield
    translation.deactivate()


def _refusal(url) -> str:
    with pytest.raises(outbound.OutboundRefused) as refused:
        outbound.check(url)
    return str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/x",
        "//example.org/x",
        "https://u:p@example.org/",
        "https://",
        "http://[::1/",
        "http://10.0.0.7/",
    ],
)
def test_every_refusal_of_the_outbound_policy_is_recognised(url):
    refusal = _refusal(url)
    assert delivery_text.texts().recognises(refusal), refusal
    assert delivery_text.texts().recognises(webhooks.REFUSED % {"reason": refusal})


def test_a_refusal_translates_its_template_and_its_kind_of_address_and_keeps_the_address():
    assert _shown(LOOPBACK) == (
        "[Refused by the outbound policy: [127.0.0.1 is a [address kind: loopback] address: the server only calls "
        "public addresses (an administrator may allow a network with OUTBOUND_ALLOWED_NETWORKS).]]"
    )
    assert _shown("Only http and https URLs are allowed, not ftp.") == (
        "[Only http and https URLs are allowed, not ftp.]"  # the scheme as written
    )
    assert (
        _shown(_refusal("//example.org/x")) == "[Only http and https URLs are allowed, not [a URL without a scheme].]"
    )


def test_the_worker_s_own_texts_are_recognised_and_an_exception_s_words_stay():
    assert _shown(webhooks.SWITCHED_OFF) == "[Stopped: the webhook was switched off.]"
    assert _shown("HTTP 302: a redirect, not followed") == "[HTTP 302: a redirect, not followed]"
    assert _shown("OSError: bad answer (BadStatusLine)") == "[OSError: [bad answer (BadStatusLine)]]"
    own_words = "ConnectionRefusedError: [Errno 111] Connection refused"
    assert _shown(own_words) == f"[{own_words}]"  # its type and words as stored
    assert _shown("HTTP 500") == "HTTP 500"  # a status: the same in every language
    assert _shown("an error of an older version") == "an error of an older version"


def test_in_english_a_stored_error_reads_as_stored():
    with translation.override("en"):
        assert delivery_text.shown(LOOPBACK) == LOOPBACK


@pytest.mark.parametrize("lang", ["it", "es"])
def test_the_webhooks_page_shows_deliveries_errors_in_the_reader_s_language(client_for, admin_user, own, lang):
    """Passes once the helpers' translations are merged into the catalogs (issue 42)."""
    hook = Webhook.objects.create(project=own["project"], url="https://hooks.example.org/x", secret="s" * 20)
    for error, code in ((webhooks.SWITCHED_OFF, None), ("HTTP 302: a redirect, not followed", 302)):
        WebhookDelivery.objects.create(
            webhook=hook, event="test", key="t", payload={}, status="failed", error=error, response_code=code
        )
    page = client_for(admin_user).get(f"/api/projects/{own['project'].slug}/webhooks/", HTTP_ACCEPT_LANGUAGE=lang)
    text = html.unescape(page.content.decode())
    for said in PAGE[lang]:
        assert said in text
    assert "switched off" not in text and "not followed" not in text
    assert WebhookDelivery.objects.filter(error=webhooks.SWITCHED_OFF).exists()  # stored English


@pytest.mark.parametrize("lang", ["it", "es"])
def test_the_webhook_form_refuses_a_private_address_in_the_reader_s_language(client_for, admin_user, own, lang):
    """Passes once the helpers' translations are merged into the catalogs (issue 42)."""
    url = f"/api/projects/{own['project'].slug}/webhooks/"
    page = client_for(admin_user).post(
        url, {"url": "http://10.0.0.7/hook", "secret": "s" * 20}, HTTP_ACCEPT_LANGUAGE=lang
    )
    text = html.unescape(page.content.decode())
    assert "10.0.0.7" in text and "the server only calls public addresses" not in text
    assert not Webhook.objects.exists()
