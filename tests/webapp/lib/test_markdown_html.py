"""Markdown to sanitised HTML: the allowed tags only, http(s) links only, nothing that runs."""

import pytest

from webapp.lib.markdown_html import render_markdown


def test_the_small_tag_set_is_rendered():
    html = render_markdown("### Evidence\n**rate** and _value_ `HR 130`\nnext line\n\n- one\n- two\n\n1. first")
    assert "<h3>Evidence</h3>" in html
    assert "<strong>rate</strong>" in html and "<em>value</em>" in html and "<code>HR 130</code>" in html
    assert "<br>" in html  # a line break stays a line break (plain-text guidelines keep their lines)
    assert "<ul>" in html and "<li>one</li>" in html and "<ol>" in html


def test_an_http_link_is_kept_with_rel():
    html = render_markdown("[protocol](https://example.org/guide)")
    assert '<a href="https://example.org/guide" rel="noopener noreferrer nofollow">protocol</a>' in html


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
        "[x](/relative/path)",
        '<a href="https://e.org" onclick="alert(1)" style="color:red">x</a>',
        '<img src=x onerror="alert(1)">',
        '<p style="background:url(javascript:alert(1))">x</p>',
        "<iframe src='https://e.org'></iframe>",
        "<style>body{display:none}</style>",
        '<svg onload="alert(1)"></svg>',
        "<!-- <script>alert(1)</script> -->",
    ],
)
def test_hostile_input_leaves_nothing_that_runs_or_styles(hostile):
    html = render_markdown(hostile).lower()
    for bad in ("<script", "javascript:", "onclick", "onerror", "onload", "style", "<img", "<iframe", "<svg", "data:"):
        assert bad not in html
    assert 'href="/' not in html


def test_raw_html_outside_the_set_is_not_passed_through():
    html = render_markdown("<div><h1>Title</h1><table><tr><td>x</td></tr></table></div>")
    assert "<div" not in html and "<h1" not in html and "<table" not in html


def test_empty_text_gives_nothing():
    assert render_markdown("  \n ") == ""
