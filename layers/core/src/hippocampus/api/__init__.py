"""API: the Powertools resolver, error envelope, path and header parameters, routes, direct invoke, OpenAPI."""
