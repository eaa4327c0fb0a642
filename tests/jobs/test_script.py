"""A job given as a script: the API's `script` (exactly one of command and script), the form's command line (split
as a shell splits words) and script box, the file the local sandbox and the Kubernetes pod run, the limits."""

import kubernetes_validate
import pytest

from jobs.backends.base import SCRIPT_ARGV, SCRIPT_PATH, JobSpec
from jobs.backends.manifests import ANNOTATION_SCRIPT, ClusterConfig, job_manifest
from jobs.forms import split_command_line
from jobs.models import Job, JobState
from jobs.services.dispatch import job_spec, jobs_follow
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab, local_backend_fixture, wait_until  # noqa: F401
from tests.jobs.test_manifests import KUBERNETES_VERSIONS, spec

URL = "/api/v1/jobs/"
SCRIPT = 'set -e\necho "first $PORTAL_JOB_ID"\nfor n in 1 2; do echo "line $n"; done | tr a-z A-Z\n'
GOOD = {"name": "script", "image": IMAGE, "script": SCRIPT, "gpus": 1, "max_runtime_s": 3600}


@pytest.fixture
def _lab(db):
    ImageRuleFactory()
    lab(2)


# --- the API --------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_every_role_submits_a_script_and_reads_it_back_exactly(api_as, _lab, role):
    response = api_as(role).post(URL, GOOD, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["script"] == SCRIPT and body["command"] == []
    job = Job.objects.get()
    assert job.script == SCRIPT and job.command == []
    assert api_as(role).get(f"{URL}{job.pk}/").json()["script"] == SCRIPT


def test_anonymous_may_not_submit_a_script(api_as, _lab):
    assert api_as("anonymous").post(URL, GOOD, format="json").status_code == 401
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"command": ["python", "x.py"]}, "script", "not both"),
        ({"script": None}, "command", "a command (argv) or a script"),
        ({"script": "   \n"}, "script", "Required: the script"),
        ({"script": ["echo", "hi"]}, "script", "Not a valid string"),
        ({"script": "echo a\x00b"}, "script", "NUL"),
        ({"script": "x" * 5000}, "script", "at most 4096 bytes"),
    ],
)
def test_bad_scripts_are_400_naming_the_field_and_write_nothing(api_as, _lab, settings, change, field, says):
    settings.JOBS_SCRIPT_MAX_BYTES = 4096
    response = api_as("student").post(URL, {**GOOD, **change}, format="json")
    assert response.status_code == 400
    assert says in str(response.json()), response.json()
    assert field in str(response.json())
    assert not Job.objects.exists()


def test_the_preview_takes_a_script_too(api_as, _lab):
    response = api_as("student").post(URL + "preview/", GOOD, format="json")
    assert response.status_code == 200 and response.json()["starts_now"] is True


# --- what the backends run ------------------------------------------------------------------------


def test_a_script_job_becomes_the_shell_reading_the_file(api_as, _lab):
    api_as("student").post(URL, GOOD, format="json")
    built = job_spec(Job.objects.get())
    assert built.command == SCRIPT_ARGV == ("/bin/sh", SCRIPT_PATH) and built.script == SCRIPT
    assert built.problems() == []
    assert JobSpec(1, 1, "i", ("python",), 1, 60, script="echo").problems() == [
        "a script runs as /bin/sh /portal/job.sh, without NUL bytes"
    ]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_pod_gets_the_script_as_a_read_only_file(version):
    manifest = job_manifest(spec(command=SCRIPT_ARGV, script=SCRIPT), ClusterConfig())
    kubernetes_validate.validate(manifest, version, strict=True)
    template = manifest["spec"]["template"]
    assert template["metadata"]["annotations"] == {ANNOTATION_SCRIPT: SCRIPT}
    container = template["spec"]["containers"][0]
    assert container["command"] == ["/bin/sh", "/portal/job.sh"]
    assert {"name": "script", "mountPath": "/portal", "readOnly": True} in container["volumeMounts"]
    volume = next(v for v in template["spec"]["volumes"] if v["name"] == "script")
    assert volume["downwardAPI"]["items"] == [
        {"path": "job.sh", "fieldRef": {"fieldPath": f"metadata.annotations['{ANNOTATION_SCRIPT}']"}}
    ]
    # A command job's pods carry no script.
    plain = job_manifest(spec(), ClusterConfig())["spec"]["template"]
    assert "annotations" not in plain["metadata"] and "script" not in str(plain["spec"]["volumes"])


