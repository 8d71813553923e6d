"""Browser pages of the model and dataset repository (filled in by the registry work)."""

urlpatterns: list = []
