"""CritiqueLab's tests (a regular package, so that no installed top-level ``tests`` package, as
ppi-python ships one, can shadow it)."""
