"""Small things every page shares: the favicon, and Cancel buttons that ask before they cancel."""

import re
from pathlib import Path

from django.conf import settings
from django.urls import reverse

TEMPLATES = Path(settings.BASE_DIR) / "templates"
STATIC = Path(settings.BASE_DIR) / "static"


def test_the_favicon_is_linked_from_every_page_and_favicon_ico_is_not_a_404(client, db):
    page = client.get(reverse("login")).content.decode()
    assert 'rel="icon"' in page and "favicon.svg" in page
    response = client.get("/favicon.ico")  # no login needed: browsers ask before anyone logs in
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")
    icon = client.get(response["Location"])
    assert icon.status_code == 200 and b"<svg" in b"".join(icon.streaming_content)


def test_every_cancel_form_asks_for_confirmation_and_base_loads_the_script(client, db):
    forms = []
    for path in TEMPLATES.rglob("*.html"):
        forms += [(path.name, tag) for tag in re.findall(r"<form\b[^>]*>", path.read_text()) if "cancel" in tag]
    assert len(forms) >= 5, forms  # work_actions, evaluation, training, dataset build and export
    for name, tag in forms:
        assert "data-confirm=" in tag, (name, tag)
    assert "js/confirm.js" in client.get(reverse("login")).content.decode()
    script = (STATIC / "js" / "confirm.js").read_text()
    assert "data-confirm" in script and "window.confirm" in script and "preventDefault" in script


def test_pages_name_the_signed_in_user_for_the_review_position(client, clinician):
    """review.js keys the remembered peak by body[data-user]; confirm.js forgets it on logout."""
    assert "data-user" not in client.get(reverse("login")).content.decode()
    client.force_login(clinician)
    page = client.get(reverse("home"), follow=True).content.decode()
    assert re.search(rf'<body\b[^>]*\bdata-user="{clinician.pk}"', page)
    assert re.search(r"<form\b[^>]*\bdata-logout\b", page)
    review = (STATIC / "review" / "review.js").read_text()
    assert "dataset.user" in review and '"dsm-peak-" + user' in review
    assert "data-logout" in (STATIC / "js" / "confirm.js").read_text()
