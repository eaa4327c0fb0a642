import pytest
from django.core.exceptions import ImproperlyConfigured

from portal.env import envbool, envchoice, envint, envlist


def test_helpers_read_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "yes")
    monkeypatch.setenv("X_INT", "42")
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert envbool("X_BOOL", False) is True
    assert envint("X_INT", 1) == 42
    assert envlist("X_LIST", []) == ["a", "b", "c"]
    assert envint("X_UNSET", 7) == 7


@pytest.mark.parametrize(
    "call,value",
    [
        (lambda: envbool("X", False), "maybe"),
        (lambda: envint("X", 1), "ten"),
        (lambda: envint("X", 1, minimum=5), "3"),
        (lambda: envchoice("X", "local", ("local", "kubernetes")), "k8s"),
    ],
)
def test_bad_values_stop_the_start(monkeypatch, call, value):
    monkeypatch.setenv("X", value)
    with pytest.raises(ImproperlyConfigured, match="X must"):
        call()
