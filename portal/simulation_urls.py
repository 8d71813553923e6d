"""Browser pages of the simulation app: staff only (see portal/views/simulation.py)."""

from django.urls import path

from portal.views import simulation as views

urlpatterns = [
    path("simulate/", views.home, name="simulation-home"),
    path("simulate/new/", views.start_compare, name="simulation-new"),
    path("simulate/whatif/", views.start_whatif, name="simulation-whatif"),
    path("simulate/<int:pk>/", views.run_detail, name="simulation-run"),
    path("simulate/<int:pk>/report/", views.run_report, name="simulation-report"),
    path("simulate/<int:pk>/plots/<str:name>.png", views.run_plot, name="simulation-plot"),
]
