"""A file the app built for one user to download, kept on disk rather than in the session."""

from __future__ import annotations

import os
import tempfile
import weakref
from pathlib import Path


class BuiltFile:
    """A new, empty temporary file, removed when this object is dropped.

    Kept in a session's state, the object lives as long as the session keeps it: building
    another file in its place, or the session ending, drops it and the file goes; so does the
    server's exit. The session holds a path, not the file's bytes: a training file of 200,000
    units is about 400 MB, read from disk only when the user clicks the download. Give a download
    button ``built.path.read_bytes``, not a method of this object, so that the button's deferred
    data does not keep the file past the session's own reference.
    """

    def __init__(self, suffix: str) -> None:
        handle, name = tempfile.mkstemp(prefix="critiquelab-", suffix=suffix)
        os.close(handle)
        self.path = Path(name)
        self._remove = weakref.finalize(self, self.path.unlink, missing_ok=True)

    def remove(self) -> None:
        """Remove the file now (also done when the object is dropped)."""
        self._remove()
