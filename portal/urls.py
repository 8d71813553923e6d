from django.contrib import admin
from django.urls import include, path

from portal import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("dashboard/jobs/", views.dashboard_jobs, name="dashboard-jobs"),
    path("dashboard/usage/", views.dashboard_usage, name="dashboard-usage"),
    path("dashboard/pool/", views.dashboard_pool, name="dashboard-pool"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/new/", views.job_new, name="job-new"),
    path("jobs/new/check/", views.job_check, name="job-check"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/live/", views.job_live, name="job-live"),
    path("jobs/<int:pk>/explain/", views.job_explain, name="job-explain"),
    path("jobs/<int:pk>/log/<str:stream>/", views.job_log, name="job-log"),
    path("jobs/<int:pk>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("quota/", views.quota, name="quota"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke/", views.token_revoke_view, name="token-revoke"),
    path("groups/<slug:name>/", views.group_detail, name="group-detail"),
    path("groups/<slug:name>/limits/", views.group_limits, name="group-limits"),
    path("tenants/<slug:name>/", views.tenant_detail, name="tenant-detail"),
    path("tenants/<slug:name>/members/", views.tenant_member_add, name="tenant-member-add"),
    path("tenants/<slug:name>/members/<int:pk>/", views.tenant_member_change, name="tenant-member-change"),
    path("tenants/<slug:name>/members/<int:pk>/remove/", views.tenant_member_remove, name="tenant-member-remove"),
    path("tenants/<slug:name>/groups/", views.tenant_group_add, name="tenant-group-add"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/", include("api.urls")),
    path("", include("portal.registry_urls")),
    path("", include("portal.inference_urls")),
    path("", include("portal.monitoring_urls")),
    path("", include("portal.accounting_urls")),
    path("", include("portal.notifications_urls")),
    path("", include("portal.simulation_urls")),
]

handler400 = "portal.views.errors.bad_request"
handler403 = "portal.views.errors.permission_denied"
handler404 = "portal.views.errors.page_not_found"
handler500 = "portal.views.errors.server_error"
