"""Browser pages of the inference app."""

urlpatterns: list = []
