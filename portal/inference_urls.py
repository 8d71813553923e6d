"""Browser pages of the inference app: /services/… (bookmarkable by id, like jobs)."""

from django.urls import path

from portal.views import inference as views

urlpatterns = [
    path("services/", views.service_list, name="service-list"),
    path("services/new/", views.service_new, name="service-new"),
    path("services/<int:pk>/", views.service_detail, name="service-detail"),
    path("services/<int:pk>/live/", views.service_live, name="service-live"),
    path("services/<int:pk>/delete/", views.service_delete_view, name="service-delete"),
    path("services/<int:pk>/keys/", views.key_create_view, name="service-key-create"),
    path("services/<int:pk>/keys/<int:key_pk>/revoke/", views.key_revoke_view, name="service-key-revoke"),
]
