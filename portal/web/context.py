from django.conf import settings


def portal(request):
    return {"lab_name": settings.LAB_NAME, "lab_time_zone": settings.TIME_ZONE}
