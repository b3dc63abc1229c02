"""The IR (``nodes``) and its TIR-like printer (``printer``)."""
