"""Side-by-side throughput benchmarks of the verifier (run: python -m benchmarks.run)."""
