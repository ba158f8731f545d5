"""Benchmarking: experiments across configurations, their cost, and the decision which one to use."""
