from django.contrib import admin
from django.urls import include, path

from portal import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("api.urls")),
    path("", include("portal.registry_urls")),
]
