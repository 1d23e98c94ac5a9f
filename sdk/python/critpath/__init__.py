"""critpath: full-system critical-path analysis. The annotation SDK is
:mod:`critpath.sdk`."""
