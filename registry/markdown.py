"""Model cards as HTML, safely: raw HTML in the markdown is shown as text, and the output is sanitised again.

markdown-it-py renders CommonMark with ``html`` off (``<script>`` in a card becomes visible text, ``javascript:``
links are refused by its link validator); nh3 then keeps only an allow-list of tags and attributes, so a bug in one
layer is not enough to inject script into the portal.
"""

from __future__ import annotations

import re

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n", re.DOTALL)

TAGS = {
    "a", "p", "br", "hr", "em", "strong", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "img", "del",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "th": {"style"}, "td": {"style"}, "ol": {"start"}}


def strip_front_matter(text: str) -> str:
    """Hugging Face cards open with YAML metadata between --- lines; the page shows it as a table instead."""
    return _FRONT_MATTER.sub("", text or "", count=1)


def render(text: str) -> str:
    html = _md.render(strip_front_matter(text))
    return nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer",
        filter_style_properties={"text-align"},
    )
