"""sepp's protocol (package sepp.v1), generated from proto/ by scripts/gen_stubs.py. Do not edit.

The client (`sepp.Client`, `sepp.Worker`) wraps these; import them only to
speak the protocol directly.
"""
