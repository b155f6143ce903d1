"""calibcli: perplexity, calibration error and Brier score for language-model evaluation dumps."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("calibcli")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"
