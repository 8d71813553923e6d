"""The API's routes, read from the URL resolver, so tests cover every endpoint without a hand-kept list."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver, reverse

V1 = "api/v1/"


@dataclass(frozen=True)
class Route:
    name: str  # namespaced, e.g. "api:job-detail"
    route: str  # the pattern as written, for messages
    kwargs: tuple[str, ...]  # URL parameters, e.g. ("pk",)
    methods: tuple[str, ...]  # lower-case HTTP methods the view answers (options/head left out)

    @property
    def is_detail(self) -> bool:
        return bool(self.kwargs)

    def url(self, **values) -> str:
        return reverse(self.name, kwargs={k: values.get(k, 1) for k in self.kwargs})


def _methods(callback) -> tuple[str, ...]:
    actions = getattr(callback, "actions", None)
    if actions:
        allowed = callback.cls.http_method_names
        return tuple(sorted(m for m in actions if m in allowed))
    view_class = getattr(callback, "view_class", None)
    if view_class is None:  # a plain function view
        return ("get",)
    return tuple(
        m for m in view_class.http_method_names if m not in ("options", "head", "trace") and hasattr(view_class, m)
    )


def _walk(patterns, prefix: str, namespaces: tuple[str, ...]):
    for pattern in patterns:
        text = prefix + str(pattern.pattern).lstrip("^").rstrip("$")
        if isinstance(pattern, URLResolver):
            extra = (pattern.namespace,) if pattern.namespace else ()
            yield from _walk(pattern.url_patterns, text, namespaces + extra)
        elif isinstance(pattern, URLPattern) and pattern.name:
            name = ":".join((*namespaces, pattern.name))
            yield Route(name, text, tuple(pattern.pattern.regex.groupindex), _methods(pattern.callback))


def api_v1_routes() -> list[Route]:
    routes = [r for r in _walk(get_resolver().url_patterns, "", ()) if r.route.startswith(V1)]
    assert routes, "no API routes found: is api.urls included under api/?"
    return routes
