"""`python -m analysis ...` keeps working: the analysis lives in swarmbench.analysis."""
