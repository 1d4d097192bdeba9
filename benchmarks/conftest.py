# The files here are benchmarks that print figures (run them with `make bench` or
# benchmarks/run_all.py), not tests: pytest must never collect or run them.
collect_ignore_glob = ["*.py"]
