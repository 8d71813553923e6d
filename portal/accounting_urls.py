"""Browser pages of the accounting app."""

from django.urls import path

from portal.views import accounting

urlpatterns: list = [
    path("usage/", accounting.usage, name="usage"),
    path("usage/export.csv", accounting.usage_csv, name="usage-csv"),
]
