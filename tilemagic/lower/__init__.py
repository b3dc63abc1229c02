"""Dispatch and lowering: typed program -> dispatched ops -> IR kernel."""
