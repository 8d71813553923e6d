from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from jobs.models import Job
from tenants.models import Group
from tenants.scoping import member_group_ids


@login_required
def dashboard(request):
    jobs = Job.objects.visible_to(request.user).filter(user=request.user).select_related("group", "partition")[:50]
    groups = (
        Group.objects.visible_to(request.user).filter(pk__in=member_group_ids(request.user)).select_related("tenant")
    )
    return render(request, "portal/dashboard.html", {"jobs": jobs, "groups": groups})
