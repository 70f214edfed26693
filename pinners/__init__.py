"""bundlekit's built-in pinners.

Each module here is one publisher backend. They are found through the
``bundlekit.pinners`` entry-point group declared in ``pyproject.toml``,
exactly as a third-party pinner would be, never imported by name.
"""
