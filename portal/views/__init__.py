"""The browser pages. Every queryset starts from ``visible_to(request.user, action)``; writes call the services."""

from portal.views.account import quota, token_revoke_view, tokens
from portal.views.dashboard import dashboard, dashboard_jobs, dashboard_pool, dashboard_usage
from portal.views.errors import bad_request, page_not_found, permission_denied, server_error
from portal.views.jobs import job_cancel_view, job_detail, job_explain, job_list, job_live, job_log
from portal.views.submit import job_check, job_new
from portal.views.tenancy import (
    group_detail,
    group_limits,
    tenant_detail,
    tenant_group_add,
    tenant_member_add,
    tenant_member_change,
    tenant_member_remove,
)

__all__ = [
    "bad_request",
    "dashboard",
    "dashboard_jobs",
    "dashboard_pool",
    "dashboard_usage",
    "group_detail",
    "group_limits",
    "job_cancel_view",
    "job_check",
    "job_detail",
    "job_explain",
    "job_list",
    "job_live",
    "job_log",
    "job_new",
    "page_not_found",
    "permission_denied",
    "quota",
    "server_error",
    "tenant_detail",
    "tenant_group_add",
    "tenant_member_add",
    "tenant_member_change",
    "tenant_member_remove",
    "token_revoke_view",
    "tokens",
]
