"""Job routes: the pages (`urlpatterns`) and the v1 API (`api_urlpatterns`), both included by portal/urls.py."""

from django.urls import path

from jobs import api, api_catalog, api_datasets, api_outputs, views

urlpatterns = [
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/new/", views.job_new, name="job-new"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("jobs/<int:job_id>/resume/", views.job_resume_view, name="job-resume"),
]

api_urlpatterns = [
    path("images/", api_catalog.ImageListApi.as_view(), name="images"),
    path("datasets/", api_datasets.DatasetListApi.as_view(), name="datasets"),
    path("jobs/", api.JobListApi.as_view(), name="jobs"),
    path("jobs/preview/", api.JobPreviewApi.as_view(), name="job-preview"),
    path("jobs/<int:job_id>/", api.JobDetailApi.as_view(), name="job"),
    path("jobs/<int:job_id>/cancel/", api.JobCancelApi.as_view(), name="job-cancel"),
    path("jobs/<int:job_id>/logs/", api.JobLogsApi.as_view(), name="job-logs"),
    path("jobs/<int:job_id>/outputs/", api_outputs.JobOutputsApi.as_view(), name="job-outputs"),
    path("jobs/<int:job_id>/outputs/<path:path>", api_outputs.JobOutputFileApi.as_view(), name="job-output-file"),
    path("jobs/<int:job_id>/resume/", api_outputs.JobResumeApi.as_view(), name="job-resume"),
]
