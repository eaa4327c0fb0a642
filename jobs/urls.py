"""Job routes: the pages (`urlpatterns`) and the v1 API (`api_urlpatterns`), both included by portal/urls.py."""

from django.urls import path

from jobs import api, api_catalog, api_datasets, api_outputs, api_templates, views, views_templates

urlpatterns = [
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/new/", views.job_new, name="job-new"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("jobs/new/template/<int:template_id>/", views_templates.job_from_template, name="job-from-template"),
    path("courses/<str:code>/job-templates/", views_templates.template_list, name="job-templates"),
    path("courses/<str:code>/job-templates/new/", views_templates.template_edit, name="job-template-new"),
    path(
        "courses/<str:code>/job-templates/<int:template_id>/",
        views_templates.template_edit,
        name="job-template",
    ),
    path(
        "courses/<str:code>/job-templates/<int:template_id>/delete/",
        views_templates.template_delete_view,
        name="job-template-delete",
    ),
    path("jobs/<int:job_id>/resume/", views.job_resume_view, name="job-resume"),
]

api_urlpatterns = [
    path(
        "courses/<str:code>/job-templates/", api_templates.CourseJobTemplatesApi.as_view(), name="course-job-templates"
    ),
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
