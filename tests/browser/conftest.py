"""Real headless Chromium (Debian's package) driven by Playwright against the live test server."""

import os
import shutil

import pytest

from tests.browser import language

CHROMIUM = os.environ.get("DSM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

# Playwright's sync API runs an event loop; Django must allow its ORM calls from tests around it.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/browser" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        if os.environ.get("DSM_REQUIRE_BROWSER") == "1":
            pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install chromium")
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    # A bound for a page that never comes, not a speed target: the first page of a live server
    # took 7.5 s on a 2-core machine under load, so 30 s keeps a slow machine green.
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.fixture
def login(page):
    """login(user) logs the user in through the real login form and returns the page."""
    from tests.conftest import PASSWORD

    def do_login(user):
        page.goto("/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        return page

    return do_login


@pytest.fixture(params=["en", *language.LANGUAGES])
def lang(request):
    """The interface languages the language walks run in (tests/browser/language.py)."""
    return request.param


@pytest.fixture
def lang_page(browser, live_server, lang):
    """A page of a browser context that asks for `lang` (Accept-Language)."""
    page = language.new_page(browser, live_server.url, lang)
    yield page
    page.context.close()
