"""Markdown to sanitised HTML for text people write in the app (task guidelines).

Invariant: the output holds only ALLOWED_TAGS; the attributes are `href` on `a`, absolute
http/https links only (nh3 drops every other scheme, javascript: included; relative links are
dropped here), and the `rel` nh3 adds to links; no `style`, no `on*` attribute, no script, so it
is safe inside a page under the strict CSP. Raw HTML in the Markdown is removed or escaped by nh3,
never passed through. A line break in the text is a line break on the page (`nl2br`), so
guidelines written as plain text before keep their lines.
"""

import markdown
import nh3

ALLOWED_TAGS = frozenset({"p", "ul", "ol", "li", "strong", "em", "code", "a", "h3", "h4", "br"})
ALLOWED_ATTRIBUTES = {"a": {"href"}}
URL_SCHEMES = frozenset({"http", "https"})


def render_markdown(text: str) -> str:
    """Sanitised HTML of `text` (Markdown); empty for empty text."""
    if not text.strip():
        return ""
    html = markdown.markdown(text, extensions=["nl2br", "sane_lists"], output_format="html")
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        attribute_filter=_absolute_links_only,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def _absolute_links_only(tag: str, attribute: str, value: str) -> str | None:
    """nh3 keeps relative links; a guideline's links point outside the app, so keep only
    http(s)://... (None drops the attribute, the link's text stays)."""
    if attribute == "href" and not value.lower().startswith(("http://", "https://")):
        return None
    return value
