"""Events: committed changes of the memory published on EventBridge (docs/architecture.md "Events")."""
