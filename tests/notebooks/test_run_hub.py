"""manage.py run_hub: outside DEBUG it runs students' notebooks on this machine only in a declared one-machine lab."""

import pytest
from django.core.management import CommandError, call_command


def test_outside_debug_the_local_spawner_needs_a_single_machine_lab(settings):
    settings.DEBUG = False
    settings.SINGLE_MACHINE_LAB = False
    with pytest.raises(CommandError, match="SINGLE_MACHINE_LAB=true"):
        call_command("run_hub", "--spawner", "local", "--timeout", "0.01")  # no hub would come up in time
