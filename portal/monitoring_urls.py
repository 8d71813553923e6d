"""Browser pages of the monitoring app."""

urlpatterns: list = []