def test_a_script_runs_on_the_local_backend_in_the_sandbox(
    api_as, _lab, local_backend, django_capture_on_commit_callbacks
):
    client = api_as("teacher")
    script = SCRIPT + 'echo "$0"\ntouch /portal/job.sh 2>/dev/null || echo "read-only"\n'
    with django_capture_on_commit_callbacks(execute=True):
        job_id = client.post(URL, {**GOOD, "script": script}, format="json").json()["id"]

    def done():
        jobs_follow()
        return Job.objects.get(pk=job_id).state in (JobState.SUCCEEDED, JobState.FAILED)

    wait_until(done, step=0.1)
    job = Job.objects.get(pk=job_id)
    log = client.get(f"{URL}{job_id}/logs/").content.decode()
    assert job.state == JobState.SUCCEEDED, (job.message, log)
    assert log == f"first {job_id}\nLINE 1\nLINE 2\n/portal/job.sh\nread-only\n"


# --- the form's command line -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "argv"),
    [
        ('python -c "print(1)"', ["python", "-c", "print(1)"]),
        ("python train.py --lr 0.1", ["python", "train.py", "--lr", "0.1"]),
        ("python -c 'print(\"a | b\")'", ["python", "-c", 'print("a | b")']),
        (r"echo it\'s", ["echo", "it's"]),
        ("python\ntrain.py\n--epochs\n3\n", ["python", "train.py", "--epochs", "3"]),  # the old one-per-line form
    ],
)
def test_a_command_line_is_split_as_a_shell_splits_words(line, argv):
    assert split_command_line(line) == argv


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('python -c "print(1)', "close every quote"),
        ("python train.py | tee log", "| need a shell"),
        ("make && ./run", "&& need a shell"),
        ("python train.py > out.txt", "> need a shell"),
        ("cd src; python x.py", "; need a shell"),
        ("   ", "Required"),
    ],
)
def test_what_only_a_shell_runs_is_refused_with_the_way_out(line, says):
    from django import forms

    with pytest.raises(forms.ValidationError) as caught:
        split_command_line(line)
    assert says in " ".join(caught.value.messages)


# --- the form ------------------------------------------------------------------------------------

FORM = {
    "name": "first",
    "image": IMAGE,
    "kind": "command",
    "command": 'python -c "print(1)"',
    "script": "",
    "gpus": "1",
    "nodes": "1",
    "max_runtime_s": "3600",
    "priority": "normal",
    "reservation": "",
    "env": "",
}


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_the_form_runs_a_command_line_and_shows_its_arguments_first(browser_client, _lab, role):
    client = browser_client(role)
    page = client.post("/jobs/new/", {**FORM, "action": "preview"}).content.decode()
    assert "It will run these arguments" in page
    assert "<li><code>python</code></li><li><code>-c</code></li><li><code>print(1)</code></li>" in page
    response = client.post("/jobs/new/", FORM)
    job = Job.objects.get()
    assert response.status_code == 302 and job.command == ["python", "-c", "print(1)"] and job.script == ""
    assert (
        '<code data-testid="job-command">python -c &#x27;print(1)&#x27;</code>'
        in client.get(f"/jobs/{job.pk}/").content.decode()
    )


def test_the_form_runs_a_script_and_the_job_page_shows_it_exactly(browser_client, _lab):
    client = browser_client("student")
    script = "\n  indented <b>&amp;\r\nlast line without newline"
    response = client.post("/jobs/new/", {**FORM, "kind": "script", "script": script, "command": "ignored |"})
    job = Job.objects.get()
    assert response.status_code == 302 and job.script == script.replace("\r\n", "\n") and job.command == []
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    shown = "\n  indented &lt;b&gt;&amp;amp;\nlast line without newline</pre>"
    assert '<pre class="logs" data-testid="job-script">' + shown in page


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"command": "python train.py | tee log"}, "| need a shell"),
        ({"command": 'python -c "print(1)'}, "close every quote"),
        ({"command": ""}, "Required"),
        ({"kind": "script", "script": " \n "}, "Required: the script"),
        ({"kind": "script", "script": "echo\x00"}, "NUL"),
    ],
)
def test_the_form_says_what_is_wrong_and_queues_nothing(browser_client, _lab, change, says):
    response = browser_client("student").post("/jobs/new/", {**FORM, **change})
    assert response.status_code == 400 and says in response.content.decode()
    assert not Job.objects.exists()
