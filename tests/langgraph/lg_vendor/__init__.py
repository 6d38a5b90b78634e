"""An entrypoint from another package than the apps' (as a library would ship one)."""
