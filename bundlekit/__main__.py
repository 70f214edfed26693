"""``python -m bundlekit`` runs the CLI: one command, then the process ends. Its modules are imported with the
collector paused and kept for life (``_gcpause``): no collection walks what they made (issue 37)."""

from bundlekit._gcpause import gc_paused, keep_for_life

with gc_paused():
    from bundlekit.cli import main

    keep_for_life()

main()
