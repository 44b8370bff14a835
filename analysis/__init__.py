"""Static analysis of model source and bytecode (torch-free).

:mod:`analysis.sites` holds the call-site key type shared with the runtime capture.
"""
