"""The seed demos as .tile files (``tilemagic demo``)."""
