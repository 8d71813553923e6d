"""Cursor pagination for every list: ``{"next", "previous", "results"}``, stable while rows are added."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, pagination

INVALID_CURSOR = "invalid cursor: pass the 'next' or 'previous' URL of a page as it is"


class CursorPagination(pagination.CursorPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = "-id"

    def get_ordering(self, request, queryset, view):
        # Each view names its own unique, indexed ordering (jobs: newest first; inventory: by name).
        ordering = getattr(view, "cursor_ordering", self.ordering)
        return (ordering,) if isinstance(ordering, str) else tuple(ordering)

    def paginate_queryset(self, queryset, request, view=None):
        self.model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request):
        # DRF answers a mangled cursor with 404, which reads as "no such list": it is bad input, so 400.
        try:
            cursor = super().decode_cursor(request)
        except exceptions.NotFound as exc:
            raise self.invalid() from exc
        if cursor is not None and cursor.position is not None:
            self._check_position(cursor.position)
        return cursor

    def _check_position(self, position: str) -> None:
        """The position is compared with the ordering field in SQL: one that is not a value of it (an id that
        is no number, text with NUL) would fail in the database instead of here."""
        field = self.model._meta.get_field(self.ordering[0].lstrip("-"))
        if "\x00" in position:
            raise self.invalid()
        try:
            field.to_python(position)
        except DjangoValidationError as exc:
            raise self.invalid() from exc

    def invalid(self) -> exceptions.ValidationError:
        return exceptions.ValidationError({self.cursor_query_param: [INVALID_CURSOR]})
