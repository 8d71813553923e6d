"""``{% job_health job as health %}``: the health panel's data, for pages that already hold a scoped job."""

from django import template

from monitoring.selectors import job_health as health_of

register = template.Library()


@register.simple_tag
def job_health(job):
    return health_of(job)
