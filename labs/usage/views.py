"""Usage pages (filled in below)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse


@login_required
def my_usage(request):
    return HttpResponse("")


@login_required
def course_usage(request):
    return HttpResponse("")


@login_required
def lab_usage(request):
    return HttpResponse("")


@login_required
def table_csv(request, table):
    return HttpResponse("")
