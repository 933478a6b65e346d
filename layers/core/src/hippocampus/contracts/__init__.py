"""Contracts: what every other layer agrees on — models, limits, errors, ports, names, routes, prompt format.

Nothing here talks to AWS, reads the environment or holds logic beyond validation.
"""
