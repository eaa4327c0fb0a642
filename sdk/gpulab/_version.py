"""The SDK's version, written once (sdk/pyproject.toml) and read from the installed package's metadata."""

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("gpulab")
except PackageNotFoundError:  # run from a source tree without installing it
    VERSION = "0+unknown"
