"""calibcli: perplexity, calibration error and Brier score for language-model evaluation dumps."""


def __getattr__(name: str) -> str:
    # __version__ comes from the installed metadata, looked up only when asked for:
    # importlib.metadata costs tens of milliseconds that every run would otherwise pay.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("calibcli")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0+unknown"
    raise AttributeError(f"module 'calibcli' has no attribute {name!r}")
