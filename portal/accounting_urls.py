"""Browser pages of the accounting app."""

urlpatterns: list = []
