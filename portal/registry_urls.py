"""Browser pages of the model and dataset repository: /models/…, /datasets/… (bookmarkable, HF-style names)."""

from django.urls import path

from portal import registry_views as views

ENTRY = "<str:namespace>/<str:name>"
VERSION = f"{ENTRY}/versions/<int:number>"


def _pages(kind_slug: str) -> list:
    kind = {"kind_slug": kind_slug}
    return [
        path(f"{kind_slug}/", views.collection_list, kind, name=f"{kind_slug}-list"),
        path(f"{kind_slug}/new/", views.collection_new, kind, name=f"{kind_slug}-new"),
        path(f"{kind_slug}/{ENTRY}/", views.collection_detail, kind, name=f"{kind_slug}-detail"),
        path(f"{kind_slug}/{ENTRY}/versions/new/", views.version_new, kind, name=f"{kind_slug}-version-new"),
        path(f"{kind_slug}/{VERSION}/", views.version_detail, kind, name=f"{kind_slug}-version"),
        path(f"{kind_slug}/{VERSION}/upload/", views.version_upload, kind, name=f"{kind_slug}-version-upload"),
        path(f"{kind_slug}/{VERSION}/publish/", views.version_publish, kind, name=f"{kind_slug}-version-publish"),
        path(f"{kind_slug}/{VERSION}/files/<path:path>", views.file_download, kind, name=f"{kind_slug}-file"),
    ]


urlpatterns = [*_pages("models"), *_pages("datasets")]
