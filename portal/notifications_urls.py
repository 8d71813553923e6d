"""Browser pages of the notifications app."""

urlpatterns: list = []
