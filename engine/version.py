"""The release this engine is (pyproject.toml's ``version``): what exports record and servers are told."""

__version__ = "0.1.0"
