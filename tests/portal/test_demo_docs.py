"""What the docs tell a newcomer to type works on the demo lab: the notebook profiles that the CLI's help and the
SDK's README start exist in `seed_demo`'s lab; the README says how to run on another port and that the SDK wants a
virtual environment."""

import re
from pathlib import Path

import pytest
from django.core.management import call_command

from labs.models import NotebookProfile

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_the_profiles_the_docs_start_exist_in_the_demo():
    named = set()
    for path in ("sdk/gpulab/cli.py", "sdk/README.md", "README.md"):
        named |= set(re.findall(r"nb start ([a-z0-9][-a-z0-9]*)", (ROOT / path).read_text()))
        named |= set(re.findall(r'notebooks\.start\("([^"]+)"\)', (ROOT / path).read_text()))
    assert named, "the docs name no profile"
    call_command("seed_demo", "--force", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert named <= set(NotebookProfile.objects.values_list("slug", flat=True))


def test_the_readme_says_port_host_and_the_sdk_venv():
    readme = (ROOT / "README.md").read_text()
    assert "PORT=8080 scripts/run.sh" in readme and "HOST=0.0.0.0" in readme
    assert "python3 -m venv" in readme and "pip install ./sdk" in readme
    serve = (ROOT / "scripts/serve.sh").read_text()
    assert '"${HOST:-127.0.0.1}"' in serve and '"${PORT:-8000}"' in serve
