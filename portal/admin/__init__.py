"""The pool admin's pages (staff only). Django's autodiscovery imports this package; the modules register."""

from django.contrib import admin

from portal.admin import cluster, inference, jobs, monitoring, notifications, registry, tenants  # noqa: F401  (registration happens on import)

admin.site.site_header = "aipool administration"
admin.site.site_title = "aipool admin"
admin.site.index_title = "Pool administration"
