"""The one FilterSet for model and dataset lists, shared by the REST API and the browser pages.

``?task=text-generation&license=apache-2.0&search=llama``: values are checked like every other input (an unknown
visibility is a 400), and free text matches words in the name, organisation, summary, task, licence and tags.
"""

from __future__ import annotations

import django_filters

from registry.models import Collection, Visibility
from registry.selectors import search


class CollectionFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(method="filter_search", max_length=200, help_text="Words to look for")
    task = django_filters.CharFilter(field_name="task", max_length=64, help_text="Pipeline tag, e.g. text-generation")
    license = django_filters.CharFilter(field_name="license", max_length=64, help_text="e.g. apache-2.0, mit")
    library = django_filters.CharFilter(field_name="library", max_length=64, help_text="e.g. transformers")
    namespace = django_filters.CharFilter(field_name="namespace", max_length=64, help_text="Tenant or organisation")
    name = django_filters.CharFilter(method="filter_name", max_length=200, help_text="Full name NAMESPACE/NAME")
    tag = django_filters.CharFilter(method="filter_tag", max_length=64, help_text="A tag, e.g. moe")
    visibility = django_filters.ChoiceFilter(choices=Visibility.choices)
    catalog = django_filters.BooleanFilter(field_name="from_catalog", help_text="Only (or no) preset catalog entries")

    class Meta:
        model = Collection
        fields = ["search", "task", "license", "library", "namespace", "name", "tag", "visibility", "catalog"]

    def filter_search(self, queryset, name, value):
        return search(queryset, value)

    def filter_name(self, queryset, name, value):
        namespace, _, short = value.partition("/")
        return queryset.filter(namespace=namespace, name=short)

    def filter_tag(self, queryset, name, value):
        # JSON list membership without database-specific JSON operators: match the quoted element.
        return queryset.filter(tags__icontains=f'"{value}"')
