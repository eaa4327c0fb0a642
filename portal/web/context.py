import functools

from django.conf import settings

from accounts.permissions import looks_after_courses
from labs.maintenance.selectors import banners


def portal(request):
    user = getattr(request, "user", None)
    return {
        "lab_name": settings.LAB_NAME,
        "lab_time_zone": settings.TIME_ZONE,
        # A callable: the template asks only on pages that show the menu (one query for a student, once per page).
        "looks_after_courses": functools.cache(lambda: user is not None and looks_after_courses(user)),
        # Announcements and coming maintenance on every page (a callable: asked only when the page renders it).
        "banners": banners,
    }
