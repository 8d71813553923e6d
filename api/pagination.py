"""Cursor pagination for every list: ``{"next", "previous", "results"}``, stable while rows are added."""

from __future__ import annotations

from rest_framework import pagination


class CursorPagination(pagination.CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = "-id"

    def get_ordering(self, request, queryset, view):
        # Each view names its own unique, indexed ordering (jobs: newest first; inventory: by name).
        ordering = getattr(view, "cursor_ordering", self.ordering)
        return (ordering,) if isinstance(ordering, str) else tuple(ordering)
