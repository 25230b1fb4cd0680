"""The benchmarks: scripts run from the repository root as ``python -m benchmarks.<name>`` (see README.md here);
:mod:`benchmarks.common` holds what they share."""
