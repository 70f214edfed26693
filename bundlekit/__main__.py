"""``python -m bundlekit`` runs the CLI."""

from bundlekit.cli import main

main()
