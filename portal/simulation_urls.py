"""Browser pages of the simulation app."""

urlpatterns: list = []
