"""One module per view of the page; each view is a ``pn.viewable.Viewer`` that reads a shared state."""
