"""The demos as .tile files (``tilemagic demo`` runs them, in the order of ``tilemagic.cli.DEMOS``)."""
