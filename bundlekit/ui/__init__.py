"""The read-only browsing interface: ``bundlekit serve --ui`` and ``bundlekit open`` (specs/gateway.md).

``model`` reads bundles into page data (bounded), ``render`` turns untrusted
content into safe HTML (Jinja2, markdown-it-py: the optional extra
``bundlekit[ui]``), ``app`` answers the ``/ui/`` requests, ``open`` prepares
one bundle for ``bundlekit open``. Nothing is imported here, so importing this
package needs neither optional dependency; the CLI imports the submodules it
needs only when the interface is asked for.
"""

from __future__ import annotations

__all__: list[str] = []
