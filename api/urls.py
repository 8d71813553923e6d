"""``/api/``: v1 resources, the OpenAPI schema and its interactive docs; anything else under /api/ is a JSON 404."""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from api import views
from api.errors import not_found
from api.views import accounting, inference, monitoring, notifications, registry, simulation

app_name = "api"

router = SimpleRouter()
router.register("tenants", views.TenantViewSet, basename="tenant")
router.register("groups", views.GroupViewSet, basename="group")
router.register("memberships", views.MembershipViewSet, basename="membership")
router.register("partitions", views.PartitionViewSet, basename="partition")
router.register("nodes", views.NodeViewSet, basename="node")
router.register("jobs", views.JobViewSet, basename="job")
router.register("tokens", views.TokenViewSet, basename="token")
DOMAIN_VIEWS = (registry, inference, monitoring, accounting, notifications, simulation)
for module in DOMAIN_VIEWS:
    for prefix, viewset, basename in module.ROUTES:
        router.register(prefix, viewset, basename=basename)

v1 = [
    path("me/", views.MeView.as_view(), name="me"),
    path("me/quota/", views.QuotaView.as_view(), name="me-quota"),
    *(p for module in DOMAIN_VIEWS for p in getattr(module, "PATHS", [])),
    *router.urls,
]

urlpatterns = [
    path("v1/", include(v1)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    re_path(r"^.*$", not_found, name="not-found"),
]
