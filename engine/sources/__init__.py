"""Where a model's bytes come from: local files, HTTP(S) servers, the Hugging Face Hub, downloads.

Every reader takes a ``byte_source.ByteSource`` and never a path, so formats, limits and changed-file
checks are written once and work the same on a local file (``local.MappedFile``) and a remote one
(``http.RemoteFile``, by byte ranges). ``locations`` says what a user's text names (a path or a URL);
``hub`` decides where a Hub token may go; ``downloads`` reports progress to whoever watches.

This package sits below formats and imports nothing above it (no store, no format): the package itself
holds only the streaming chunk size, so importing a location costs nothing else.
"""

CHUNK = 16 << 20  # bytes moved at a time when streaming a tensor
