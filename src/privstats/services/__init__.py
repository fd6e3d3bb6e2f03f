"""Services: the parties of a deployment as HTTP processes (see the README's "Deploy" section)."""
